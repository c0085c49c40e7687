#include <gidpolicy/agreement.hpp>

#include "describe.hpp"

#include <vector>

namespace gidpolicy {
namespace {

/// "index 2" or "index 2 (roce_v1) and 3 (roce_v2)": mlx5 stores each address twice, once per
/// RoCE version, and which twin was meant matters.
std::string homes(const GidTable& table, const Gid& g) {
  std::vector<const GidEntry*> at;
  for (const auto& e : table)
    if (e.state == EntryState::valid && e.gid == g) at.push_back(&e);
  if (at.size() == 1) return "index " + std::to_string(at.front()->index);
  std::string s = "indices ";
  for (std::size_t i = 0; i < at.size(); ++i) {
    if (i) s += i + 1 == at.size() ? " and " : ", ";
    s += std::to_string(at[i]->index) + " (" + std::string(to_string(at[i]->type)) + ")";
  }
  return s;
}

}  // namespace

result<void> Agreement::to_result() const {
  if (agrees) return success();
  return fail(errc::disagreement, explanation);
}

Agreement check_agreement(const GidTable& table, const Gid& advertised, std::uint32_t sgid_index) {
  Agreement a;
  a.sgid_index = sgid_index;
  a.advertised = advertised;
  const GidEntry* home = advertised.is_zero() ? nullptr : table.find(advertised);
  if (home) a.advertised_at = home->index;
  const std::string at = "sgid_index " + std::to_string(sgid_index);

  std::string what;  // why it does not agree
  if (sgid_index > 255) {
    what = at + " does not fit the uint8_t grh.sgid_index: it would wrap to " +
           std::to_string(sgid_index & 0xffu);
  } else if (sgid_index >= table.length()) {
    what = at + " is not below " +
           (table.port().gid_tbl_len ? "gid_tbl_len " : std::string("the entries listed: ")) +
           std::to_string(table.length());
  } else if (const GidEntry* e = table.find(sgid_index); !e) {
    what = table.holes() == Holes::not_shown ? at + " was not printed by the source" : at + " is empty";
  } else {
    a.at_index = *e;
    if (e->state == EntryState::empty) {
      what = at + " is empty";
    } else if (e->state == EntryState::unreadable) {
      what = at + " could not be read (" + e->read_error.message() + ")";
    } else if (e->gid.is_zero()) {
      what = at + " holds the zero GID";
    } else if (e->gid != advertised) {
      what = at + " holds " + detail::describe(*e) + ", not the advertised GID";
    } else {
      a.agrees = true;
      a.explanation = at + " holds the advertised GID " + detail::describe(*e);
      return a;
    }
  }
  if (advertised.is_zero())
    a.explanation = what + "; the advertised GID is the zero GID (an empty slot was advertised)";
  else if (home)
    a.explanation =
        what + "; the advertised GID " + advertised.to_string() + " is at " + homes(table, advertised);
  else
    a.explanation = what + "; no entry holds the advertised GID " + advertised.to_string();
  return a;
}

}  // namespace gidpolicy
