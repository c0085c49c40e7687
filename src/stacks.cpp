#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/policies/libfabric.hpp>
#include <gidpolicy/policies/mooncake.hpp>
#include <gidpolicy/policies/nccl.hpp>
#include <gidpolicy/policies/perftest.hpp>
#include <gidpolicy/policies/ucx.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stacks.hpp>

#include "describe.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace gidpolicy {

std::string stack_names(StackSet which, std::string_view separator) {
  std::string out;
  for (const StackInfo& s : kStacks)
    if (which == StackSet::all || s.predicted)
      out += (out.empty() ? "" : std::string(separator)) + std::string(s.name);
  return out;
}

std::string stack_titles(StackSet which) {
  std::string out;
  for (const StackInfo& s : kStacks)
    if (which == StackSet::all || s.predicted) out += (out.empty() ? "" : ", ") + std::string(s.title);
  return out;
}

std::vector<std::string_view> pin_variables() {
  std::vector<std::string_view> out;
  for (const StackInfo& s : kStacks)
    for (const PinVariable& p : s.pins)
      if (std::find(out.begin(), out.end(), p.name) == out.end()) out.push_back(p.name);
  return out;
}

std::vector<std::string_view> device_variables() {
  std::vector<std::string_view> out;
  for (const StackInfo& s : kStacks) {
    const std::string_view d = s.launch.device;
    // A variable, not an argument (perftest's -d, ds4's option), and a list of ports, not a file.
    const bool ports = s.launch.device_form == DeviceForm::device ||
                       s.launch.device_form == DeviceForm::device_port ||
                       s.launch.device_form == DeviceForm::exact_device_port;
    if (!d.empty() && d.front() != '-' && ports && std::find(out.begin(), out.end(), d) == out.end())
      out.push_back(d);
  }
  return out;
}

bool DeviceSelector::selects(std::string_view device, std::uint32_t port) const {
  if (every) return !exclude;
  bool listed = false;
  for (const Item& i : items) {
    const bool name =
        match == Match::exact ? device == i.device : device.substr(0, i.device.size()) == i.device;
    if (name && (!i.port || *i.port == port)) {
      listed = true;
      break;
    }
  }
  return listed != exclude;
}

namespace {

/// NCCL's list (ncclIbInit: '^', '=', then parseStringList): "name[:port]" items split on ','.
/// The port is read with atoi, as NCCL reads it (an unreadable one is 0, a port no device has).
void nccl_list(std::string_view text, DeviceSelector& sel) {
  if (!text.empty() && text.front() == '^') {
    sel.exclude = true;
    text.remove_prefix(1);
  }
  sel.match = DeviceSelector::Match::prefix;
  if (!text.empty() && text.front() == '=') {
    sel.match = DeviceSelector::Match::exact;
    text.remove_prefix(1);
  }
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t colon = item.find(':');
    DeviceSelector::Item it{std::string(item.substr(0, colon)), std::nullopt};
    if (colon != std::string_view::npos)
      it.port = static_cast<std::uint32_t>(std::atoi(std::string(item.substr(colon + 1)).c_str()));
    sel.items.push_back(std::move(it));
  }
  sel.every = sel.items.empty();
}

/// UCX's device list (stack_vars::kUcxNetDevices): "all", or "device:port" items, each matched whole.
void ucx_list(std::string_view text, DeviceSelector& sel) {
  sel.match = DeviceSelector::Match::exact;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item == "all") {
      sel.every = true;
      continue;
    }
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) continue;  // a TCP interface ("eth0"): no RDMA port
    std::uint32_t port = 0;
    const std::string_view p = item.substr(colon + 1);
    const bool digits = !p.empty() && p.size() <= 3 &&
                        std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits)
      for (char c : p) port = port * 10 + static_cast<std::uint32_t>(c - '0');
    // "mlx5_0:x" names no port: kept with port 0, which matches none.
    sel.items.push_back({std::string(item.substr(0, colon)), port});
  }
}

}  // namespace

std::optional<DeviceSelector> read_device_selector(std::string_view variable, std::string_view text) {
  const auto vars = device_variables();
  if (std::find(vars.begin(), vars.end(), variable) == vars.end()) return std::nullopt;
  const StackInfo* row = nullptr;
  for (const StackInfo& s : kStacks)
    if (s.launch.device == variable) row = &s;
  DeviceSelector sel;
  sel.stack = row->id;
  sel.variable = std::string(variable);
  // Each stack's own rule (the header says which are read from the stack's source).
  switch (row->id) {
    case StackId::nccl:
    case StackId::nvshmem:  // modelled as NCCL's
      nccl_list(text, sel);
      break;
    case StackId::ucx:
      ucx_list(text, sel);
      break;
    case StackId::libfabric:  // the provider compares the start of the name
    case StackId::llama_cpp:  // one name, whole
      sel.match =
          row->id == StackId::libfabric ? DeviceSelector::Match::prefix : DeviceSelector::Match::exact;
      sel.items.push_back({std::string(text), std::nullopt});
      sel.every = text.empty();
      break;
    case StackId::mooncake:
    case StackId::perftest:
    case StackId::ds4:
    case StackId::jaccl:
    case StackId::exo:
      return std::nullopt;  // not reached: device_variables() lists no variable of theirs
  }
  return sel;
}

// The policy behind each row's automatic choice: code, not data, so a switch the compiler checks
// (-Wswitch-enum, no default): a stack added to StackId without a case here fails the build.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
#pragma GCC diagnostic error "-Wswitch-enum"
result<Profile> stack_profile(StackId id, std::optional<std::int64_t> pinned) {
  const auto index = [&]() -> std::uint32_t { return static_cast<std::uint32_t>(*pinned); };
  const bool in_u8 = pinned && *pinned >= 0 && *pinned <= 255;
  switch (id) {
    case StackId::nccl:
    case StackId::nvshmem: {
      Nccl n;
      if (pinned) n.gid_index = *pinned;
      return Profile{n, SourceIndex::selected()};
    }
    case StackId::ucx: {
      Ucx u;
      if (in_u8) u.gid_index = index();
      return Profile{u, SourceIndex::selected()};
    }
    case StackId::mooncake: {
      Mooncake m;
      if (pinned) m.gid_index = *pinned;
      return Profile{m, SourceIndex::selected()};
    }
    case StackId::libfabric: {
      Libfabric l;
      if (in_u8) l.gid_idx = index();
      return Profile{l, SourceIndex::selected()};
    }
    case StackId::perftest: {
      Perftest p;
      if (in_u8) p.x = index();
      return Profile{p, SourceIndex::selected()};
    }
    case StackId::ds4:
      // ds4 takes any index it can query and wraps it to 8 bits: the profile says so itself.
      if (pinned && (*pinned < 0 || *pinned > std::int64_t{0xffffffff}))
        return fail(errc::invalid_argument, "ds4: " + std::string(stack_vars::kDs4GidIndex) + " " +
                                                std::to_string(*pinned) +
                                                " is not an index ds4 reads (0..4294967295)");
      return pinned ? profiles::ds4(index()) : profiles::ds4();
    case StackId::llama_cpp: {
      // Its own choice without a pin is not modelled; a pinned index is used unchecked, the way
      // libfabric's UD endpoints use theirs (an index outside 0..255: index 0, as before).
      if (!pinned)
        return fail(errc::not_supported, "llama.cpp: its own choice without " +
                                             std::string(stack_vars::kGgmlRdmaGid) +
                                             " is not modelled; give the index it is pinned to");
      Libfabric l;
      if (in_u8) l.gid_idx = index();
      return Profile{l, SourceIndex::selected()};
    }
    case StackId::jaccl:
    case StackId::exo:
      // JACCL (and exo, which runs it) has no index to pin: its patched fork takes a spec (the
      // row's choice variable).
      if (pinned)
        return fail(errc::invalid_argument,
                    std::string(stack_row(id).name) +
                        ": JACCL takes no GID index; its patched fork takes a spec in " +
                        std::string(stack_row(id).launch.choice));
      return profiles::jaccl();
  }
  return fail(errc::invalid_argument, "stack_profile: not a StackId");
}
#pragma GCC diagnostic pop

std::string fix_setting(const StackInfo& s, const GidTable& table, std::uint32_t index) {
  const PortInfo& port = table.port();
  const auto device_text = [&](const std::string& dev_port) -> std::string {
    switch (s.launch.device_form) {
      case DeviceForm::none:
        return {};
      case DeviceForm::device:
        return port.device;
      case DeviceForm::device_port:
        return dev_port;
      case DeviceForm::exact_device_port:
        return "=" + dev_port;
      case DeviceForm::file:  // the jaccl shape below writes no device
        return {};
    }
    return {};
  };
  const std::string idx = std::to_string(index);
  // A setting is pasted into a shell: the device name (any printable ASCII the name rule takes,
  // "$(x)" included) goes in as one word (shell_quote(), quoting.hpp); a plain name stays bare.
  const std::string dev_port = port.device + ":" + std::to_string(port.port);
  const auto word = [](const std::string& v) { return shell_quote(v); };
  switch (s.env) {
    case EnvShape::per_process_variable: {
      std::string out = std::string(s.launch.choice) + "=" + idx;
      if (s.launch.device_list == DeviceList::always)
        out += " " + std::string(s.launch.device) + "=" + word(device_text(dev_port));
      return out;
    }
    case EnvShape::per_port_args:
      return std::string(s.launch.device) + " " + word(port.device) +
             (s.launch.port.empty() ? ""
                                    : " " + std::string(s.launch.port) + " " + std::to_string(port.port)) +
             " " + std::string(s.launch.choice) + " " + idx;
    case EnvShape::one_device_per_process:
      return std::string(s.launch.device) + "=" + word(device_text(dev_port)) + " " +
             std::string(s.launch.choice) + "=" + idx;
    case EnvShape::jaccl_device_file:
      return std::string(s.launch.choice) + "=validated:index=" + idx;
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

bool only_link_local_gids(const GidTable& table) noexcept {
  std::size_t usable = 0;
  for (const GidEntry& e : table) {
    if (!e.usable()) continue;
    ++usable;
    if (!e.gid.is_link_local() && !e.gid.is_ipv4_link_local()) return false;
  }
  return usable > 0;
}

std::optional<std::string> port_blocker(const GidTable& table) {
  const PortInfo& p = table.port();
  if (p.state != PortState::active)
    return port_name(table) + " is " + std::string(to_string(p.state)) +
           ", not active: no QP on it reaches RTR";
  if (p.link_layer.is_ip_routed() && only_link_local_gids(table))
    return port_name(table) + " has only link-local GIDs: none reaches past the link";
  return std::nullopt;
}

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
  // The peer is healthy: auto's pick there, else this side's own GID; never the zero GID of an
  // empty local slot, which would blame the peer (a zero destination GID) for what is this
  // slot's emptiness (ENODATA).
  const GidEntry& own = p.selection.entry;
  peer.gid = good ? good.value().selection.entry.gid
                  : (own.usable() && !own.gid.is_zero() ? own.gid : detail::stand_in_peer(&own));
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
  } else if (auto blocker = port_blocker(table)) {
    // What the doctor calls a blocker is one here too: the RTR alone would pass.
    out.outcome =
        table.port().state != PortState::active ? "port not active: " + *blocker : "times out: " + *blocker;
    out.why = *blocker;
  } else {
    out.works = true;
    out.outcome = "ok";
  }
  if (out.works || (out.fix && *out.fix == out.index)) out.fix.reset();
  return out;
}

result<Profile> stack_profile_for(StackId id, const GidTable& table, std::optional<std::int64_t> pinned) {
  const LinkLayer l = table.port().link_layer;
  auto plain = stack_profile_on(id, l, pinned);
  const StackPath* path = automatic_path(stack_row(id), l);
  if (!plain || !path || path->local_option.empty() || path->spec == stack_row(id).automatic) return plain;
  // The control connection's address: the port's first usable RoCE v2 IPv4-mapped GID.
  for (const GidEntry& e : table) {
    if (!e.usable() || e.type != GidType::roce_v2 || !e.gid.is_ipv4_mapped() || e.gid.is_ipv4_link_local())
      continue;
    std::string spec =
        std::string(path->spec) + ":" + std::string(path->local_option) + "=" + e.gid.ipv4_string();
    if (pinned) spec += ",index=" + std::to_string(*pinned);
    if (auto with = parse_profile(spec)) return with;
    break;
  }
  return plain;
}

result<StackPrediction> predict_stack(StackId id, const GidTable& table) {
  auto profile = stack_profile_for(id, table);
  if (!profile) return profile.error();
  return predict_profile(profile.value(), table, DriverModel::for_link_layer(table.port().link_layer));
}

const StackPath* automatic_path(const StackInfo& s, LinkLayer l) noexcept {
  for (const StackPath& p : s.paths)
    if (p.automatic && p.runs_on.has(l)) return &p;
  return nullptr;
}

std::string_view automatic_spec(const StackInfo& s, LinkLayer l) noexcept {
  const StackPath* p = automatic_path(s, l);
  return p ? p->spec : std::string_view();
}

result<Profile> stack_profile_on(StackId id, LinkLayer l, std::optional<std::int64_t> pinned) {
  const StackInfo& s = stack_row(id);
  if (!s.runs_on.has(l))
    return fail(errc::not_supported, std::string(s.name) + " does not run on " + std::string(to_string(l)) +
                                         " ports (it runs on " + runs_on_text(s.runs_on) + ")");
  const std::string_view spec = automatic_spec(s, l);
  // The row's own path (or none modelled: stack_profile() says so, and reads a pin).
  if (spec.empty() || spec == s.automatic) return stack_profile(id, pinned);
  // Another path of the stack (ds4's Linux RoCE path): its spec, pinned through its index option.
  if (!pinned) return parse_profile(spec);
  if (*pinned < 0 || *pinned > 255)
    return fail(errc::invalid_argument, std::string(s.name) + " on " + std::string(to_string(l)) + ": " +
                                            std::string(s.launch.choice) + " " + std::to_string(*pinned) +
                                            " is not an index it reads (0..255)");
  return parse_profile(std::string(spec) + ":index=" + std::to_string(*pinned));
}

std::string runs_on_text(const LinkLayers& l) {
  std::string out;
  const auto add = [&](bool on, LinkLayer which) {
    if (on) out += (out.empty() ? "" : ", ") + std::string(to_string(which));
  };
  add(l.infiniband, LinkLayer::infiniband());
  add(l.ethernet, LinkLayer::ethernet());
  add(l.thunderbolt, LinkLayer::thunderbolt());
  return out;
}

bool profile_runs_on(std::string_view spec, LinkLayer l) noexcept {
  const std::string_view base = spec.substr(0, spec.find(':'));
  bool named = false;
  for (const StackInfo& s : kStacks)
    for (const StackPath& p : s.paths)
      if (p.spec == base) {
        if (p.runs_on.has(l)) return true;
        named = true;
      }
  return !named;
}

std::optional<std::string> unsteerable_failure(const StackInfo& s, const GidTable& table,
                                               const DriverModel& model) {
  if (s.launch.choice_reader != ChoiceReader::patched_fork || !s.predicted) return std::nullopt;
  auto own = stack_profile_for(s.id, table);
  if (!own) return std::nullopt;  // it does not run here: nothing to steer
  const StackPrediction p = predict_profile(own.value(), table, model);
  if (p.works) return std::nullopt;
  const std::string shipped = std::string(s.title) + " as it ships";
  std::string out = shipped + " on " + port_name(table) + ": " + p.outcome + " (" + p.why +
                    "); no variable steers it (" + std::string(s.launch.choice) +
                    " is read only by its patched fork)";
  auto plan = own.value().plan(table);
  if (auto blocker = port_blocker(table)) return out + "; the port must be fixed first: " + *blocker;
  if (!plan) return out + "; on the host: " + plan.error().detail;
  // What must hold for the shipped choice to work: the index it routes from must hold the GID it
  // advertises. Said from the table, not guessed: which entry it advertises and what that index holds.
  const Plan& pl = plan.value();
  const GidEntry& adv = pl.selection.entry;
  const GidEntry* at = table.find(pl.sgid_index);
  const std::string holds = at && at->usable() ? "holds " + at->gid.to_string() : std::string("is empty");
  out += "; on the host: it advertises index " + std::to_string(adv.index) + " (" + adv.gid.to_string() +
         ", the first IPv4-mapped GID) and routes from index " + std::to_string(pl.sgid_index) + ", which " +
         holds + ": it works once the first IPv4-mapped GID sits at index " + std::to_string(pl.sgid_index) +
         " (no IPv4-mapped GID below it, and that one at " + std::to_string(pl.sgid_index) + ")";
  if (table.port().link_layer.kind() == LinkLayer::Kind::thunderbolt)
    out +=
        "; on macOS that GID appears once the port's own interface (not bridge0) has an IPv4 address, "
        "usually at index 1 but at index 2 on some Mac minis";
  return out;
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

namespace {

// One stack's readings of its pin `pin`=`text`, by the pin's rule.
void read_one(const StackInfo& s, const PinVariable& pin, std::string_view text, bool own_pin_set,
              std::vector<PinReading>& out) {
  const std::string value(text);
  // The value as a reading shows it: it came from the environment or a file, and may hold a
  // newline or an ESC that would forge a line of the report (show_text(), quoting.hpp).
  const std::string shown = show_text(text, 40);
  const std::string who(s.title);
  switch (pin.rule) {
    case PinRule::nccl_param: {
      if (text.empty()) {
        out.push_back(
            {s.id, who + " >= 2.21.5 (an empty value keeps the default, -1: auto)", std::nullopt, false});
        out.push_back(
            {s.id, who + " < 2.21.5 (an empty value keeps the default, 0)", std::int64_t{0}, false});
        return;
      }
      const auto v = nccl_strtoll(text, -1);
      out.push_back({s.id, who + " (strtoll: \"" + shown + "\" is " + std::to_string(*v) + ")",
                     (v && *v < 0) ? std::nullopt : v, false});
      return;
    }
    case PinRule::nvshmem_param: {
      // NVSHMEM's own environment parser: modelled as NCCL's (an empty value keeps the default);
      // not read from its source here.
      const auto v = nccl_strtoll(text, -1);
      out.push_back({s.id, who + " 3.x (read as NCCL reads it: not verified)",
                     (v && *v >= 0) ? v : std::nullopt, false});
      return;
    }
    case PinRule::ucx_config: {
      // UCX's config parser: "auto", or an unsigned number; anything else (an empty value too) is
      // a configuration error and UCX does not start.
      if (text == "auto") {
        out.push_back({s.id, who + " 1.13 (auto)", std::nullopt, false});
        return;
      }
      std::int64_t v = 0;
      bool ok = !text.empty() && text.size() <= 9;
      for (char c : text) ok = ok && c >= '0' && c <= '9';
      if (ok) v = std::strtoll(value.c_str(), nullptr, 10);
      out.push_back({s.id,
                     ok ? who + " 1.13" : who + " 1.13 (not \"auto\" nor a number: a configuration error)",
                     ok ? std::optional<std::int64_t>(v) : std::nullopt, !ok});
      return;
    }
    case PinRule::atoi:
    case PinRule::atoi_fallback: {
      if (pin.rule == PinRule::atoi_fallback && own_pin_set) return;
      const auto m = pin.rule == PinRule::atoi ? mooncake_gid_setting(value.c_str(), nullptr)
                                               : mooncake_gid_setting(nullptr, value.c_str());
      const bool used = m && *m >= 0 && *m < 256;
      // "Mooncake (atoi: ..." or "Mooncake (<its own pin> unset: <NCCL's> through atoi, ...".
      const std::string how =
          pin.rule == PinRule::atoi
              ? std::string("atoi: ")
              : std::string(s.pins.front().name) + " unset: " + std::string(pin.name) + " through atoi, ";
      out.push_back({s.id,
                     who + " (" + how + "\"" + shown + "\" is " + std::to_string(m.value_or(0)) +
                         (used ? ")" : ", outside 0..255: auto)"),
                     used ? m : std::nullopt, false});
      return;
    }
    case PinRule::integer_param: {
      const auto v = nccl_strtoll(text, 0);
      out.push_back({s.id, who + " 1.17 (an integer parameter; an empty value is read as 0: not verified)",
                     v.value_or(0) >= 0 ? v : std::int64_t{0}, false});
      return;
    }
    case PinRule::unchecked: {
      // llama.cpp's RPC RDMA backend takes the index as given; its own default is not modelled,
      // so the pin is judged as an index used unchecked.
      const auto v = nccl_strtoll(text, 0);
      out.push_back(
          {s.id, who + " " + std::string(pin.name) + " (an index used unchecked: not verified)", v, false});
      return;
    }
  }
}

}  // namespace

std::vector<PinReading> read_pin(std::string_view variable, std::string_view text, bool mc_gid_index_set) {
  std::vector<PinReading> out;
  for (const StackInfo& s : kStacks)
    for (const PinVariable& pin : s.pins)
      if (pin.name == variable) read_one(s, pin, text, mc_gid_index_set, out);
  return out;
}

const DeviceSelector* selector_for(const PinReading& reading, std::string_view variable,
                                   std::span<const DeviceSelector> selectors) {
  const auto of = [&](StackId id) -> const DeviceSelector* {
    for (const DeviceSelector& d : selectors)
      if (d.stack == id) return &d;
    return nullptr;
  };
  if (const DeviceSelector* own = of(reading.stack)) return own;
  // The stack whose own pin (its first) `variable` is, when that is another stack.
  for (const StackInfo& s : kStacks)
    if (s.id != reading.stack && !s.pins.empty() && s.pins.front().name == variable) return of(s.id);
  return nullptr;
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
  auto profile = stack_profile(reading.stack, reading.value);
  if (!profile) {
    j.status = PinJudgement::Status::fails;
    j.summary = "fails: " + reading.reader + ": " + profile.error().detail + right;
    return j;
  }
  const StackPrediction p = predict_profile(profile.value(), table, model);
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

namespace gidpolicy {

std::vector<std::string_view> launch_variables() {
  std::vector<std::string_view> out;
  const auto add = [&](std::string_view v) {
    if (!v.empty() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  const auto devices = device_variables();
  for (const StackInfo& s : kStacks) {
    for (const PinVariable& p : s.pins) add(p.name);
    if (std::find(devices.begin(), devices.end(), s.launch.device) != devices.end()) add(s.launch.device);
    for (const SettingVariable& v : s.settings) add(v.name);
  }
  return out;
}

namespace launch_detail {

// The setting of `name` the stack sees: the last one given (a file's line after the environment's).
const LaunchSetting* last_setting(std::span<const LaunchSetting> settings, std::string_view name) {
  for (auto it = settings.rbegin(); it != settings.rend(); ++it)
    if (it->variable == name) return &*it;
  return nullptr;
}

std::string describe_selector(const DeviceSelector& d) {
  if (d.every) return d.exclude ? "no device" : "every device";
  std::string items;
  for (const DeviceSelector::Item& i : d.items)
    items +=
        (items.empty() ? "" : ", ") + i.device + (i.port ? ":" + std::to_string(*i.port) : std::string());
  return std::string(d.exclude ? "every device but " : "only ") + items +
         (d.match == DeviceSelector::Match::prefix ? " (names as prefixes)" : " (exact names)");
}

// One SettingVariable read as NCCL's rule reads it (NVSHMEM's modelled as NCCL's).
SettingReading read_setting(const SettingVariable& v, const LaunchSetting& a, StackLaunch& out) {
  SettingReading r{a.variable, a.value, a.origin, {}, true};
  const std::string shown = "\"" + show_text(a.value, 40) + "\"";
  switch (v.effect) {
    case SettingEffect::family:
      // Exactly "AF_INET6" or "AF_INET"; anything else, an empty value too, is AF_INET without a word.
      out.inet6 = a.value == "AF_INET6";
      if (*out.inet6) out.options.push_back("family=AF_INET6");
      r.reading = a.value == "AF_INET6" ? "AF_INET6: IPv6 GIDs preferred"
                  : a.value == "AF_INET"
                      ? "AF_INET (the default)"
                      : shown + " is neither AF_INET nor AF_INET6: read as AF_INET (the default), silently";
      return r;
    case SettingEffect::range: {
      auto c = Cidr::parse(a.value);
      if (!a.value.empty() && c) {
        out.range = c.value();
        out.options.push_back("range=" + c.value().to_string());
        r.reading = "the range " + c.value().to_string();
      } else {
        r.reading = shown + " is not a range it parses: ignored (any address, the default)";
      }
      return r;
    }
    case SettingEffect::roce_version: {
      // ncclLoadParam: empty keeps the default (2); otherwise strtoll(text, 0, 0), "abc" being 0.
      const auto n = nccl_strtoll(a.value, 2);
      const std::int64_t vnum = n.value_or(2);
      out.roce_version = static_cast<int>(std::clamp<std::int64_t>(vnum, -1, 3));
      if (*out.roce_version != 2) out.options.push_back("roce_version=" + std::to_string(*out.roce_version));
      r.reading =
          "strtoll: " + shown + " is " + std::to_string(vnum) +
          (vnum == 1 || vnum == 2 ? std::string()
                                  : ": no GID has that RoCE version, so only a change of family moves "
                                    "the pick off index 0");
      return r;
    }
    case SettingEffect::reachability:
      r.applied = false;
      r.reading = "decides which remote RoCE v2 addresses count as reachable, not which local GID is chosen";
      return r;
    case SettingEffect::not_in_model:
      r.applied = false;
      r.reading = "read only by later releases than the one modelled: not applied";
      return r;
    case SettingEffect::not_modelled:
      r.applied = false;
      r.reading = "read for a path the profile does not model (connected endpoints): not applied";
      return r;
  }
  return r;
}

}  // namespace launch_detail

StackLaunch read_launch(StackId id, std::span<const LaunchSetting> settings) {
  const StackInfo& s = stack_row(id);
  StackLaunch out;
  out.stack = id;
  // The pins, in the order the stack reads them: the first one set decides.
  const bool own_set = !s.pins.empty() && launch_detail::last_setting(settings, s.pins.front().name);
  for (const PinVariable& pin : s.pins) {
    const LaunchSetting* a = launch_detail::last_setting(settings, pin.name);
    if (!a) continue;
    if (pin.rule == PinRule::atoi_fallback && own_set) {
      out.read.push_back({a->variable, a->value, a->origin,
                          "not read: " + std::string(s.pins.front().name) + " is set", false});
      continue;
    }
    for (const PinReading& r : read_pin(pin.name, a->value, own_set)) {
      if (r.stack != id) continue;
      out.pin_variable = std::string(pin.name);
      out.pinned = r.value;
      if (r.refused) out.refused = r.reader;
      out.read.push_back({a->variable, a->value, a->origin,
                          r.reader + (r.refused ? std::string(": it does not start")
                                      : r.value ? ": index " + std::to_string(*r.value)
                                                : std::string(": its own choice")),
                          true});
      break;  // NCCL's empty value has two readings; the first is the release modelled
    }
  }
  const auto devices = device_variables();
  if (std::find(devices.begin(), devices.end(), s.launch.device) != devices.end())
    if (const LaunchSetting* a = launch_detail::last_setting(settings, s.launch.device)) {
      out.devices = read_device_selector(s.launch.device, a->value);
      if (out.devices)
        out.read.push_back(
            {a->variable, a->value, a->origin, launch_detail::describe_selector(*out.devices), true});
    }
  for (const SettingVariable& v : s.settings)
    if (const LaunchSetting* a = launch_detail::last_setting(settings, v.name))
      out.read.push_back(launch_detail::read_setting(v, *a, out));
  return out;
}

result<Profile> stack_profile_for(StackId id, const GidTable& table, const StackLaunch& launch,
                                  bool with_pin) {
  const std::optional<std::int64_t> pin = with_pin ? launch.pinned : std::nullopt;
  auto plain = stack_profile_for(id, table, pin);
  if (!plain) return plain;
  const bool nccl_rule = id == StackId::nccl || id == StackId::nvshmem;
  if (!nccl_rule || (!launch.inet6 && !launch.range && !launch.roce_version)) return plain;
  Nccl n;
  if (pin) n.gid_index = *pin;
  n.inet6 = launch.inet6.value_or(false);
  n.range = launch.range;
  n.roce_version = launch.roce_version.value_or(2);
  return Profile{AnyPolicy(n), SourceIndex::selected()};
}

}  // namespace gidpolicy

namespace gidpolicy {

std::string_view to_string(Reselect r) noexcept {
  switch (r) {
    case Reselect::at_open:
      return "at open";
    case Reselect::per_connection:
      return "per connection";
    case Reselect::on_change:
      return "on the change event";
    case Reselect::not_checked:
      return "not checked";
  }
  return "not checked";
}

std::string on_change_text(const StackInfo& s, bool pinned) {
  const std::string title(s.title);
  const std::string event(s.on_change.event);
  std::string out;
  if (pinned && !s.on_change.pinned.empty()) {
    out = title + " " + std::string(s.on_change.pinned);
  } else {
    switch (s.on_change.reselects) {
      case Reselect::at_open:
        out = title + " chooses once, when it opens the device; on IBV_EVENT_GID_CHANGE it " + event;
        break;
      case Reselect::per_connection:
        out = title +
              " chooses again for each connection it sets up (connections already up keep their GID); on "
              "IBV_EVENT_GID_CHANGE it " +
              event;
        break;
      case Reselect::on_change:
        out = title + " re-selects on IBV_EVENT_GID_CHANGE: it " + event;
        break;
      case Reselect::not_checked:
        out =
            title +
            ": its change path was not read in its source; taken as choosing once, when it opens the device";
        break;
    }
  }
  if (!s.on_change.source.empty()) out += " (" + std::string(s.on_change.source) + ")";
  return out;
}

namespace stack_change_detail {

struct Pick {
  std::optional<std::uint32_t> index;
  Gid gid;
};

Pick pick_on(StackId id, const GidTable& t, const StackLaunch& launch, const DriverModel& model) {
  auto profile = stack_profile_for(id, t, launch, true);
  if (!profile) return {};
  const StackPrediction p = predict_profile(profile.value(), t, model);
  if (!p.chose) return {};
  return {p.index, p.gid};
}

std::string at(std::uint32_t index, const Gid& gid) {
  return "index " + std::to_string(index) + " (" + gid.to_string() + ")";
}

}  // namespace stack_change_detail

StackOnChange stack_on_change(StackId id, const GidTable& before, const GidTable& after,
                              const StackLaunch& launch, const DriverModel& model) {
  using stack_change_detail::at;
  const StackInfo& s = stack_row(id);
  StackOnChange c;
  c.stack = id;
  const auto was = stack_change_detail::pick_on(id, before, launch, model);
  const auto now = stack_change_detail::pick_on(id, after, launch, model);
  c.before = was.index;
  c.before_gid = was.gid;
  c.next = now.index;
  c.next_gid = now.gid;
  if (was.index) {
    if (const GidEntry* e = after.find(*was.index)) c.now_at_before = e->gid;
    c.moved = !c.now_at_before || *c.now_at_before != was.gid;
  }
  const bool pinned = launch.pinned.has_value();
  const std::string title(s.title);
  const std::string held =
      !was.index ? std::string()
                 : (c.now_at_before
                        ? "index " + std::to_string(*was.index) + " now holds " + c.now_at_before->to_string()
                        : "index " + std::to_string(*was.index) + " is now empty");
  const std::string next_text = now.index ? at(*now.index, now.gid) : std::string("nothing it can use");
  std::string& out = c.summary;
  if (!was.index && !now.index) {
    out = title + " had no usable entry before the change and has none after it";
    return c;
  }
  if (was.index && !c.moved && now.index == was.index) {
    out = title + " is not affected: " + at(*was.index, was.gid) + " is unchanged";
    return c;
  }
  switch (s.on_change.reselects) {
    case Reselect::on_change:
      if (pinned && was.index && !c.now_at_before) {
        out = title + " keeps its pinned index: " + held +
              ", so its refresh fails, its endpoints are disconnected and " + was.gid.to_string() +
              " stays published";
        c.stale_while_up = true;
      } else if (pinned) {
        out = title + " re-reads its pinned index on the event: " + next_text +
              ", republished; its endpoints reconnect";
      } else {
        out = title + " chooses again on the event: " + next_text + ", republished; its endpoints reconnect";
      }
      return c;
    case Reselect::per_connection:
      if (was.index)
        out = title + ": connections up keep " + at(*was.index, was.gid) +
              (c.moved ? "; " + held + ": their traffic no longer comes from the GID their peers were told"
                       : std::string()) +
              (pinned ? "; new connections use its pinned " : "; new connections pick ") + next_text;
      else
        out = title + (pinned ? ": new connections use its pinned " : ": new connections pick ") + next_text;
      c.stale_while_up = c.moved;
      return c;
    case Reselect::at_open:
    case Reselect::not_checked:
      break;
  }
  const std::string assumed =
      s.on_change.reselects == Reselect::not_checked ? " (assumed: not read in its source)" : "";
  if (was.index)
    out = title + " keeps " + at(*was.index, was.gid) + " until it reopens the device" + assumed +
          (c.moved ? "; " + held + ": its traffic no longer comes from the GID its peers were told"
                   : std::string()) +
          (pinned ? "; reopened, it uses its pinned " : "; reopened, it picks ") + next_text;
  else
    out = title + " had no usable entry when it opened the device" + assumed + "; reopened, it picks " +
          next_text;
  c.stale_while_up = c.moved;
  return c;
}

}  // namespace gidpolicy
