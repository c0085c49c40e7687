#include <gidpolicy/policies/libfabric.hpp>
#include <gidpolicy/stack_table.hpp>

#include "stack_common.hpp"

#include <algorithm>

namespace gidpolicy {

std::string Libfabric::spec() const {
  if (msg) return "libfabric:ep=msg," + msg->spec().substr(std::string_view("rdma_cm:").size());
  return gid_idx == 0 ? std::string("libfabric") : "libfabric:gid_idx=" + std::to_string(gid_idx);
}

result<AnyPolicy> Libfabric::from_options(const SpecOptions& opts) {
  Libfabric l;
  bool is_msg = false;
  const SpecOption* idx = nullptr;
  const SpecOption* addr = nullptr;
  RdmaCm cm;
  for (const SpecOption& o : opts) {
    if (o.key == "ep") {
      GIDPOLICY_TRY(v, opts.value(o, "ud or msg"));
      if (v != "ud" && v != "msg") return fail(opts.bad_value(o, "ud or msg"));
      is_msg = v == "msg";
    } else if (o.key == "gid_idx") {
      GIDPOLICY_TRY(v, opts.integer(o, 0, 255, "an index"));
      l.gid_idx = static_cast<std::uint32_t>(v);
      idx = &o;
    } else {
      if (!addr) addr = &o;
      GIDPOLICY_TRYV(cm.read_option(opts, o));
    }
  }
  if (is_msg) {
    if (idx)
      return fail(opts.bad_key(*idx, "no gid_idx with ep=msg (" + std::string(stack_vars::kFiVerbsGidIdx) +
                                         " is for UD endpoints only)"));
    if (cm.local.has_value() == cm.peer.has_value())
      return fail(
          opts.missing("exactly one of 'local=ADDR' or 'peer=ADDR' (MSG endpoints go through rdma_cm)"));
    l.msg = cm;
  } else if (addr) {
    return fail(opts.bad_key(*addr, "ep=msg first (UD endpoints route from " +
                                        std::string(stack_vars::kFiVerbsGidIdx) + ", not an address)"));
  }
  return AnyPolicy(l);
}

result<Selection> Libfabric::select(const GidTable& table, SelectOptions run) const {
  if (msg) return msg->select(table, run);
  return detail::traced([this] { return spec(); }, run, false,
                        [&](detail::Recorder& rec) -> result<Selection> {
                          return detail::pinned_index(table, gid_idx, rec, [this] {
                            return std::string(stack_vars::kFiVerbsGidIdx) + "=" + std::to_string(gid_idx) +
                                   (gid_idx == 0 ? " (the default: no automatic choice)" : "");
                          });
                        });
}

std::vector<PeerAddress> Libfabric::peers() const {
  // MSG endpoints resolve through rdma_cm, which needs the route as much as auto:peer= does.
  if (msg) return msg->peers();
  return {};
}

bool Libfabric::takes_peer(const SpecOptions& options) {
  const bool msg = std::any_of(options.begin(), options.end(),
                               [](const SpecOption& o) { return o.key == "ep" && o.value == "msg"; });
  return msg && RdmaCm::takes_peer(options);
}

}  // namespace gidpolicy
