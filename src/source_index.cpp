#include <gidpolicy/source_index.hpp>

namespace gidpolicy {

std::string SourceIndex::to_string() const {
  return literal_ ? "literal(" + std::to_string(index_) + ")" : std::string("selected");
}

}  // namespace gidpolicy
