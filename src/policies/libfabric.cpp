#include <gidpolicy/policies/libfabric.hpp>

#include "stack_options.hpp"

namespace gidpolicy {

std::string Libfabric::spec() const {
  if (msg) return "libfabric:ep=msg," + msg->spec().substr(std::string_view("rdma_cm:").size());
  return gid_idx == 0 ? std::string("libfabric") : "libfabric:gid_idx=" + std::to_string(gid_idx);
}

result<Libfabric> Libfabric::parse_options(std::string_view text, std::size_t base) {
  GIDPOLICY_TRY(opts, detail::split_stack_options("libfabric", text, base, "ep, gid_idx, local, peer, mode"));
  Libfabric l;
  bool is_msg = false;
  bool has_addr = false;
  std::optional<std::size_t> idx_pos;
  for (const auto& o : opts) {
    if (o.key == "ep") {
      GIDPOLICY_TRY(v, detail::stack_value(o, "ud or msg"));
      if (v != "ud" && v != "msg") return fail(detail::stack_option_error(o.value_pos, "ud or msg", v));
      is_msg = v == "msg";
    } else if (o.key == "gid_idx") {
      GIDPOLICY_TRY(v, detail::stack_integer(o, 0, 255));
      l.gid_idx = static_cast<std::uint32_t>(v);
      idx_pos = o.key_pos;
    } else {
      has_addr = true;
    }
  }
  if (is_msg) {
    if (idx_pos)
      return fail(detail::stack_option_error(*idx_pos, "no gid_idx with ep=msg (FI_VERBS_GID_IDX is for UD only)", "gid_idx"));
    // The address options, re-read by rdma_cm's own parser.
    std::string rest;
    std::size_t rest_base = base;
    for (const auto& o : opts) {
      if (o.key == "ep") continue;
      if (rest.empty()) rest_base = o.key_pos;
      rest += (rest.empty() ? "" : ",") + std::string(o.key) + (o.value ? "=" + std::string(*o.value) : "");
    }
    GIDPOLICY_TRY(r, RdmaCm::parse_options(rest, rest_base));
    l.msg = r;
  } else if (has_addr) {
    return fail(detail::stack_option_error(base, "ep=msg before local=/peer=/mode= (UD endpoints route from FI_VERBS_GID_IDX)", text));
  }
  return l;
}

result<Selection> Libfabric::select(const GidTable& table, SelectOptions run) const {
  if (msg) return msg->select(table, run);
  return detail::traced(
      [this] { return spec(); }, run, false, [&](detail::Recorder& rec) -> result<Selection> {
        return detail::pinned_index(table, gid_idx, rec,
                                    "FI_VERBS_GID_IDX=" + std::to_string(gid_idx) +
                                        (gid_idx == 0 ? " (the default: no automatic choice)" : ""));
      });
}

}  // namespace gidpolicy
