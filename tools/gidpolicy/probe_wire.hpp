// The TCP side of `gidpolicy probe`: one connection between the two sides, messages as JSON
// lines, every read bounded by a deadline and every message validated like any input.
//
// Why: the probe must never wait on a dead or absent peer beyond its deadline, and must say in
// one line what went wrong with the peer (refused, absent, died mid-exchange, another protocol
// version, garbage on the socket). Each of those is a ProbeProblem with its own kind.
#pragma once

#include <gidpolicy/error.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy::cli {

using Json = nlohmann::ordered_json;

/// The version of the probe's exchange; a peer speaking another one is refused, named.
inline constexpr int kProbeProtocol = 1;
/// The longest message line accepted (the hello is a few hundred bytes).
inline constexpr std::size_t kProbeMaxLine = 4096;

using ProbeClock = std::chrono::steady_clock;

/// What went wrong with the peer or the socket, in one line.
struct ProbeProblem {
  enum class Kind : std::uint8_t {
    refused,    ///< nothing listens at the address (ECONNREFUSED)
    absent,     ///< no peer within the deadline (no connection, or a silent one)
    peer_died,  ///< the peer closed or reset the connection mid-exchange
    gave_up,    ///< the peer said it gives up ("abort": its selection failed), with its reason
    version,    ///< the peer speaks another protocol version
    garbage,    ///< the peer sent something that is not a probe message
    invalid,    ///< a probe message with a field out of range (named)
    socket,     ///< any other socket error (errno named)
  };
  Kind kind = Kind::socket;
  std::string text;
  /// Exit code: 2 for what the peer sent that is not valid input (version, garbage, invalid),
  /// 1 for a peer that is not there (refused, absent, died) or a socket error.
  [[nodiscard]] int exit_code() const noexcept;
};
std::string_view to_string(ProbeProblem::Kind k) noexcept;  ///< "refused", "absent", ...

/// How the two sides of a link talk: a TCP socket (pair mode) or MPI (gidpolicy-probe-mpi).
class ProbeChannel {
 public:
  virtual ~ProbeChannel() = default;
  /// Who the peer is, for messages ("127.0.0.1:18600", "rank 3").
  [[nodiscard]] virtual const std::string& peer() const noexcept = 0;
  /// Send one message (a JSON object, "gidpolicy_probe" and "type" added).
  virtual std::optional<ProbeProblem> send(const std::string& type, Json body) = 0;
  /// The next message of `type`, read until `deadline`; `phase` names what was awaited.
  virtual result<Json> receive(const std::string& type, std::string_view phase,
                               ProbeClock::time_point deadline, ProbeProblem& problem) = 0;
  /// Whether a message (or the peer's end) is waiting, without blocking.
  virtual bool readable() = 0;
  /// Take what arrived without blocking: false (with `problem`) when the peer is gone.
  virtual bool pump(std::string_view phase, ProbeProblem& problem) = 0;
};

/// One line of the exchange, checked: a JSON object with "gidpolicy_probe" (this version) and
/// "type" (`type`; "abort" is the peer giving up, with its reason). Garbage, another version, a
/// missing type or another type than expected set `problem`.
result<Json> parse_probe_message(const std::string& line, const std::string& type, std::string_view phase,
                                 const std::string& peer, ProbeProblem& problem);
/// A message as one line (no newline): {"gidpolicy_probe", "type", ...body}.
std::string probe_message_line(const std::string& type, const Json& body);

/// A connected probe socket. Not copyable; closes on destruction.
class ProbeSocket final : public ProbeChannel {
 public:
  ProbeSocket() = default;
  ProbeSocket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  ProbeSocket(ProbeSocket&& o) noexcept;
  ProbeSocket& operator=(ProbeSocket&& o) noexcept;
  ProbeSocket(const ProbeSocket&) = delete;
  ProbeSocket& operator=(const ProbeSocket&) = delete;
  ~ProbeSocket() override;

  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] const std::string& peer() const noexcept override { return peer_; }

  /// Send one message (a JSON object, "gidpolicy_probe" and "type" added). A peer that went
  /// away is peer_died.
  std::optional<ProbeProblem> send(const std::string& type, Json body) override;
  /// The next message of `type`, read until `deadline`. `phase` names what was awaited in the
  /// problem's text ("the peer's hello"). Validates the envelope (version, type); the body's
  /// fields are the caller's to validate (probe_field()).
  result<Json> receive(const std::string& type, std::string_view phase, ProbeClock::time_point deadline,
                       ProbeProblem& problem) override;
  /// Whether a complete line (or EOF) is waiting, without blocking: for the data phase, which
  /// watches the socket between polls of the CQ.
  bool readable() override;
  /// Read what has arrived, without blocking, into the buffer: false (with `problem` set) when
  /// the peer closed the connection, so a wait that expects nothing more still notices a peer
  /// that died. `phase` names what was being done.
  bool pump(std::string_view phase, ProbeProblem& problem) override;

 private:
  int fd_ = -1;
  std::string peer_;
  std::string buffer_;
};

/// Listen on [ADDR:]PORT (ADDR default: every address; PORT 0: any free port). Returns the
/// listening fd and the port bound; `problem` says why not.
std::optional<int> probe_listen(const std::string& spec, std::uint16_t& bound_port, ProbeProblem& problem);
/// Accept one peer on `listen_fd` until `deadline` (absent when none came).
std::optional<ProbeSocket> probe_accept(int listen_fd, ProbeClock::time_point deadline,
                                        ProbeProblem& problem);
/// Connect to HOST:PORT ([v6]:PORT for an IPv6 literal) until `deadline`: refused when nothing
/// listens, absent when the host does not answer in time.
std::optional<ProbeSocket> probe_connect(const std::string& spec, ProbeClock::time_point deadline,
                                         ProbeProblem& problem);

/// Split "[ADDR:]PORT" / "HOST:PORT" / "[v6]:PORT": false with `why` set when it does not parse.
bool split_host_port(const std::string& spec, bool host_required, std::string& host, std::uint16_t& port,
                     std::string& why);

/// Validated fields of a peer's message: each returns nullopt and sets `why` ("field 'mtu':
/// expected ..., found ...") when the field is absent, of another type or out of range.
std::optional<std::uint64_t> probe_field(const Json& j, const char* key, std::uint64_t max, std::string& why);
std::optional<std::string> probe_text(const Json& j, const char* key, std::size_t max_len, std::string& why);

}  // namespace gidpolicy::cli
