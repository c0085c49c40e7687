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

Gid stand_in_peer(const GidEntry* source) {
  if (source && source->usable() && !source->gid.is_ipv4_mapped())
    return Gid::parse("2001:db8::1").value();  // documentation prefix (RFC 3849)
  return Gid::ipv4_mapped(0xc0000201u);        // 192.0.2.1 (TEST-NET-1, RFC 5737)
}

}  // namespace gidpolicy::detail
