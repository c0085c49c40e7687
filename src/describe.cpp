#include "describe.hpp"

namespace gidpolicy::detail {

std::string where(const GidTable& table) { return port_name(table); }

std::string describe(const GidEntry& e) {
  switch (e.state) {
    case EntryState::empty:
      return "empty";
    case EntryState::unreadable:
      return "unreadable (" + e.read_error.message() + ")";
    case EntryState::valid:
      break;
  }
  if (e.gid.is_zero()) return "the zero GID";
  std::string s = e.gid.to_string();
  s += " (" + std::string(to_string(e.type)) + ")";
  if (!e.netdev.empty()) s += " on " + e.netdev;
  return s;
}

std::string holds(const GidEntry& e) {
  const std::string what = describe(e);
  if (e.state != EntryState::valid) return "index " + std::to_string(e.index) + " is " + what;
  return "index " + std::to_string(e.index) + " holds " + what;
}

}  // namespace gidpolicy::detail
