#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/policies/libfabric.hpp>
#include <gidpolicy/policies/mooncake.hpp>
#include <gidpolicy/policies/nccl.hpp>
#include <gidpolicy/policies/perftest.hpp>
#include <gidpolicy/policies/ucx.hpp>
#include <gidpolicy/stacks.hpp>

#include "describe.hpp"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace gidpolicy {

const std::vector<StackInfo>& stack_catalogue() {
  static const std::vector<StackInfo> kStacks{
      {StackId::nccl, "nccl", "NCCL >= 2.21.5",
       "src/transport/net_ib (ncclIbGetGidIndex, ncclUpdateGidIndex)", "NCCL_IB_GID_INDEX", "nccl", true},
      {StackId::nvshmem, "nvshmem", "NVSHMEM 3.x (NCCL's rule under NVSHMEM_IB_*)",
       "src/modules/transport/common (NCCL's GID selection, copied)", "NVSHMEM_IB_GID_INDEX", "nccl", true},
      {StackId::ucx, "ucx", "UCX 1.13.1 (Debian)", "src/uct/ib/base/ib_device.c (uct_ib_device_select_gid)",
       "UCX_IB_GID_INDEX", "ucx", true},
      {StackId::mooncake, "mooncake", "Mooncake Transfer Engine (main, 2026)",
       "mooncake-transfer-engine/src/transport/rdma_transport/rdma_context.cpp, src/config.cpp",
       "MC_GID_INDEX", "mooncake", true},
      {StackId::libfabric, "libfabric", "libfabric 1.17 verbs provider, UD endpoints (Debian)",
       "prov/verbs (FI_VERBS_GID_IDX)", "FI_VERBS_GID_IDX", "libfabric", true},
      {StackId::perftest, "perftest", "perftest 4.5 (Debian 4.5+0.17)",
       "src/perftest_resources.c (get_best_gid_index)", "", "perftest", false},
  };
  return kStacks;
}

const StackInfo* find_stack(std::string_view name) noexcept {
  for (const auto& s : stack_catalogue())
    if (s.name == name) return &s;
  return nullptr;
}

Profile stack_profile(StackId id, std::optional<std::int64_t> pinned) {
  const auto index = [&]() -> std::uint32_t { return static_cast<std::uint32_t>(*pinned); };
  switch (id) {
    case StackId::nccl:
    case StackId::nvshmem: {
      Nccl n;
      if (pinned) n.gid_index = *pinned;
      return {n, SourceIndex::selected()};
    }
    case StackId::ucx: {
      Ucx u;
      if (pinned && *pinned >= 0 && *pinned <= 255) u.gid_index = index();
      return {u, SourceIndex::selected()};
    }
    case StackId::mooncake: {
      Mooncake m;
      if (pinned) m.gid_index = *pinned;
      return {m, SourceIndex::selected()};
    }
    case StackId::libfabric: {
      Libfabric l;
      if (pinned && *pinned >= 0 && *pinned <= 255) l.gid_idx = index();
      return {l, SourceIndex::selected()};
    }
    case StackId::perftest: {
      Perftest p;
      if (pinned && *pinned >= 0 && *pinned <= 255) p.x = index();
      return {p, SourceIndex::selected()};
    }
  }
  return {};
}

namespace {

std::string last_word(const Trace& t) {
  for (const auto& a : t.attempts)
    for (const auto& s : a.steps)
      if (s.verdict == EntryVerdict::chosen) return s.note;
  return {};
}

std::string failure_outcome(const Error& e) {
  if (e.detail.find("rejects the port") != std::string::npos) return "rejects the port";
  if (e.detail.find("ENODEV") != std::string::npos) return "ENODEV (19) from rdma_cm";
  if (e.code == errc::entry_zero || e.detail.find("does not open the device") != std::string::npos)
    return "does not open the device";
  if (e.code == errc::entry_not_shown) return "unknown (the source did not print the slot)";
  return "fails: " + std::string(e.detail);
}

}  // namespace

StackPrediction predict_profile(const Profile& profile, const GidTable& table, const DriverModel& model) {
  StackPrediction out;
  auto good = profiles::automatic().plan(table);
  if (good) out.fix = good.value().sgid_index;
  auto plan = profile.plan(table, {.trace = true});
  if (!plan) {
    out.outcome = failure_outcome(plan.error());
    out.why = plan.error().detail;
    return out;
  }
  const Plan& p = plan.value();
  out.chose = true;
  out.index = p.sgid_index;
  out.gid = p.selection.entry.gid;
  out.why = last_word(p.selection.trace);
  PeerInfo peer;
  peer.qpn = 0x11;
  peer.psn = 7;
  peer.gid = good ? good.value().selection.entry.gid : p.selection.entry.gid;
  peer.mtu = table.port().active_mtu;
  const RtrPrediction pred = predict_rtr(table, p, peer, model);
  const RtrVerdict& v = pred.verdict;
  if (v.outcome == RtrOutcome::error) {
    out.err = v.err;
    out.outcome = v.to_string(model.platform);
  } else if (v.outcome == RtrOutcome::times_out || v.outcome == RtrOutcome::unknown) {
    out.outcome = v.to_string(model.platform);
  } else if (!pred.reaches_driver()) {
    out.outcome = "refused before modify_qp: " + pred.refused->detail;
  } else if (table.port().link_layer.is_ip_routed() && p.selection.entry.gid.is_link_local() &&
             !peer.gid.is_link_local()) {
    out.outcome = "times out: RTR passes, but a link-local source GID is not routed";
  } else {
    out.works = true;
    out.outcome = "ok";
  }
  if (out.works || (out.fix && *out.fix == out.index)) out.fix.reset();
  return out;
}

StackPrediction predict_stack(StackId id, const GidTable& table) {
  return predict_profile(stack_profile(id), table, DriverModel::for_link_layer(table.port().link_layer));
}

namespace {

// NCCL's ncclLoadParam: an unset or empty variable keeps the default; otherwise strtoll(str, 0, 0),
// whose failure to parse ("abc") is 0 without errno; only a range error (errno) keeps the default.
std::optional<std::int64_t> nccl_strtoll(std::string_view text, std::int64_t deflt) {
  if (text.empty()) return deflt;
  const std::string s(text);
  errno = 0;
  const long long v = std::strtoll(s.c_str(), nullptr, 0);
  if (errno != 0) return deflt;
  return static_cast<std::int64_t>(v);
}

}  // namespace

std::vector<PinReading> read_pin(std::string_view variable, std::string_view text, bool mc_gid_index_set) {
  std::vector<PinReading> out;
  const auto nccl_like = [&](StackId id, const std::string& who) {
    const auto v = nccl_strtoll(text, -1);
    const auto auto_or = [](std::optional<std::int64_t> x) -> std::optional<std::int64_t> {
      if (x && *x < 0) return std::nullopt;
      return x;
    };
    if (text.empty()) {
      out.push_back(
          {id, who + " >= 2.21.5 (an empty value keeps the default, -1: auto)", std::nullopt, false});
      out.push_back({id, who + " < 2.21.5 (an empty value keeps the default, 0)", std::int64_t{0}, false});
    } else {
      out.push_back({id, who + " (strtoll: \"" + std::string(text) + "\" is " + std::to_string(*v) + ")",
                     auto_or(v), false});
    }
  };
  const std::string value(text);
  if (variable == "NCCL_IB_GID_INDEX") {
    nccl_like(StackId::nccl, "NCCL");
    if (!mc_gid_index_set) {
      const auto m = mooncake_gid_setting(nullptr, value.c_str());
      const bool used = m && *m >= 0 && *m < 256;
      out.push_back({StackId::mooncake,
                     "Mooncake (MC_GID_INDEX unset: NCCL_IB_GID_INDEX through atoi, \"" + value + "\" is " +
                         std::to_string(*m) + (used ? ")" : ", outside 0..255: auto)"),
                     used ? m : std::nullopt, false});
    }
  } else if (variable == "NVSHMEM_IB_GID_INDEX") {
    // NVSHMEM's own environment parser: modelled as NCCL's (an empty value keeps the default);
    // not read from its source here.
    const auto v = nccl_strtoll(text, -1);
    out.push_back({StackId::nvshmem, "NVSHMEM 3.x (read as NCCL reads it: not verified)",
                   (v && *v >= 0) ? v : std::nullopt, false});
  } else if (variable == "UCX_IB_GID_INDEX") {
    // UCX's config parser: "auto", or an unsigned number; anything else (an empty value too) is a
    // configuration error and UCX does not start.
    if (text == "auto") {
      out.push_back({StackId::ucx, "UCX 1.13 (auto)", std::nullopt, false});
    } else {
      std::int64_t v = 0;
      bool ok = !text.empty() && text.size() <= 9;
      for (char c : text) ok = ok && c >= '0' && c <= '9';
      if (ok) v = std::strtoll(value.c_str(), nullptr, 10);
      out.push_back({StackId::ucx,
                     ok ? "UCX 1.13" : "UCX 1.13 (not \"auto\" nor a number: a configuration error)",
                     ok ? std::optional<std::int64_t>(v) : std::nullopt, !ok});
    }
  } else if (variable == "MC_GID_INDEX") {
    const auto m = mooncake_gid_setting(value.c_str(), nullptr);
    const bool used = *m >= 0 && *m < 256;
    out.push_back({StackId::mooncake,
                   "Mooncake (atoi: \"" + value + "\" is " + std::to_string(*m) +
                       (used ? ")" : ", outside 0..255: auto)"),
                   used ? m : std::nullopt, false});
  } else if (variable == "FI_VERBS_GID_IDX") {
    const auto v = nccl_strtoll(text, 0);
    out.push_back({StackId::libfabric,
                   "libfabric 1.17 (an integer parameter; an empty value is read as 0: not verified)",
                   v.value_or(0) >= 0 ? v : std::int64_t{0}, false});
  } else if (variable == "GGML_RDMA_GID") {
    // llama.cpp's RPC RDMA backend takes the index as given; its own default is not modelled,
    // so the pin is judged as an index used unchecked (libfabric's reading).
    const auto v = nccl_strtoll(text, 0);
    out.push_back(
        {StackId::libfabric, "llama.cpp GGML_RDMA_GID (an index used unchecked: not verified)", v, false});
  }
  return out;
}

std::string_view to_string(PinJudgement::Status s) noexcept {
  switch (s) {
    case PinJudgement::Status::fine:
      return "fine";
    case PinJudgement::Status::stale:
      return "stale";
    case PinJudgement::Status::fails:
      return "fails";
  }
  return "fails";
}

PinJudgement judge_pin(const PinReading& reading, const GidTable& table, const DriverModel& model) {
  PinJudgement j;
  const std::string where = detail::where(table);
  auto good = profiles::automatic().plan(table);
  if (good) j.right_index = good.value().sgid_index;
  const std::string right = good ? "; gidpolicy's auto picks index " + std::to_string(*j.right_index) + " (" +
                                       good.value().selection.entry.gid.to_string() + " " +
                                       std::string(to_string(good.value().selection.entry.type)) + ") now"
                                 : std::string("; gidpolicy's auto finds no usable entry there either");
  if (reading.refused) {
    j.status = PinJudgement::Status::fails;
    j.summary = "fails: " + reading.reader + right;
    return j;
  }
  const StackPrediction p = predict_profile(stack_profile(reading.stack, reading.value), table, model);
  if (!p.chose) {
    j.status = PinJudgement::Status::fails;
    j.summary = "fails on " + where + ": " + p.outcome + " (" + p.why + ")" + right;
    return j;
  }
  const GidEntry* e = table.find(p.index);
  const std::string what = e && e->usable()
                               ? "points at " + e->gid.to_string() + " " + std::string(to_string(e->type))
                               : "index " + std::to_string(p.index) + " is empty";
  if (good && p.works && good.value().sgid_index == p.index) {
    j.status = PinJudgement::Status::fine;
    j.summary = "fine: index " + std::to_string(p.index) + " on " + where + " holds " + p.gid.to_string();
    return j;
  }
  if (p.works && !good) {
    j.status = PinJudgement::Status::fine;
    j.summary = "fine: index " + std::to_string(p.index) + " on " + where + " works";
    return j;
  }
  j.status = PinJudgement::Status::stale;
  j.err = p.err;
  j.summary = "stale: " + what + " on " + where + "; " +
              (p.works ? std::string("RTR works but it is not the entry to use")
                       : (p.err ? "RTR will fail with " + p.outcome : p.outcome)) +
              right;
  return j;
}

}  // namespace gidpolicy
