// What a side channel's errno means, and which side of a connection a program's error line
// comes from.
//
// Before any RTR, two ranks exchange their GIDs, QP numbers and PSNs over a TCP connection (JACCL
// calls it the side channel; MLX's ring backend, NCCL's bootstrap and perftest do the same). A
// number in a log can come from that socket or from ibv_modify_qp, and the two mean unrelated
// things: on macOS 60 is ETIMEDOUT from both (a SYN nobody answered, or an RTR routed from the
// fe80 link-local), and 61 is ECONNREFUSED from the socket (no rank listening yet) while no RTR
// returns it; on Linux 61 is ENODATA, an RTR from an empty slot. diagnose_side_channel() ranks the
// causes of a socket errno; read_error_message() reads a program's error line
// ("[jaccl] Couldn't connect (error: 60)", "[jaccl] Changing queue pair to RTR failed with errno
// 22") and says which call produced the number, so that the right model explains it.
//
// The gotcha: JACCL prints both kinds as "error N" or "errno N" with no word for the side; only
// the text before the number tells. A number alone gets both explanations (explain-errno does).
//
// Sources: docs/facts.md#side-channel (JACCL's tcp.cpp messages; the Darwin and Linux errno
// numbers).
//
// Example:
//   if (auto m = gidpolicy::read_error_message("[jaccl] Couldn't connect (error: 60)"); m && m->err)
//     for (const auto& c : gidpolicy::diagnose_side_channel(*m->err, gidpolicy::Platform::darwin,
//                                                           m->call).causes)
//       std::cout << c.summary << "\n";
#pragma once

#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/driver_model.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy {

/// The socket call of a side channel that failed; `unknown` when the message does not say.
enum class SocketCall : std::uint8_t { connect, bind, accept, send, recv, unknown };
/// "connect", "bind", ...
std::string_view to_string(SocketCall c) noexcept;

/// The errno numbers of the socket errors a side channel meets, per platform (<sys/errno.h> on
/// Darwin, <asm-generic/errno.h> on Linux): they differ, as the RTR ones do (Errnos).
struct SocketErrnos {
  int econnrefused, etimedout, ehostunreach, ehostdown, enetunreach, eaddrnotavail, eaddrinuse, econnreset,
      epipe, econnaborted;
  static constexpr SocketErrnos linux_kernel() noexcept {
    return {111, 110, 113, 112, 101, 99, 98, 104, 32, 103};
  }
  static constexpr SocketErrnos darwin() noexcept { return {61, 60, 65, 64, 51, 49, 48, 54, 32, 53}; }
  static constexpr SocketErrnos of(Platform p) noexcept {
    return p == Platform::darwin ? darwin() : linux_kernel();
  }
};
/// "ECONNREFUSED", "EHOSTUNREACH", ... for a platform's socket errno; "errno N" for any other.
std::string socket_errno_name(Platform p, int err);
/// The socket errno named `name` ("ECONNREFUSED") on `p`; nullopt for a name not in SocketErrnos.
std::optional<int> socket_errno_from_name(Platform p, std::string_view name) noexcept;

/// The causes of `err` returned by `call` on a side channel's TCP socket on `p`, most likely
/// first (Diagnosis::causes, ids such as "nobody_listening", "syn_unanswered"). An errno the
/// side channel has no model for yields one "unknown" cause naming it. `peer_closed`: the
/// call read the end of the stream (no errno: JACCL's "peer closed the side channel"); `err`
/// is then ignored.
Diagnosis diagnose_side_channel(int err, Platform p, SocketCall call = SocketCall::unknown,
                                bool peer_closed = false);

/// Which side of a connection a program's error line comes from.
enum class ErrorSide : std::uint8_t {
  rtr,           ///< ibv_modify_qp to RTR: diagnose()
  queue_pair,    ///< another QP transition (INIT, RTS): not modelled
  side_channel,  ///< the TCP socket the ranks exchange their GIDs over: diagnose_side_channel()
};
/// "rtr", "queue_pair", "side_channel".
std::string_view to_string(ErrorSide s) noexcept;

/// What one error line says.
struct ErrorMessage {
  std::string program;  ///< the line's tag without brackets ("jaccl", "ring"), or "" when none
  ErrorSide side = ErrorSide::side_channel;
  SocketCall call = SocketCall::unknown;  ///< side_channel only
  std::string transition;                 ///< queue_pair: "INIT" or "RTS"
  std::optional<int> err;                 ///< the number; none when the peer closed the stream
  bool peer_closed = false;               ///< "peer closed the side channel"
};

/// The longest line read_error_message() reads; longer text is not a log line.
inline constexpr std::size_t kMaxErrorMessage = 4096;

/// Reads an error line as JACCL and MLX's ring backend print them ("[jaccl] Couldn't connect
/// (error: 60)", "Couldn't bind socket (error: 48)", "Accept failed (error: 53)", "Send failed
/// with errno=32", "Recv failed with errno=54", "Recv failed: peer closed the side channel",
/// "Changing queue pair to RTR failed with errno 22") and Python's socket errors ("[Errno 61]
/// Connection refused"); a "RuntimeError: " prefix is allowed. nullopt for text it does not
/// recognise (or longer than kMaxErrorMessage): the caller then has no side to go on.
std::optional<ErrorMessage> read_error_message(std::string_view text);

}  // namespace gidpolicy
