#include <gidpolicy/trace.hpp>

namespace gidpolicy {

std::string_view to_string(EntryVerdict v) noexcept {
  switch (v) {
    case EntryVerdict::chosen:
      return "chosen";
    case EntryVerdict::candidate:
      return "candidate";
    case EntryVerdict::lower_rank:
      return "lower_rank";
    case EntryVerdict::empty:
      return "empty";
    case EntryVerdict::not_shown:
      return "not_shown";
    case EntryVerdict::unreadable:
      return "unreadable";
    case EntryVerdict::zero:
      return "zero";
    case EntryVerdict::link_local:
      return "link_local";
    case EntryVerdict::wrong_type:
      return "wrong_type";
    case EntryVerdict::wrong_family:
      return "wrong_family";
    case EntryVerdict::not_ipv4_mapped:
      return "not_ipv4_mapped";
    case EntryVerdict::outside_subnet:
      return "outside_subnet";
    case EntryVerdict::excluded_subnet:
      return "excluded_subnet";
    case EntryVerdict::other_netdev:
      return "other_netdev";
    case EntryVerdict::not_local_address:
      return "not_local_address";
    case EntryVerdict::index_above_255:
      return "index_above_255";
    case EntryVerdict::out_of_range:
      return "out_of_range";
    case EntryVerdict::not_requested:
      return "not_requested";
  }
  return "unknown";
}

std::string Trace::to_string() const {
  std::string out;
  for (const auto& a : attempts) {
    out += a.policy;
    out += a.error.empty() ? ": selected\n" : ": failed: " + a.error + "\n";
    for (const auto& s : a.steps) {
      out += "  [" + std::to_string(s.index) + "] ";
      out += gidpolicy::to_string(s.verdict);
      if (!s.note.empty()) {
        out += ": ";
        out += s.note;
      }
      out += '\n';
    }
  }
  return out;
}

}  // namespace gidpolicy
