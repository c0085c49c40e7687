// Fuzz the C API's entry points the way a C caller drives them: the input is split into a
// policy spec and a JSON table; parse both, select, fill RTR attributes, explain an errno, with
// small caller-owned buffers (truncation must be safe). Never crash, never leak.
#include <gidpolicy/gidpolicy.h>

#include <infiniband/verbs.h>

#include <cstdint>
#include <cstring>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  auto nl = input.find('\n');
  std::string spec = input.substr(0, nl);
  std::string json = nl == std::string::npos ? std::string() : input.substr(nl + 1);
  char err[96];
  char small[7];
  std::uint8_t gid[16];
  (void)gidpolicy_gid_parse(spec.c_str(), gid, err, sizeof err);
  gidpolicy_policy* policy = nullptr;
  if (gidpolicy_policy_parse(spec.c_str(), &policy, err, sizeof err) != GIDPOLICY_OK) return 0;
  (void)gidpolicy_policy_spec(policy, small, sizeof small);
  gidpolicy_table* table = nullptr;
  if (gidpolicy_table_from_json(json.data(), json.size(), nullptr, 1, &table, err, sizeof err) ==
      GIDPOLICY_OK) {
    (void)gidpolicy_table_to_json(table, small, sizeof small);
    gidpolicy_selection* sel = nullptr;
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
      (void)gidpolicy_selection_trace(sel, small, sizeof small);
      (void)gidpolicy_selection_agreement(sel, small, sizeof small);
      (void)gidpolicy_explain_errno(static_cast<int>(size % 128), GIDPOLICY_PLATFORM_AUTO, sel, &peer, small,
                                    sizeof small);
      std::uint8_t adv[16];
      gidpolicy_selection_gid(sel, adv);
      (void)gidpolicy_preflight(table, gidpolicy_selection_sgid_index(sel), adv, err, sizeof err);
      gidpolicy_selection_free(sel);
    }
    gidpolicy_table_free(table);
  }
  gidpolicy_policy_free(policy);
  return 0;
}
