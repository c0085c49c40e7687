// Fuzz the C API's entry points the way a C caller drives them: the input is split into a
// policy spec and a JSON table; parse both, select, fill RTR attributes, explain an errno, with
// small caller-owned buffers (truncation must be safe). Then the same input drives a caller's
// function table (gidpolicy_verbs_fns) as a hostile driver: any gid_tbl_len (negative, huge),
// GIDs and errnos from the input bytes, through gidpolicy_snapshot() and
// gidpolicy_preflight_live_typed(). Never crash, never leak, never read without bound.
#include <gidpolicy/gidpolicy.h>

#include <infiniband/verbs.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The driver's answers, from the input bytes (set per run; libFuzzer runs one input at a time).
const std::uint8_t* g_data = nullptr;
std::size_t g_size = 0;
std::int32_t g_tbl_len = 0;
unsigned g_reads = 0;

std::uint8_t byte_at(std::size_t k) { return g_size ? g_data[k % g_size] : 0; }

int query_port(ibv_context*, std::uint8_t port, ibv_port_attr* attr) {
  std::memset(attr, 0, sizeof *attr);
  if (byte_at(port) == 0xee) {
    errno = EIO;
    return -1;
  }
  attr->state = static_cast<ibv_port_state>(byte_at(1) % 7);
  attr->link_layer = static_cast<std::uint8_t>(byte_at(2) % 4);
  attr->active_mtu = static_cast<ibv_mtu>(byte_at(3) % 7);
  attr->gid_tbl_len = g_tbl_len;
  return 0;
}

int query_gid(ibv_context*, std::uint8_t, int index, ibv_gid* gid) {
  ++g_reads;
  const auto i = static_cast<std::size_t>(index);
  if (byte_at(i * 17) == 0xfe) {
    errno = static_cast<int>(byte_at(i * 17 + 1) % 100);
    return -1;
  }
  for (std::size_t k = 0; k < 16; ++k) gid->raw[k] = byte_at(i * 17 + k + 1);
  return 0;
}

int query_gid_ex(ibv_context* ctx, std::uint32_t port, std::uint32_t index, ibv_gid_entry* entry,
                 std::uint32_t flags, std::size_t) {
  (void)flags;
  std::memset(entry, 0, sizeof *entry);
  if (byte_at(index * 17) == 0xfd) return ENODATA;
  if (query_gid(ctx, static_cast<std::uint8_t>(port), static_cast<int>(index), &entry->gid) != 0)
    return errno;
  entry->gid_index = index;
  entry->port_num = port;
  entry->gid_type = byte_at(index * 17 + 3) % 4;
  entry->ndev_ifindex = byte_at(index * 17 + 5);
  return 0;
}

void hostile_driver(const std::uint8_t* data, std::size_t size) {
  g_data = data;
  g_size = size;
  g_reads = 0;
  // Lengths a driver could report, hostile ones included: negative, 0, small, past 255, huge.
  std::int32_t raw = 0;
  if (size >= 4) std::memcpy(&raw, data + size - 4, 4);
  // (65536 itself is legal but 65,536 reads per run would starve the fuzzer; 65537 is the bound.)
  static constexpr std::int32_t kLengths[] = {-1, 0, 1, 8, 255, 256, 257, 1024, 65537, 100000000, INT32_MIN};
  g_tbl_len = (byte_at(0) & 1) ? kLengths[byte_at(4) % (sizeof kLengths / sizeof kLengths[0])] : raw;
  gidpolicy_verbs_fns fns;
  std::memset(&fns, 0, sizeof fns);
  fns.query_port = &query_port;
  fns.query_gid = (byte_at(5) & 1) ? &query_gid : nullptr;
  fns.query_gid_ex_sized = (byte_at(5) & 2) || !fns.query_gid ? &query_gid_ex : nullptr;
  ibv_context ctx;
  std::memset(&ctx, 0, sizeof ctx);
  char err[80];
  const unsigned flags = byte_at(6) & 0x1f;   // every flag, and one unknown bit
  const std::uint32_t port = byte_at(7) % 4;  // port 0 is invalid
  gidpolicy_table* table = nullptr;
  if (gidpolicy_snapshot(&fns, &ctx, port, flags, &table, err, sizeof err) == GIDPOLICY_OK) {
    // Bounded: at most what an sgid_index can reach, or the documented maximum when asked.
    const unsigned limit = (flags & GIDPOLICY_SNAPSHOT_WHOLE_TABLE) ? 65536u : 256u;
    if (g_tbl_len < 0 || g_tbl_len > 65536 || g_reads > limit) std::abort();
    gidpolicy_table_free(table);
  } else if (table != nullptr) {
    std::abort();
  }
  std::uint8_t advertised[16];
  for (std::size_t k = 0; k < 16; ++k) advertised[k] = byte_at(k + 8);
  (void)gidpolicy_preflight_live_typed(&fns, &ctx, port, byte_at(9) + (byte_at(10) & 1 ? 256u : 0u),
                                       advertised, static_cast<int>(byte_at(11) % 6) - 1, err, sizeof err);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hostile_driver(data, size);
  std::string input(reinterpret_cast<const char*>(data), size);
  auto nl = input.find('\n');
  std::string spec = input.substr(0, nl);
  std::string json = nl == std::string::npos ? std::string() : input.substr(nl + 1);
  char err[96];
  char small[7];
  std::uint8_t gid[16];
  (void)gidpolicy_gid_parse(spec.c_str(), gid, err, sizeof err);
  gidpolicy_profile* policy = nullptr;
  if (gidpolicy_profile_parse(spec.c_str(), &policy, err, sizeof err) != GIDPOLICY_OK) return 0;
  (void)gidpolicy_profile_spec(policy, small, sizeof small);
  gidpolicy_table* table = nullptr;
  if (gidpolicy_table_from_json(json.data(), json.size(), nullptr, 1, &table, err, sizeof err) ==
      GIDPOLICY_OK) {
    (void)gidpolicy_table_to_json(table, small, sizeof small);
    gidpolicy_plan* sel = nullptr;
    if (gidpolicy_select(policy, table, &sel, err, sizeof err) == GIDPOLICY_OK) {
      gidpolicy_peer peer;
      std::memset(&peer, 0, sizeof peer);
      peer.qpn = 0x1234;
      peer.psn = 7;
      std::memcpy(peer.gid, data, size < 16 ? size : 16);
      peer.mtu = static_cast<int>(size % 7);
      peer.gid_type = static_cast<int>(size % 5);
      ibv_qp_attr attr;
      int mask = 0;
      gidpolicy_rtr_options options;
      gidpolicy_rtr_options_init(&options);
      options.qp_type = size % 2 ? IBV_QPT_RC : IBV_QPT_UC;
      (void)gidpolicy_rtr_fill(sel, &peer, &options, &attr, &mask, err, sizeof err);
      (void)gidpolicy_plan_trace(sel, small, sizeof small);
      (void)gidpolicy_plan_agreement(sel, small, sizeof small);
      (void)gidpolicy_explain_errno(static_cast<int>(size % 128), GIDPOLICY_PLATFORM_AUTO, sel, &peer, small,
                                    sizeof small);
      std::uint8_t adv[16];
      gidpolicy_plan_gid(sel, adv);
      (void)gidpolicy_preflight(table, gidpolicy_plan_sgid_index(sel), adv, err, sizeof err);
      gidpolicy_plan_free(sel);
    }
    gidpolicy_table_free(table);
  }
  gidpolicy_profile_free(policy);
  return 0;
}
