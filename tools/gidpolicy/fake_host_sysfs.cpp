// The fake host's sysfs view: what `convert --to sysfs` writes, plus the attributes the
// middleware reads that a GID table does not hold, with the values the fake libibverbs answers
// through verbs for the same things (so a program that reads both sees one device).
//
// Who reads what (Debian 12: UCX 1.13, libfabric 1.17, rdma-core 44):
//  * UCX reads every GID's type from gid_attrs/types/<i> (never through verbs; a missing file is
//    RoCE v1), the netdev from gid_attrs/ndevs/<i>, and the device's locality from
//    device/local_cpus and device/numa_node.
//  * rdma-core's tools and libfabric read node_guid, node_type, the port's state, phys_state,
//    rate, lid, cap_mask and the pkeys.
//  * infiniband_verbs/uverbsN names the device's uverbs character device (ibdev, dev).
#include "fake_host.hpp"

#include <gidpolicy/formats/sysfs.hpp>
#if GIDPOLICY_CLI_HAVE_FAKES
#include <gidpolicy/fakes/fake_c_core.hpp>
#endif

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

namespace gidpolicy::cli::fake_host {

namespace fs = std::filesystem;

#if GIDPOLICY_CLI_HAVE_FAKES
static_assert(kFakeLinkRate == fakes::c_core::kDefaultLinkRate,
              "the fake host's rate files must say what the fake's ibv_query_port says");
#endif

namespace {

result<void> put(const fs::path& p, const std::string& content) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  if (ec) return fail(Error(ec, p.parent_path().string() + ": cannot create the directory"));
  errno = 0;
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << content;
  f.close();
  if (!f) return fail_errno(errno ? errno : EIO, p.string() + ": cannot write");
  return success();
}

// The fake libibverbs' node GUID for a device (library.cpp device_guid): the interface id of
// its first link-local GID, else a locally administered value hashed from the name.
std::uint64_t node_guid(const std::vector<GidTable>& tables, const std::string& name) {
  for (const GidTable& t : tables) {
    if (t.port().device != name) continue;
    for (const GidEntry& e : t)
      if (e.usable() && e.gid.is_link_local() && e.gid.interface_id() != 0) return e.gid.interface_id();
  }
  std::uint64_t h = 1469598103934665603ull;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return (h & ~0x0100000000000000ull) | 0x0200000000000000ull;
}

std::string guid_text(std::uint64_t g) {
  char b[32];
  std::snprintf(b, sizeof b, "%04x:%04x:%04x:%04x\n", unsigned(g >> 48) & 0xffff, unsigned(g >> 32) & 0xffff,
                unsigned(g >> 16) & 0xffff, unsigned(g) & 0xffff);
  return b;
}

// The kernel's cpumask text: 32-bit hex words, most significant first, comma-separated.
std::string cpumask_text() {
  long n = ::sysconf(_SC_NPROCESSORS_CONF);
  if (n < 1) n = 1;
  if (n > 4096) n = 4096;
  const auto cpus = static_cast<unsigned>(n);
  std::string out;
  for (unsigned w = (cpus + 31) / 32; w-- > 0;) {
    std::uint32_t bits = 0;
    for (unsigned b = 0; b < 32; ++b)
      if (w * 32 + b < cpus) bits |= 1u << b;
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", bits);
    if (!out.empty()) out += ',';
    out += buf;
  }
  return out + "\n";
}

const char* phys_state_text(PortState s) {
  // The fake's ibv_query_port: a port past DOWN has a trained link (LinkUp), DOWN is Disabled.
  return s == PortState::down || s == PortState::nop ? "3: Disabled\n" : "5: LinkUp\n";
}

}  // namespace

std::vector<std::string> device_order(const std::vector<GidTable>& tables) {
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const GidTable& t : tables)
    if (seen.insert(t.port().device).second) order.push_back(t.port().device);
  return order;
}

result<void> write_class_tree(const std::vector<GidTable>& tables, const fs::path& class_dir) {
  const fs::path ib = class_dir / "infiniband";
  // Each port's rate file says what the fake's ibv_query_port says: the table's link width and
  // speed, else the fake's default.
  std::vector<GidTable> rated;
  rated.reserve(tables.size());
  for (const GidTable& t : tables) {
    PortInfo p = t.port();
    if (!p.link_rate || !p.link_rate->known()) p.link_rate = kFakeLinkRate;
    auto r = GidTable::make(std::move(p), std::vector<GidEntry>(t.begin(), t.end()), t.holes());
    if (!r) return fail(r.error());
    rated.push_back(std::move(r).value());
  }
  GIDPOLICY_TRYV(formats::write_sysfs(rated, ib));
  const std::string cpus = cpumask_text();
  // numa_node: 0 where the machine has NUMA node 0 (a PCI device sits on one), -1 otherwise, as
  // the kernel reports a device without NUMA affinity.
  std::error_code ec;
  const std::string numa = fs::exists("/sys/devices/system/node/node0", ec) ? "0\n" : "-1\n";
  const std::vector<std::string> order = device_order(tables);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::string& name = order[i];
    const fs::path dev = ib / name;
    GIDPOLICY_TRYV(put(dev / "node_guid", guid_text(node_guid(tables, name))));
    GIDPOLICY_TRYV(put(dev / "sys_image_guid", guid_text(node_guid(tables, name))));
    GIDPOLICY_TRYV(put(dev / "node_type", "1: CA\n"));
    GIDPOLICY_TRYV(put(dev / "node_desc", "gidpolicy fake host " + name + "\n"));
    GIDPOLICY_TRYV(put(dev / "fw_ver", "0.0.0\n"));
    GIDPOLICY_TRYV(put(dev / "hca_type", "gidpolicy-fake\n"));
    GIDPOLICY_TRYV(put(dev / "board_id", "gidpolicy-fake\n"));
    GIDPOLICY_TRYV(put(dev / "device" / "numa_node", numa));
    GIDPOLICY_TRYV(put(dev / "device" / "local_cpus", cpus));
    const std::string uverbs = "uverbs" + std::to_string(i);
    const fs::path uv = class_dir / "infiniband_verbs" / uverbs;
    GIDPOLICY_TRYV(put(uv / "ibdev", name + "\n"));
    GIDPOLICY_TRYV(put(uv / "abi_version", "1\n"));
    // The uverbs character device's number, as the kernel allocates it (major 231, from 192).
    GIDPOLICY_TRYV(put(uv / "dev", "231:" + std::to_string(192 + i) + "\n"));
  }
  GIDPOLICY_TRYV(put(class_dir / "infiniband_verbs" / "abi_version", "6\n"));
  for (const GidTable& t : tables) {
    const PortInfo& p = t.port();
    const fs::path port = ib / p.device / "ports" / std::to_string(p.port);
    GIDPOLICY_TRYV(put(port / "phys_state", phys_state_text(p.state)));
    const bool ib_link = p.link_layer.kind() == LinkLayer::Kind::infiniband;
    // IBV_PORT_IP_BASED_GIDS (bit 26) on every port that is not InfiniBand, as query_port says.
    GIDPOLICY_TRYV(put(port / "cap_mask", ib_link ? "0x00000000\n" : "0x04000000\n"));
    GIDPOLICY_TRYV(put(port / "lid_mask_count", "0\n"));
    GIDPOLICY_TRYV(put(port / "sm_lid", "0x0\n"));
    GIDPOLICY_TRYV(put(port / "sm_sl", "0\n"));
    GIDPOLICY_TRYV(put(port / "pkeys" / "0", "0xffff\n"));
  }
  return success();
}

result<void> sync_tree(const fs::path& staged, const fs::path& live) {
  std::error_code ec;
  // Pass 1: every directory and file of the staged tree into place. Listed first: renaming
  // entries out of a directory while reading it can make readdir skip some.
  std::vector<std::pair<fs::path, bool>> entries;  // relative path, is a directory
  for (auto it = fs::recursive_directory_iterator(staged, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto st = it->symlink_status(ec);
    if (ec) break;
    entries.emplace_back(it->path().lexically_relative(staged), fs::is_directory(st));
  }
  if (ec) return fail(Error(ec, staged.string() + ": cannot read the new sysfs view"));
  std::vector<fs::path> staged_rel;
  for (const auto& [rel, is_dir] : entries) {
    staged_rel.push_back(rel);
    const fs::path dst = live / rel;
    if (is_dir) {
      if (!fs::is_directory(fs::symlink_status(dst, ec))) {
        fs::remove_all(dst, ec);
        fs::create_directory(dst, ec);
      }
      continue;
    }
    // rename() replaces the destination in one step: a reader opens the old file or the new one.
    const fs::path src = staged / rel;
    if (::rename(src.c_str(), dst.c_str()) != 0)
      return fail_errno(errno, dst.string() + ": cannot update the sysfs view");
  }
  // Pass 2: what the new tree no longer has (the type and netdev of a slot that became empty).
  const std::set<fs::path> keep(staged_rel.begin(), staged_rel.end());
  std::vector<fs::path> gone;
  for (auto it = fs::recursive_directory_iterator(live, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(live);
    if (!keep.count(rel)) {
      gone.push_back(it->path());
      if (it->is_directory()) it.disable_recursion_pending();
    }
  }
  if (ec) return fail(Error(ec, live.string() + ": cannot read the sysfs view"));
  for (const fs::path& p : gone) fs::remove_all(p, ec);
  return success();
}

}  // namespace gidpolicy::cli::fake_host
