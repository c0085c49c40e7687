// diagnose(): the known causes of an RTR errno per platform (docs/facts.md#linux-rtr, #apple-thunderbolt),
// each confirmed, supported or ruled out by what the table holds at the index that was used.
#include <gidpolicy/diagnose.hpp>

#include "describe.hpp"

#include <algorithm>

namespace gidpolicy {

std::string_view to_string(Likelihood l) noexcept {
  switch (l) {
    case Likelihood::confirmed:
      return "confirmed";
    case Likelihood::likely:
      return "likely";
    case Likelihood::possible:
      return "possible";
    case Likelihood::ruled_out:
      return "ruled_out";
  }
  return "possible";
}

std::string Diagnosis::to_string() const {
  // "EINVAL (22) on linux:"; a number without a name is said once: "errno 5 on linux:"; no
  // number (0: a side channel's end of stream) is not said at all.
  const std::string number = std::to_string(err);
  std::string s = (err == 0 || name == "errno " + number ? name : name + " (" + number + ")") + " on " +
                  std::string(gidpolicy::to_string(platform)) + ":\n";
  for (const auto& c : causes) {
    s += "  [" + std::string(gidpolicy::to_string(c.likelihood)) + "] " + c.summary;
    if (!c.remedy.empty() && c.likelihood != Likelihood::ruled_out) s += " -> " + c.remedy;
    s += "\n";
  }
  return s;
}

namespace {

/// What the context says about the index used, computed once, and the one prediction: the
/// attributes RtrBuilder builds from the context, judged by judge_rtr() (predict_rtr()).
struct Facts {
  const GidTable* table = nullptr;
  std::optional<std::uint32_t> requested;  // as computed by the application
  std::optional<std::uint32_t> index;      // what the driver saw (uint8_t)
  const GidEntry* entry = nullptr;         // the entry at *index, if listed
  bool known = false;                      // table and index both given
  bool out_of_range = false;
  bool wrapped = false;
  bool not_shown = false;
  bool empty = false;  // empty slot, hole in a complete listing, or zero GID
  bool unreadable = false;
  bool usable = false;
  std::optional<Agreement> agreement;   // with the advertised GID, when given
  std::optional<RtrPrediction> model;   // when table and index are known
  const DriverModel* driver = nullptr;  // the model that judges (never null after gather())
  Platform platform = Platform::linux_kernel;
  std::string at;  // "sgid_index 1"

  /// How the model judged rule `r`: it decided the verdict, the request passed it, or the
  /// driver stopped (or the profile has no such rule) before it.
  enum class Judged { fired, passed, not_reached };
  [[nodiscard]] Judged judged(RtrRule r) const {
    if (!model) return Judged::not_reached;
    if (model->verdict.rule == r) return Judged::fired;
    if ((model->verdict.passed & rule_bit(r)) != 0) return Judged::passed;
    return Judged::not_reached;
  }
  /// The model's reason for the rule that fired, with RtrBuilder's refusal when it refused.
  [[nodiscard]] std::string model_reason() const {
    std::string s = model->verdict.reason;
    if (model->refused)
      s += " (RtrBuilder refuses these attributes before modify_qp: " + model->refused->detail + ")";
    return s;
  }

  /// "sgid_index 1 is empty; the advertised GID ... is at index 2" when the advertised GID is
  /// known, otherwise what the slot holds.
  [[nodiscard]] std::string slot_story() const {
    if (agreement && !agreement->agrees) return agreement->explanation;
    if (!known) return "";
    if (out_of_range) return at + " is not below gid_tbl_len " + std::to_string(table->length());
    if (not_shown) return at + " was not printed by the source";
    if (!entry || empty) return at + " is empty";
    if (unreadable) return at + " could not be read";
    return at + " holds " + detail::describe(*entry);
  }
};

// A peer the context does not name is detail::stand_in_peer() (describe.hpp): the prediction
// judges this side's choice alone; peer-dependent causes are then unknown, never ruled out.
using detail::stand_in_peer;

std::optional<RtrPrediction> model_of(const DiagnoseContext& c, const DriverModel& driver,
                                      const GidEntry* entry) {
  if (!c.table || !c.sgid_index) return std::nullopt;
  const QpKind qp = c.qp_type.value_or(QpKind::uc);
  if (qp == QpKind::ud) return std::nullopt;  // UD carries no address at RTR
  // The selection whose GID was advertised: only its GID matters here (agreement).
  Selection sel;
  if (c.advertised)
    sel.entry.gid = *c.advertised;
  else if (entry)
    sel.entry = *entry;
  PeerInfo peer;
  peer.qpn = 1;
  peer.psn = 1;
  peer.lid = 1;  // an InfiniBand peer inside the subnet has one
  peer.gid = c.peer_gid ? *c.peer_gid : stand_in_peer(entry);
  peer.gid_type = c.peer_gid_type;
  RtrBuilder builder(qp, *c.table, sel,
                     SourceIndex::literal(static_cast<std::uint8_t>(*c.sgid_index & 0xffu)));
  builder.remote(peer);
  if (qp == QpKind::rc) builder.max_dest_rd_atomic(1).min_rnr_timer(12);
  return predict_rtr(*c.table, builder, driver);
}

Facts gather(const DiagnoseContext& c, const DriverModel& driver) {
  Facts f;
  f.driver = &driver;
  f.platform = driver.platform;
  f.table = c.table;
  f.requested = c.sgid_index;
  if (c.sgid_index) {
    f.index = *c.sgid_index & 0xffu;
    f.wrapped = *c.sgid_index > 0xffu;
    f.at = "sgid_index " + std::to_string(*f.index);
  }
  if (!c.table || !f.index) return f;
  f.known = true;
  const GidTable& t = *c.table;
  f.out_of_range = t.port().gid_tbl_len.has_value() && *f.index >= t.length();
  f.entry = t.find(*f.index);
  if (!f.out_of_range) {
    if (!f.entry) {
      f.not_shown = t.holes() == Holes::not_shown;
      f.empty = !f.not_shown;
    } else {
      f.empty = f.entry->state == EntryState::empty ||
                (f.entry->state == EntryState::valid && f.entry->gid.is_zero());
      f.unreadable = f.entry->state == EntryState::unreadable;
      f.usable = f.entry->usable();
    }
  }
  if (c.advertised) f.agreement = check_agreement(t, *c.advertised, *c.sgid_index);
  f.model = model_of(c, driver, f.entry);
  return f;
}

class Builder {
 public:
  Builder(const Facts& f, const DiagnoseContext& c, std::string errno_label)
      : f_(f), c_(c), errno_label_(std::move(errno_label)) {}
  void add(std::string id, Likelihood l, std::string summary, std::string remedy) {
    causes_.push_back(CandidateCause{std::move(id), l, std::move(summary), std::move(remedy)});
  }
  /// A cause the driver model decides: `rule` fired -> confirmed with the model's reason; the
  /// request passed it -> ruled out with `passed`; not reached -> `evidence` when the table
  /// shows it, ruled out with `passed` when it shows the opposite, `unknown_l` without a model.
  void by_model(std::string id, RtrRule rule, Likelihood unknown_l, const std::string& generic,
                const std::string& remedy, std::optional<bool> evidence, const std::string& hit,
                const std::string& passed, Likelihood evidence_l = Likelihood::likely) {
    covered_ |= rule_bit(rule);
    switch (f_.judged(rule)) {
      case Facts::Judged::fired:
        add(std::move(id), Likelihood::confirmed, hit.empty() ? f_.model_reason() : hit, remedy);
        return;
      case Facts::Judged::passed:
        add(std::move(id), Likelihood::ruled_out, passed, remedy);
        return;
      case Facts::Judged::not_reached:
        break;
    }
    if (!f_.model || !evidence) {
      add(std::move(id), unknown_l, generic, remedy);
      return;
    }
    if (*evidence)
      add(std::move(id), evidence_l,
          hit.empty() ? generic
                      : hit + " (the driver stops earlier: " + f_.model->to_string(f_.platform) + ")",
          remedy);
    else
      add(std::move(id), Likelihood::ruled_out, passed, remedy);
  }
  std::vector<CandidateCause> take() {
    // The model's decision always appears: when no cause of this errno is the rule that fired,
    // say what the model predicts instead, so the reader sees the disagreement.
    if (f_.model && f_.model->verdict.rule != RtrRule::none && f_.model->verdict.rule != RtrRule::not_shown &&
        (covered_ & rule_bit(f_.model->verdict.rule)) == 0)
      add("model_predicts_otherwise", Likelihood::possible,
          "for this RTR the driver model predicts " + f_.model->to_string(f_.platform) + ", not " +
              errno_label_,
          "compare the errno with the platform the table comes from (--platform)");
    std::stable_sort(causes_.begin(), causes_.end(), [](const CandidateCause& a, const CandidateCause& b) {
      return a.likelihood < b.likelihood;
    });
    return std::move(causes_);
  }

  // --- causes shared by several errnos -------------------------------------------------------
  /// Index beyond gid_tbl_len (or wrapped past 255).
  void out_of_range(Likelihood unknown_l) {
    if (f_.wrapped)
      add("index_wrapped", Likelihood::confirmed,
          "the application computed sgid_index " + std::to_string(*f_.requested) + ", which wrapped to " +
              std::to_string(*f_.index) + " in the uint8_t field",
          "use an index <= 255 (a policy never returns more)");
    by_model("index_out_of_range", RtrRule::index_out_of_range, unknown_l,
             "sgid_index is not below the port's gid_tbl_len",
             "choose the index from the table (gidpolicy select --policy auto)",
             f_.known ? std::optional<bool>(f_.out_of_range) : std::nullopt, "",
             f_.at + " is inside the table (gid_tbl_len " +
                 (f_.table && f_.table->port().gid_tbl_len ? std::to_string(f_.table->length()) : "unknown") +
                 ")");
  }
  /// The slot holds nothing (the driver's "no such GID").
  void empty_slot(const std::string& id, Likelihood unknown_l, const std::string& what) {
    const std::string remedy = "route from the index the advertised GID is at (gidpolicy check)";
    if (!f_.known || !f_.model) {
      add(id, unknown_l, what, remedy);
      return;
    }
    covered_ |= rule_bit(RtrRule::empty_slot) | rule_bit(RtrRule::unreadable);
    const RtrRule fired = f_.model->verdict.rule;
    if (fired == RtrRule::empty_slot || fired == RtrRule::unreadable) {
      add(id, Likelihood::confirmed, f_.slot_story() + ": " + what, remedy);
      return;
    }
    if (fired == RtrRule::not_shown) {
      add(id, Likelihood::likely, f_.slot_story() + ": " + what, remedy);
      return;
    }
    if (f_.out_of_range) {
      add(id, Likelihood::ruled_out, f_.at + " is outside the table, not an empty slot in it", remedy);
      return;
    }
    if (f_.empty || f_.unreadable || f_.not_shown || !f_.entry) {  // the driver stops earlier
      add(id, Likelihood::likely,
          f_.slot_story() + ": " + what + " (the driver stops earlier: " + f_.model->to_string(f_.platform) +
              ")",
          remedy);
      return;
    }
    add(id, Likelihood::ruled_out, f_.at + " is not empty: it holds " + detail::describe(*f_.entry), remedy);
  }
  /// The destination GID is all zeros (the peer advertised an empty slot).
  void dgid_zero() {
    const bool peer = c_.peer_gid.has_value();
    if (!peer) {  // the prediction used a stand-in peer: unknown, never ruled out
      covered_ |= rule_bit(RtrRule::dgid_zero);
      add("dgid_zero", Likelihood::possible,
          "the destination GID is zero: the peer advertised an empty slot (JACCL's index 1 on a port without "
          "a GID there)",
          "make the peer advertise the GID it routes from (profile jaccl-fixed or auto)");
      return;
    }
    by_model(
        "dgid_zero", RtrRule::dgid_zero, Likelihood::possible,
        "the destination GID is zero: the peer advertised an empty slot (JACCL's index 1 on a port without "
        "a GID there)",
        "make the peer advertise the GID it routes from (profile jaccl-fixed or auto)",
        c_.peer_gid->is_zero(), "", "the destination GID " + c_.peer_gid->to_string() + " is not zero");
  }
  /// Advertised one GID, routed from another entry.
  void disagreement(Likelihood if_disagree) {
    if (!f_.agreement) return;
    const Agreement& a = *f_.agreement;
    if (a.agrees) {
      add("disagreement", Likelihood::ruled_out, a.explanation, "");
      return;
    }
    // Said from the advertising side: the slot's own story is already told by another cause.
    std::string s = a.advertised_at ? "advertised " + a.advertised.to_string() + ", which is at index " +
                                          std::to_string(*a.advertised_at) + ", but routed from sgid_index " +
                                          std::to_string(a.sgid_index)
                                    : "advertised " + a.advertised.to_string() +
                                          ", which no entry holds, and routed from sgid_index " +
                                          std::to_string(a.sgid_index);
    add("disagreement", if_disagree, s + ": the peer expects packets from a GID this side does not send from",
        "derive sgid_index from the selection that chose the advertised GID (profile jaccl-fixed or auto)");
  }
  /// sgid is IPv4-mapped and dgid native IPv6, or the reverse.
  void family_mismatch(Likelihood unknown_l, const std::string& effect) {
    const std::string remedy = "advertise and route from GIDs of one family on both sides (auto:family=ipv4)";
    const std::string generic =
        "the source and destination GIDs are of different address families: " + effect;
    if (!f_.usable || !c_.peer_gid || c_.peer_gid->is_zero()) {
      covered_ |= rule_bit(RtrRule::family_mismatch);
      add("family_mismatch",
          f_.model && c_.peer_gid && c_.peer_gid->is_zero() ? Likelihood::ruled_out : unknown_l,
          f_.model && c_.peer_gid && c_.peer_gid->is_zero() ? "the destination GID is zero: it has no family"
                                                            : generic,
          remedy);
      return;
    }
    const bool mismatch = f_.entry->gid.is_ipv4_mapped() != c_.peer_gid->is_ipv4_mapped();
    const std::string both = f_.at + " holds " + detail::describe(*f_.entry) + " and the destination is " +
                             c_.peer_gid->to_string();
    by_model("family_mismatch", RtrRule::family_mismatch, unknown_l, generic, remedy, mismatch,
             both + ": different address families, " + effect, both + ": same address family");
  }
  /// An fe80 source towards a non-link-local destination.
  void link_local_source(Likelihood unknown_l) {
    const std::string remedy = "route from an IPv4-mapped or global GID (auto rejects link-local)";
    const std::string generic = "the source GID is link-local (fe80::/10): not routed";
    if (!f_.usable) {
      covered_ |= rule_bit(RtrRule::link_local_source);
      add("link_local_source", unknown_l, generic, remedy);
      return;
    }
    const bool ll = f_.entry->gid.is_link_local() && !(c_.peer_gid && c_.peer_gid->is_link_local());
    by_model("link_local_source", RtrRule::link_local_source, unknown_l, generic, remedy, ll,
             f_.at + " holds " + detail::describe(*f_.entry) + ": a link-local GID, not routed",
             f_.at + " holds " + detail::describe(*f_.entry) +
                 (f_.entry->gid.is_link_local() ? ": link-local, towards a link-local destination"
                                                : ": not link-local"));
  }
  /// The device's QP cap, as the driver model sets it (max_qps_per_device) and judges it at
  /// create_qp (judge_create_qp, rule qp_limit). Nothing when the model sets no cap.
  void qp_limit(Likelihood unknown_l) {
    const DriverModel& m = *f_.driver;
    if (m.max_qps_per_device == 0) return;
    const std::string remedy =
        "share QPs, or destroy unused ones (a full mesh of N hosts needs N-1 per port)";
    const std::string cap = std::to_string(m.max_qps_per_device);
    if (!c_.qps_on_device) {
      add("qp_limit", unknown_l,
          "the " + m.name + " driver allows " + cap + " QPs per device; the next create_qp fails with " +
              errno_label_,
          remedy);
      return;
    }
    const std::string have = std::to_string(*c_.qps_on_device) + " QPs already exist on the device";
    const RtrVerdict v = judge_create_qp(c_.qp_type.value_or(QpKind::uc), *c_.qps_on_device, m);
    if (v.rule == RtrRule::qp_limit)
      add("qp_limit", Likelihood::confirmed, have + "; the " + m.name + " driver allows " + cap, remedy);
    else if ((v.passed & rule_bit(RtrRule::qp_limit)) != 0)
      add("qp_limit", Likelihood::ruled_out, have + ", below the " + m.name + " driver's cap of " + cap,
          remedy);
    else
      add("qp_limit", unknown_l, have + "; the driver stops earlier: " + v.to_string(m.platform), remedy);
  }
  void roce_version(Likelihood unknown_l) {
    const auto roce = [](GidType t) { return t == GidType::roce_v1 || t == GidType::roce_v2; };
    const std::string remedy = "use RoCE v2 entries on both sides (auto:roce=v2)";
    const std::string generic = "one side uses RoCE v1 and the other RoCE v2: packets are dropped";
    if (!f_.usable || !c_.peer_gid_type || !roce(f_.entry->type) || !roce(*c_.peer_gid_type)) {
      covered_ |= rule_bit(RtrRule::roce_version_mismatch);
      add("roce_version_mismatch", unknown_l, generic, remedy);
      return;
    }
    const bool mismatch = f_.entry->type != *c_.peer_gid_type;
    const std::string both = f_.at + " is " + std::string(to_string(f_.entry->type)) + ", the peer uses " +
                             std::string(to_string(*c_.peer_gid_type));
    by_model("roce_version_mismatch", RtrRule::roce_version_mismatch, unknown_l, generic, remedy, mismatch,
             both + ": packets are dropped", both + ": the same version");
  }

 private:
  const Facts& f_;
  const DiagnoseContext& c_;
  std::vector<CandidateCause> causes_;
  std::uint32_t covered_ = 0;  // rules some cause of this errno stands for
  std::string errno_label_;    // "EINVAL (22)"
};

void linux_causes(int err, const Facts& f, const DiagnoseContext& c, Builder& b) {
  const Errnos E = Errnos::linux_kernel();
  const bool ib = f.table && f.table->port().link_layer.kind() == LinkLayer::Kind::infiniband;
  if (err == E.einval) {
    b.dgid_zero();
    b.out_of_range(Likelihood::likely);
    b.empty_slot("empty_slot_old_kernel", Likelihood::possible,
                 "kernels before 5.10 return EINVAL (not ENODATA) for an empty slot");
    b.family_mismatch(Likelihood::possible, "Linux refuses the RTR with EINVAL");
    b.disagreement(Likelihood::likely);
    b.add("no_grh", ib ? Likelihood::ruled_out : Likelihood::possible,
          ib ? "InfiniBand port: a missing GRH is not an error"
             : "RoCE RTR without a GRH (ah_attr.is_global = 0)",
          "set is_global (RtrBuilder always does on RoCE)");
    b.add("missing_mask_bit", Likelihood::possible,
          "a required INIT->RTR attribute is missing from the mask, or an attribute the transition does not "
          "take is "
          "present",
          "build the attributes with RtrBuilder, which checks the mask");
    b.add("bad_port", Likelihood::possible, "ah_attr.port_num is not a port of the device",
          "use the port the table was read from");
  } else if (err == E.enodata) {
    b.empty_slot("empty_slot", Likelihood::likely,
                 "the kernel (>= 5.10) returns ENODATA for an in-range empty slot");
    b.disagreement(Likelihood::likely);
    b.add("gid_removed", f.known && f.usable ? Likelihood::likely : Likelihood::possible,
          f.known && f.usable
              ? f.at +
                    " holds a GID in this table, so it was probably empty when the RTR ran: the "
                    "address was removed or moved after the table was read (port flap, NCCL 2157)"
              : "the address was removed or moved to another index after it was advertised (NCCL 2157)",
          "re-read the entry right before modify_qp (preflight) and follow the GID to its new index");
  } else if (err == E.enodev) {
    // The table names the slot's netdev; the namespace view says whether it exists here.
    if (c.network && f.usable) {
      const Visibility v = c.network->visibility(*f.entry);
      const std::string nd =
          f.entry->netdev.empty() ? "ifindex " + std::to_string(f.entry->ifindex) : f.entry->netdev;
      if (v == Visibility::invisible)
        b.add("netdev_other_namespace", Likelihood::confirmed,
              f.at + " holds " + f.entry->gid.to_string() + " on netdev " + nd +
                  ", which does not exist in this network namespace",
              "choose a GID whose netdev is in this namespace: auto ranks the others last when given the "
              "namespace (SelectOptions::network; gidpolicy select on a live device)");
      else if (v == Visibility::visible)
        b.add("netdev_other_namespace", Likelihood::ruled_out,
              "netdev " + nd + " exists in this network namespace", "");
    }
    const std::string dev =
        f.usable && !f.entry->netdev.empty() ? " (" + f.entry->netdev + ")" : std::string();
    b.add("netdev_gone", Likelihood::likely,
          "the netdev bound to the source GID" + dev +
              " is gone or lives in another network namespace (containers, "
              "macvlan/multus pods)",
          "select from a table read inside the namespace that owns the netdev; filter with auto:netdev=NAME");
    b.empty_slot("empty_slot", Likelihood::possible, "a slot without a netdev");
  } else if (err == E.enetunreach) {
    b.add("no_route", Likelihood::likely,
          "no route from the source GID's netdev to the destination" +
              (c.peer_gid ? " " + c.peer_gid->to_string() : std::string()),
          "pick a source GID in the peer's subnet (auto:subnet=CIDR) or add the route");
    b.link_local_source(Likelihood::possible);
    b.family_mismatch(Likelihood::possible, "no route between the families");
  } else if (err == E.etimedout) {
    b.link_local_source(Likelihood::possible);
    b.roce_version(Likelihood::possible);
    b.disagreement(Likelihood::confirmed);
    b.add("neighbour_unresolved", Likelihood::possible,
          "the destination's neighbour (ARP/ND) entry did not resolve: the peer address is unreachable on "
          "this link",
          "check that the peer's IP answers from this port's netdev (ping -I)");
  } else if (err == E.eopnotsupp) {
    b.add("not_supported", Likelihood::likely, "the driver does not support this QP type or attribute", "");
  } else if (err == E.ebusy) {
    b.qp_limit(Likelihood::likely);
    b.add("resource_busy", Likelihood::likely, "the device is out of a resource (QPs, PDs)",
          "release unused QPs");
  }
}

void darwin_causes(int err, const Facts& f, const DiagnoseContext& c, Builder& b) {
  const Errnos E = Errnos::darwin();
  if (err == E.einval) {
    b.empty_slot("absent_source", Likelihood::likely,
                 "Apple's driver returns errno 22 for an absent source GID (exo 1390, MLX 3467, PR 4191)");
    b.disagreement(Likelihood::confirmed);
    b.dgid_zero();
    if (!f.known) {
      b.add("source_not_mapped", Likelihood::possible,
            "the source GID is not an IPv4-mapped GID (errno 22 as reported)",
            "route from the port's ::ffff:a.b.c.d entry");
    } else if (f.usable) {
      const bool mapped = f.entry->gid.is_ipv4_mapped();
      const std::string holds = f.at + " holds " + detail::describe(*f.entry);
      b.by_model("source_not_mapped", RtrRule::source_not_mapped, Likelihood::possible,
                 "the source GID is not an IPv4-mapped GID", "route from the port's ::ffff:a.b.c.d entry",
                 !mapped, holds + ": not IPv4-mapped", holds + ": IPv4-mapped");
    }
    if (f.table) {
      bool any_mapped = false;
      for (const auto& e : *f.table) any_mapped = any_mapped || (e.usable() && e.gid.is_ipv4_mapped());
      b.add("no_ipv4_on_port", any_mapped ? Likelihood::ruled_out : Likelihood::confirmed,
            any_mapped ? "the port has an IPv4-mapped GID" : "the port has no IPv4-mapped GID at all",
            "assign an IPv4 address to the port's own interface (enN, not bridge0)");
    }
    b.out_of_range(Likelihood::possible);
  } else if (err == E.etimedout) {
    const std::string remedy = "route from the IPv4-mapped entry (auto ranks index 0 last on Thunderbolt)";
    if (f.index)
      b.by_model(
          "index_0", RtrRule::index_0, *f.index == 0 ? Likelihood::confirmed : Likelihood::ruled_out,
          *f.index == 0 ? f.at + ": routing from index 0 (the fe80 link-local) times out on Thunderbolt"
                        : f.at + " is not index 0",
          remedy, *f.index == 0,
          *f.index == 0 && f.known
              ? f.slot_story() + ": routing from index 0 (the fe80 link-local) times out on Thunderbolt"
              : "",
          f.at + " is not index 0");
    else
      b.add("index_0", Likelihood::likely,
            "routing from index 0 (the fe80 link-local) times out on Thunderbolt", remedy);
    b.disagreement(Likelihood::likely);
    b.add("peer_unreachable", Likelihood::possible, "the peer is not reachable over this Thunderbolt port",
          "check the cable and that the peer's RDMA port is active");
  } else if (err == E.enodata) {
    b.add("leaked_resources", Likelihood::likely,
          "errno 96 (ENODATA on Darwin) was reported with PDs/QPs leaked by earlier runs (max_pd 11), not "
          "with a GID "
          "choice",
          "destroy QPs and PDs on every exit path; restart the process (or reboot if the port is wedged)");
    b.empty_slot("empty_slot", Likelihood::possible, "an absent source GID");
  } else if (err == E.ebusy) {
    b.qp_limit(Likelihood::likely);
    if (f.driver->max_qps_per_device == 0)
      b.add("resource_busy", Likelihood::likely, "the device is out of a resource (QPs, PDs)",
            "release unused QPs");
  } else if (err == E.eopnotsupp) {
    const bool known = c.qp_type.has_value();
    const bool rc = known && *c.qp_type == QpKind::rc;
    const bool uc_only = f.driver->uc_only;
    b.add("rc_unsupported",
          !uc_only ? Likelihood::ruled_out
                   : (known ? (rc ? Likelihood::confirmed : Likelihood::ruled_out) : Likelihood::likely),
          uc_only ? "Apple's Thunderbolt RDMA supports UC queue pairs only; RC fails with EOPNOTSUPP (102)"
                  : "the " + f.driver->name + " driver model supports RC queue pairs",
          "create UC queue pairs");
  }
}

}  // namespace

Diagnosis diagnose(int err, Platform platform, const DiagnoseContext& context) {
  return diagnose(err, DriverModel::for_platform(platform), context);
}

Diagnosis diagnose(int err, const DriverModel& model, const DiagnoseContext& context) {
  const Platform platform = model.platform;
  Diagnosis d;
  d.err = err;
  d.platform = platform;
  d.name = errno_name(platform, err);
  const Facts f = gather(context, model);
  Builder b(f, context, d.name + " (" + std::to_string(err) + ")");
  if (platform == Platform::darwin)
    darwin_causes(err, f, context, b);
  else
    linux_causes(err, f, context, b);
  d.causes = b.take();
  if (d.causes.empty()) {
    // Not an RTR errno gidpolicy models; the same number may be one on the other platform.
    const Platform other = platform == Platform::darwin ? Platform::linux_kernel : Platform::darwin;
    std::string s = "errno " + std::to_string(err) + " on " + std::string(to_string(platform)) +
                    (d.name.rfind("errno ", 0) == 0 ? "" : " (" + d.name + ")") +
                    " is not one gidpolicy has a model for at RTR";
    const std::string other_name = errno_name(other, err);
    if (other_name.rfind("errno ", 0) != 0)
      s += "; on " + std::string(to_string(other)) + " " + std::to_string(err) + " is " + other_name +
           ": was the number captured on the other platform?";
    d.causes.push_back(CandidateCause{"unknown", Likelihood::possible, std::move(s), ""});
  }
  return d;
}

std::string RtrPrediction::to_string(Platform p) const {
  if (!refused) return verdict.to_string(p);
  return "refused before modify_qp: " + refused->what() + "; sent anyway: " + verdict.to_string(p);
}

RtrPrediction predict_rtr(const GidTable& table, const RtrBuilder& builder, const DriverModel& model) {
  RtrPrediction p;
  auto built = builder.build();
  if (built) {
    p.verdict = judge_rtr(table, built.value().request(), model);
    p.attributes = std::move(built).value();
  } else {
    p.refused = built.error();
    p.verdict = judge_rtr(table, builder.unchecked().request(), model);
  }
  return p;
}

RtrPrediction predict_rtr(const GidTable& table, const Plan& plan, const PeerInfo& peer,
                          const DriverModel& model, QpKind qp_type) {
  RtrBuilder builder(qp_type, table, plan);
  builder.remote(peer);
  if (qp_type == QpKind::rc) builder.max_dest_rd_atomic(1).min_rnr_timer(12);
  return predict_rtr(table, builder, model);
}

RtrVerdict predict_rtr(const GidTable& table, const RtrAttributes& rtr, const DriverModel& model) {
  return judge_rtr(table, rtr.request(), model);
}

}  // namespace gidpolicy
