#include <gidpolicy/fakes/fake_c_core.hpp>

#include <algorithm>
#include <cstring>
#include <map>

namespace gidpolicy::fakes::c_core {
namespace {

void set_why(std::string* why, std::string text) {
  if (why) *why = std::move(text);
}

/// The link layer of a port as the model holds it now (Ethernet when it is not known: the
/// kernel's default for a RoCE device).
LinkLayer link_layer_of(const FakeVerbs& model, DeviceHandle device, std::uint32_t port) {
  auto name = model.device_name(device);
  if (!name) return LinkLayer::ethernet();
  auto table = model.table(name.value(), port);
  return table ? table.value().port().link_layer : LinkLayer::ethernet();
}

/// The ABI entry for a model entry, built in a local struct: the caller's buffer is written
/// with memcpy only, whatever its alignment and stride.
ibv_gid_entry abi_entry(const GidEntry& e, std::uint32_t port, LinkLayer link_layer) {
  ibv_gid_entry out;
  std::memset(&out, 0, sizeof out);
  e.gid.copy_to(out.gid.raw);
  out.gid_index = e.index;
  out.port_num = port;
  out.gid_type = abi_gid_type(e.type, link_layer);
  out.ndev_ifindex = e.ifindex;
  return out;
}

/// Write `e` at `dst`, zeroing the caller's bytes past the struct (entry_size >= sizeof(e)).
void put_entry(void* dst, const ibv_gid_entry& e, std::size_t entry_size) {
  auto* bytes = static_cast<unsigned char*>(dst);
  std::memcpy(bytes, &e, sizeof e);
  if (entry_size > sizeof e) std::memset(bytes + sizeof e, 0, entry_size - sizeof e);
}

}  // namespace

int to_errno(const Error& e) noexcept {
  if (e.code.category() == std::generic_category() || e.code.category() == std::system_category())
    return e.code.value() != 0 ? e.code.value() : EIO;
  if (e.code == errc::device_not_found || e.code == errc::no_devices) return ENODEV;
  if (e.code == errc::not_supported) return EOPNOTSUPP;
  const std::error_condition cond = e.code.default_error_condition();
  if (cond.category() == std::generic_category() && cond.value() != 0) return cond.value();
  return EINVAL;
}

std::uint32_t abi_gid_type(GidType type, LinkLayer link_layer) noexcept {
  if (type == GidType::roce_v2) return IBV_GID_TYPE_ROCE_V2;
  return link_layer.kind() == LinkLayer::Kind::ethernet ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_IB;
}

int query_gid(FakeVerbs& model, DeviceHandle device, std::uint32_t port, int index, ibv_gid* gid,
              std::string* why) {
  if (!gid || index < 0) {
    set_why(why, !gid ? "no GID buffer" : "a negative index");
    return EINVAL;
  }
  auto g = model.read_gid(device, port, static_cast<std::uint32_t>(index));
  if (!g) {
    set_why(why, g.error().what());
    return to_errno(g.error());
  }
  g.value().copy_to(gid->raw);
  return 0;
}

int query_gid_ex(FakeVerbs& model, DeviceHandle device, std::uint32_t port, std::uint32_t index,
                 ibv_gid_entry* entry, std::uint32_t flags, std::size_t entry_size, std::string* why) {
  if (!entry || entry_size < sizeof(ibv_gid_entry)) {
    set_why(why, !entry
                     ? "no entry buffer"
                     : "entry_size " + std::to_string(entry_size) + " is below sizeof(struct ibv_gid_entry)");
    return EINVAL;
  }
  if (flags != 0) {
    set_why(why, "flags " + std::to_string(flags) + ": no flag is defined");
    return EINVAL;
  }
  auto e = model.read_gid_entry(device, port, index);
  if (!e) {
    set_why(why, e.error().what());
    return to_errno(e.error());  // ENODATA for an empty slot
  }
  put_entry(entry, abi_entry(e.value(), port, link_layer_of(model, device, port)), entry_size);
  return 0;
}

ssize_t query_gid_table(FakeVerbs& model, DeviceHandle device, ibv_gid_entry* entries,
                        std::size_t max_entries, std::uint32_t flags, std::size_t entry_size,
                        std::string* why) {
  if (!entries || max_entries == 0 || entry_size < sizeof(ibv_gid_entry)) {
    set_why(why, !entries || max_entries == 0
                     ? "no entry buffer"
                     : "entry_size " + std::to_string(entry_size) + " is below sizeof(struct ibv_gid_entry)");
    return -EINVAL;
  }
  if (flags != 0) {
    set_why(why, "flags " + std::to_string(flags) + ": no flag is defined");
    return -EINVAL;
  }
  const auto max32 = static_cast<std::uint32_t>(std::min<std::size_t>(max_entries, 0xffffffffu));
  auto rows = model.read_gid_table(device, max32);
  if (!rows) {
    set_why(why, rows.error().what());
    return -static_cast<ssize_t>(to_errno(rows.error()));  // EINVAL: the buffer is too small
  }
  std::map<std::uint32_t, LinkLayer> link_layers;
  auto* out = reinterpret_cast<unsigned char*>(entries);  // the caller's stride, in bytes
  for (std::size_t i = 0; i < rows.value().size(); ++i) {
    const verbs::GidTableRow& row = rows.value()[i];
    auto ll = link_layers.find(row.port);
    if (ll == link_layers.end())
      ll = link_layers.emplace(row.port, link_layer_of(model, device, row.port)).first;
    put_entry(out + i * entry_size, abi_entry(row.entry, row.port, ll->second), entry_size);
  }
  return static_cast<ssize_t>(rows.value().size());
}

int query_gid_type(FakeVerbs& model, DeviceHandle device, std::uint32_t port, std::uint32_t index, int* type,
                   std::string* why) {
  if (!type) {
    set_why(why, "no type buffer");
    return EINVAL;
  }
  auto e = model.read_gid_entry(device, port, index);
  if (!e) {
    const int err = to_errno(e.error());
    if (err == ENODATA) {
      *type = kGidTypeSysfsIbRoceV1;  // rdma-core keeps the old API: an empty slot is v1, success
      return 0;
    }
    set_why(why, e.error().what());
    return err;
  }
  // rdma-core derives it from the sysfs type: "RoCE v2", or "IB/RoCE v1" for everything else.
  *type = e.value().type == GidType::roce_v2 ? kGidTypeSysfsRoceV2 : kGidTypeSysfsIbRoceV1;
  return 0;
}

}  // namespace gidpolicy::fakes::c_core
