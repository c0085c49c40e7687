#include <gidpolicy/fakes/fake_c_core.hpp>

#include <endian.h>
#include <net/if.h>

#include <algorithm>
#include <cstdio>
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
/// with memcpy only, whatever its alignment and stride. ndev_ifindex is the table's ifindex when
/// it gives one; when it names the netdev only (the usual table: JSON, show_gids, sysfs), it is
/// that netdev's ifindex in the caller's network namespace now, as the kernel reports the bound
/// netdev's ifindex; 0 (none) when no netdev of that name is there.
ibv_gid_entry abi_entry(const GidEntry& e, std::uint32_t port, LinkLayer link_layer) {
  ibv_gid_entry out;
  std::memset(&out, 0, sizeof out);
  e.gid.copy_to(out.gid.raw);
  out.gid_index = e.index;
  out.port_num = port;
  out.gid_type = abi_gid_type(e.type, link_layer);
  out.ndev_ifindex = e.ifindex;
  if (out.ndev_ifindex == 0 && !e.netdev.empty() && e.netdev.size() < IF_NAMESIZE)
    out.ndev_ifindex = ::if_nametoindex(e.netdev.c_str());
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

void describe_device(const FakeVerbs& model, const std::string& name, int index, ibv_device* out) {
  bool thunderbolt = false;
  for (std::uint32_t port = 1; port <= 255 && !thunderbolt; ++port)  // verbs ports are 8-bit
    if (auto t = model.table(name, port))
      thunderbolt = t.value().port().link_layer.kind() == LinkLayer::Kind::thunderbolt;
  std::memset(out, 0, sizeof *out);
  out->node_type = IBV_NODE_CA;
  // 100 is outside the C++ enum's value range: stored as the int the C ABI holds there.
  static_assert(sizeof(ibv_transport_type) == sizeof(int));
  const int transport = thunderbolt ? 100 : static_cast<int>(IBV_TRANSPORT_IB);
  std::memcpy(&out->transport_type, &transport, sizeof transport);
  std::snprintf(out->name, sizeof out->name, "%s", name.c_str());
  std::snprintf(out->dev_name, sizeof out->dev_name, "uverbs%d", index);
}

int query_port(FakeVerbs& model, DeviceHandle device, std::uint32_t port, ibv_port_attr* attr,
               std::string* why) {
  if (!attr) {
    set_why(why, "no attribute buffer");
    return EINVAL;
  }
  auto p = model.port_attributes(device, port);
  if (!p) {
    set_why(why, p.error().what());
    return to_errno(p.error());
  }
  const PortInfo& info = p.value();
  std::uint32_t len = info.gid_tbl_len.value_or(0);
  if (!info.gid_tbl_len)
    if (auto name = model.device_name(device))
      if (auto t = model.table(name.value(), port)) len = t.value().length();
  ibv_port_attr a;
  std::memset(&a, 0, sizeof a);
  a.state = static_cast<ibv_port_state>(static_cast<int>(info.state));
  a.active_mtu = static_cast<ibv_mtu>(static_cast<int>(info.active_mtu));
  a.max_mtu = a.active_mtu;
  a.gid_tbl_len = static_cast<int>(std::min<std::uint32_t>(len, 0x7fffffffu));
  a.port_cap_flags = info.link_layer.kind() == LinkLayer::Kind::infiniband
                         ? 0u
                         : static_cast<std::uint32_t>(IBV_PORT_IP_BASED_GIDS);
  a.max_msg_sz = kMaxMessageSize;
  a.pkey_tbl_len = static_cast<std::uint16_t>(FakeVerbs::kPkeyTableLength);
  a.lid = info.lid;
  a.max_vl_num = 1;
  const LinkRate rate = info.link_rate.value_or(kDefaultLinkRate);
  a.active_width = rate.width;
  a.active_speed = rate.speed;
  const bool link_up = info.state == PortState::init || info.state == PortState::armed ||
                       info.state == PortState::active || info.state == PortState::active_defer;
  a.phys_state = static_cast<std::uint8_t>(link_up ? 5 : 3);  // LinkUp / Disabled
  // link_layer is a uint8_t: Thunderbolt's 100 fits; an unknown raw value above 255 reads as 0.
  a.link_layer = static_cast<std::uint8_t>(info.link_layer.raw() > 0xff ? 0 : info.link_layer.raw());
  std::memcpy(attr, &a, sizeof a);
  return 0;
}

int query_device(FakeVerbs& model, DeviceHandle device, const DeviceLimits& lim, std::uint64_t node_guid,
                 unsigned phys_port_cnt, ibv_device_attr* attr, std::string* why) {
  if (!attr) {
    set_why(why, "no attribute buffer");
    return EINVAL;
  }
  auto name = model.device_name(device);
  if (!name) {
    set_why(why, name.error().what());
    return to_errno(name.error());
  }
  unsigned max_qp = lim.max_qp;
  if (auto p = model.driver_model(name.value()); p && p.value().max_qps_per_device != 0)
    max_qp = std::min(max_qp, p.value().max_qps_per_device);
  ibv_device_attr a;
  std::memset(&a, 0, sizeof a);
  std::snprintf(a.fw_ver, sizeof a.fw_ver, "%s", "0.0.0");
  a.node_guid = htobe64(node_guid);
  a.sys_image_guid = htobe64(node_guid);
  a.max_mr_size = ~0ull;
  a.page_size_cap = 0x1000;
  a.max_qp = static_cast<int>(max_qp);
  a.max_qp_wr = static_cast<int>(lim.max_qp_wr);
  a.max_sge = static_cast<int>(lim.max_sge);
  a.max_cq = static_cast<int>(lim.max_cq);
  a.max_cqe = static_cast<int>(lim.max_cqe);
  a.max_mr = static_cast<int>(lim.max_mr);
  a.max_pd = static_cast<int>(lim.max_pd);
  a.max_qp_rd_atom = static_cast<int>(lim.max_rd_atom);
  a.max_qp_init_rd_atom = static_cast<int>(lim.max_rd_atom);
  a.max_res_rd_atom = static_cast<int>(lim.max_rd_atom * 1024);
  a.atomic_cap = IBV_ATOMIC_HCA;
  a.max_srq = static_cast<int>(lim.max_srq);
  a.max_srq_wr = static_cast<int>(lim.max_srq_wr);
  a.max_srq_sge = static_cast<int>(lim.max_srq_sge);
  a.max_ah = static_cast<int>(lim.max_ah);
  a.max_pkeys = static_cast<std::uint16_t>(lim.pkey_tbl_len);
  a.phys_port_cnt = static_cast<std::uint8_t>(std::min(phys_port_cnt, 255u));
  std::memcpy(attr, &a, sizeof a);
  return 0;
}

int check_create_qp(const ibv_qp_init_attr* attr, const QpObjects& objects, const DeviceLimits& lim,
                    unsigned qps_in_use, QpKind* kind, std::string* why) {
  if (!attr) {
    set_why(why, "no attributes");
    return EINVAL;
  }
  if (!objects.send_cq || !objects.recv_cq) {
    set_why(why, "send or receive CQ missing or of another context");
    return EINVAL;
  }
  const auto k = verbs::qp_kind_from_ibv(attr->qp_type);
  if (!k) {
    set_why(why, "qp_type " + std::to_string(static_cast<int>(attr->qp_type)) +
                     ": the fake models RC, UC and UD queue pairs");
    return EOPNOTSUPP;
  }
  if (attr->srq && (!objects.srq || *k == QpKind::ud)) {
    set_why(why, "the SRQ does not exist, is of another context, or the QP is UD");
    return EINVAL;
  }
  const ibv_qp_cap& cap = attr->cap;
  if (cap.max_send_wr > lim.max_qp_wr || cap.max_recv_wr > lim.max_qp_wr || cap.max_send_sge > lim.max_sge ||
      cap.max_recv_sge > lim.max_sge || cap.max_inline_data > lim.max_inline) {
    set_why(why, "capabilities above the device's (" + std::to_string(lim.max_qp_wr) + " WRs, " +
                     std::to_string(lim.max_sge) + " SGEs, " + std::to_string(lim.max_inline) +
                     " inline bytes)");
    return EINVAL;
  }
  if (qps_in_use >= lim.max_qp) {
    set_why(why, "the device's limit of " + std::to_string(lim.max_qp) +
                     " queue pairs (ibv_query_device) is reached");
    return ENOMEM;
  }
  *kind = *k;
  return 0;
}

int create_qp(FakeVerbs& model, DeviceHandle device, QpKind kind, QpHandle* out, std::string* why) {
  auto h = model.create_qp(device, kind);
  if (!h) {
    set_why(why, h.error().what());
    return to_errno(h.error());  // Apple: EOPNOTSUPP (102) for RC, EBUSY past its QP ceiling
  }
  *out = h.value();
  return 0;
}

int query_qp(FakeVerbs& model, QpHandle qp, const ibv_qp_init_attr& created, ibv_qp_attr* attr,
             ibv_qp_init_attr* init_attr, std::string* why) {
  if (!attr || !init_attr) {
    set_why(why, !attr ? "no attribute buffer" : "no init_attr buffer");
    return EINVAL;
  }
  auto info = model.query_qp(qp);
  if (!info) {
    set_why(why, info.error().what());
    return to_errno(info.error());
  }
  ibv_qp_attr a = info.value().attr;
  a.qp_state = info.value().state;
  a.cur_qp_state = info.value().state;
  a.cap = created.cap;
  std::memcpy(attr, &a, sizeof a);
  std::memcpy(init_attr, &created, sizeof created);
  return 0;
}

int modify_qp(FakeVerbs& model, QpHandle qp, const ibv_qp_attr* attr, int mask, std::string* why) {
  if (!attr) {
    set_why(why, "no attribute buffer");
    return EINVAL;
  }
  auto r = model.modify_qp(qp, *attr, mask);
  if (!r) {
    set_why(why, r.error().what());
    return to_errno(r.error());
  }
  return 0;
}

}  // namespace gidpolicy::fakes::c_core
