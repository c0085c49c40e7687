#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/spec_options.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>

#include "common.hpp"

#include <limits>

namespace gidpolicy {

result<AnyPolicy> ValidatedExplicit::from_options(const SpecOptions& opts) {
  ValidatedExplicit p;
  bool has_index = false;
  for (const SpecOption& o : opts) {
    if (o.key == "index") {
      GIDPOLICY_TRY(v, opts.integer(o, 0, std::numeric_limits<std::uint32_t>::max(), "an index"));
      p.index = static_cast<std::uint32_t>(v);
      has_index = true;
    } else if (o.key == "type") {
      GIDPOLICY_TRY(t, opts.value(o, "a type (roce_v2, roce_v1, ib, any)"));
      auto f = type_filter_from_string(t);
      if (!f) return fail(opts.bad_value(o, "a type (roce_v2, roce_v1, ib, any)"));
      p.type = *f;
    } else if (o.key == "family") {
      GIDPOLICY_TRY(t, opts.value(o, "a family (ipv4, ipv6, any)"));
      auto f = family_filter_from_string(t);
      if (!f) return fail(opts.bad_value(o, "a family (ipv4, ipv6, any)"));
      p.family = *f;
    } else {
      GIDPOLICY_TRYV(opts.flag(o));
      p.allow_link_local = true;
    }
  }
  if (!has_index) return fail(opts.missing("the option 'index=N' (validated needs an index)"));
  return AnyPolicy(p);
}

std::string ValidatedExplicit::spec() const {
  std::string s = "validated:index=" + std::to_string(index);
  if (type != TypeFilter::any) s += ",type=" + std::string(to_string(type));
  if (family != FamilyFilter::ipv4) s += ",family=" + std::string(to_string(family));
  if (allow_link_local) s += ",allow-link-local";
  return s;
}

result<Selection> ValidatedExplicit::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, false,
      [&](detail::Recorder& rec) -> result<Selection> {
        const std::uint32_t len = table.length();
        // Message parts, built only on a failure (an untraced success formats nothing).
        const auto at = [&] { return detail::where(table) + ": "; };
        const auto idx = [&] { return "index " + std::to_string(index); };
        if (index >= len) {
          rec.step(index, EntryVerdict::out_of_range, [] { return std::string("beyond the table"); });
          return fail(errc::index_out_of_range,
                      at() + idx() + " is not below " +
                          (table.port().gid_tbl_len ? "gid_tbl_len " : "the entries listed: ") +
                          std::to_string(len));
        }
        if (index > 255) {
          rec.step(index, EntryVerdict::index_above_255,
                   [] { return std::string("sgid_index is a uint8_t"); });
          return fail(errc::index_exceeds_uint8,
                      at() + idx() + " cannot be an sgid_index (a uint8_t): it would wrap to " +
                          std::to_string(index & 0xffu));
        }
        const GidEntry* e = table.find(index);
        if (!e && table.holes() == Holes::not_shown) {
          rec.step(index, EntryVerdict::not_shown, [] { return std::string("not printed by the source"); });
          return fail(errc::entry_not_shown,
                      at() + idx() +
                          " was not printed by the source (ibv_devinfo hides empty slots and GIDs "
                          "with a zero interface id; show_gids rows pasted without their header and "
                          "footer may have been cut): read the whole show_gids output or sysfs");
        }
        if (!e || e->state == EntryState::empty) {
          rec.step(index, EntryVerdict::empty, [] { return std::string("empty slot"); });
          return fail(errc::entry_empty, at() + idx() + " is empty");
        }
        if (e->state == EntryState::unreadable) {
          rec.step(index, EntryVerdict::unreadable, [&] { return detail::describe(*e); });
          return fail(errc::entry_unreadable, at() + detail::holds(*e));
        }
        if (e->gid.is_zero()) {
          rec.step(index, EntryVerdict::zero, [] { return std::string("the zero GID"); });
          return fail(errc::entry_zero, at() + idx() + " holds the zero GID");
        }
        if (!matches(type, e->type)) {
          rec.step(index, EntryVerdict::wrong_type, [&] { return detail::describe(*e); });
          return fail(errc::wrong_gid_type,
                      at() + detail::holds(*e) + ", not " + std::string(to_string(type)));
        }
        if (!matches(family, e->gid)) {
          rec.step(index, EntryVerdict::wrong_family, [&] { return detail::describe(*e); });
          return fail(
              errc::wrong_family,
              at() + detail::holds(*e) + ", not " +
                  (family == FamilyFilter::ipv4 ? "an IPv4-mapped GID" : "an IPv6 GID (it is IPv4-mapped)"));
        }
        if (e->gid.is_link_local() && !allow_link_local &&
            link_local_is_unroutable(table.port().link_layer)) {
          rec.step(index, EntryVerdict::link_local, [&] { return detail::describe(*e); });
          return fail(errc::link_local_rejected, at() + detail::holds(*e) +
                                                     ", a link-local GID: not routed on " +
                                                     to_string(table.port().link_layer) +
                                                     " (the RTR passes and traffic times out); add "
                                                     "allow-link-local if both ends share the link");
        }
        rec.step(index, EntryVerdict::chosen, [&] { return detail::describe(*e); });
        return detail::select_entry(*e);
      });
}

}  // namespace gidpolicy
