#include <gidpolicy/qp.hpp>

namespace gidpolicy {

std::string_view to_string(QpKind k) noexcept {
  switch (k) {
    case QpKind::rc:
      return "rc";
    case QpKind::uc:
      return "uc";
    case QpKind::ud:
      return "ud";
  }
  return "uc";
}

}  // namespace gidpolicy
