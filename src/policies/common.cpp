#include "common.hpp"

namespace gidpolicy::detail {

std::string note_for(const GidEntry& e) {
  switch (e.state) {
    case EntryState::empty:
      return {};
    case EntryState::unreadable:
      return e.read_error.message();
    case EntryState::valid:
      break;
  }
  return describe(e);
}

std::string address_to_spec(const Gid& g) { return g.is_ipv4_mapped() ? g.ipv4_string() : g.to_string(); }

}  // namespace gidpolicy::detail
