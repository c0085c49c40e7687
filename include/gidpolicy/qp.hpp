// QpKind: the queue-pair transport, as far as the builder, the driver models and the verbs
// seam distinguish them.
//
// Its own header because three layers need it and none should pull in another's: the RTR
// builder (which mask bits INIT->RTR requires), the driver models (Apple's driver refuses RC)
// and the verbs seam (ibv_qp_type). The hardware gotcha it carries: UC and RC need different
// INIT->RTR attributes (RC adds MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER), and a UC/RC mix-up is an
// EINVAL from the driver that names no field.
//
// Example:
//   gidpolicy::QpKind k = gidpolicy::QpKind::uc;
//   std::cout << gidpolicy::to_string(k);   // "uc"
#pragma once

#include <cstdint>
#include <string_view>

namespace gidpolicy {

/// The QP transport, as far as the models distinguish them.
enum class QpKind : std::uint8_t { rc, uc, ud };
std::string_view to_string(QpKind k) noexcept;  ///< "rc", "uc", "ud"

}  // namespace gidpolicy
