#include <gidpolicy/trace.hpp>

namespace gidpolicy {

std::string_view to_string(Verdict v) noexcept {
  switch (v) {
    case Verdict::chosen:
      return "chosen";
    case Verdict::candidate:
      return "candidate";
    case Verdict::lower_rank:
      return "lower_rank";
    case Verdict::empty:
      return "empty";
    case Verdict::not_shown:
      return "not_shown";
    case Verdict::unreadable:
      return "unreadable";
    case Verdict::zero:
      return "zero";
    case Verdict::link_local:
      return "link_local";
    case Verdict::wrong_type:
      return "wrong_type";
    case Verdict::wrong_family:
      return "wrong_family";
    case Verdict::not_ipv4_mapped:
      return "not_ipv4_mapped";
    case Verdict::outside_subnet:
      return "outside_subnet";
    case Verdict::excluded_subnet:
      return "excluded_subnet";
    case Verdict::other_netdev:
      return "other_netdev";
    case Verdict::not_local_address:
      return "not_local_address";
    case Verdict::index_above_255:
      return "index_above_255";
    case Verdict::out_of_range:
      return "out_of_range";
    case Verdict::not_requested:
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
