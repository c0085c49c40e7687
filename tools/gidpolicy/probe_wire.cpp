// `gidpolicy probe`'s TCP exchange (probe_wire.hpp): bounded connects, accepts and reads, and
// the envelope check of every message.
#include "probe_wire.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gidpolicy::cli {
namespace detail_probe_wire {

int remaining_ms(ProbeClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - ProbeClock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60'000));
}

double seconds_to(ProbeClock::time_point deadline, ProbeClock::time_point from) {
  return std::chrono::duration<double>(deadline - from).count();
}

std::string fmt_seconds(double s) { return fmt::format("{:.1f}", s < 0 ? 0.0 : s); }

// A short, printable excerpt of what a peer sent.
std::string excerpt(std::string_view bytes) {
  std::string out;
  for (char c : bytes.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  if (bytes.size() > 40) out += "...";
  return out;
}

std::string addr_text(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = {0};
  if (sa->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, sa, sizeof in);
    inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(in.sin_port));
  }
  sockaddr_in6 in6{};
  std::memcpy(&in6, sa, sizeof in6);
  inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
  return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6.sin6_port));
}

}  // namespace detail_probe_wire

using namespace detail_probe_wire;

int ProbeProblem::exit_code() const noexcept {
  switch (kind) {
    case Kind::version:
    case Kind::garbage:
    case Kind::invalid:
      return 2;
    case Kind::refused:
    case Kind::absent:
    case Kind::peer_died:
    case Kind::gave_up:
    case Kind::socket:
      break;
  }
  return 1;
}

std::string_view to_string(ProbeProblem::Kind k) noexcept {
  switch (k) {
    case ProbeProblem::Kind::refused:
      return "refused";
    case ProbeProblem::Kind::absent:
      return "absent";
    case ProbeProblem::Kind::peer_died:
      return "peer_died";
    case ProbeProblem::Kind::gave_up:
      return "gave_up";
    case ProbeProblem::Kind::version:
      return "version";
    case ProbeProblem::Kind::garbage:
      return "garbage";
    case ProbeProblem::Kind::invalid:
      return "invalid";
    case ProbeProblem::Kind::socket:
      break;
  }
  return "socket";
}

ProbeSocket::ProbeSocket(ProbeSocket&& o) noexcept
    : fd_(o.fd_), peer_(std::move(o.peer_)), buffer_(std::move(o.buffer_)) {
  o.fd_ = -1;
}

ProbeSocket& ProbeSocket::operator=(ProbeSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    peer_ = std::move(o.peer_);
    buffer_ = std::move(o.buffer_);
    o.fd_ = -1;
  }
  return *this;
}

ProbeSocket::~ProbeSocket() {
  if (fd_ >= 0) ::close(fd_);
}

std::string probe_message_line(const std::string& type, const Json& body) {
  Json msg;
  msg["gidpolicy_probe"] = kProbeProtocol;
  msg["type"] = type;
  for (auto it = body.begin(); it != body.end(); ++it) msg[it.key()] = it.value();
  return msg.dump();
}

std::optional<ProbeProblem> ProbeSocket::send(const std::string& type, Json body) {
  const std::string line = probe_message_line(type, body) + "\n";
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd p{fd_, POLLOUT, 0};
        (void)::poll(&p, 1, 100);
        continue;
      }
      const int err = errno;
      if (err == EPIPE || err == ECONNRESET)
        return ProbeProblem{ProbeProblem::Kind::peer_died,
                            "the peer " + peer_ + " closed the connection (" + std::strerror(err) +
                                ") while this side sent its " + type +
                                " message (it died or was killed mid-exchange)"};
      return ProbeProblem{ProbeProblem::Kind::socket,
                          "sending the " + type + " message to " + peer_ + ": " + std::strerror(err)};
    }
    off += static_cast<std::size_t>(n);
  }
  return std::nullopt;
}

bool ProbeSocket::readable() {
  if (buffer_.find('\n') != std::string::npos) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

result<Json> parse_probe_message(const std::string& line, const std::string& type, std::string_view phase,
                                 const std::string& peer, ProbeProblem& problem) {
  Json j = Json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("gidpolicy_probe")) {
    problem = {ProbeProblem::Kind::garbage, "garbage on the socket from " + peer + " during " +
                                                std::string(phase) + ": '" + excerpt(line) +
                                                "' is not a gidpolicy probe message"};
    return fail(errc::invalid_argument, problem.text);
  }
  const Json& v = j["gidpolicy_probe"];
  if (!v.is_number_integer() || v.get<long long>() != kProbeProtocol) {
    problem = {ProbeProblem::Kind::version, "the peer " + peer + " speaks probe protocol version " +
                                                excerpt(v.dump()) + ", this gidpolicy speaks " +
                                                std::to_string(kProbeProtocol) +
                                                ": run the same gidpolicy version on both sides"};
    return fail(errc::invalid_argument, problem.text);
  }
  if (!j.contains("type") || !j["type"].is_string()) {
    problem = {ProbeProblem::Kind::invalid,
               "the peer's message during " + std::string(phase) + ": field 'type': expected a string"};
    return fail(errc::invalid_argument, problem.text);
  }
  const std::string got = j["type"].get<std::string>();
  if (got == "abort") {
    // The peer gave up and says why: its own one line, passed on.
    std::string why;
    auto text = probe_text(j, "reason", 300, why);
    problem = {ProbeProblem::Kind::gave_up,
               "the peer " + peer + " gave up during " + std::string(phase) + ": " + (text ? *text : why)};
    return fail(errc::invalid_argument, problem.text);
  }
  if (got != type) {
    problem = {ProbeProblem::Kind::invalid, "the peer sent a '" + excerpt(got) + "' message during " +
                                                std::string(phase) + ", expected '" + type + "'"};
    return fail(errc::invalid_argument, problem.text);
  }
  return j;
}

bool ProbeSocket::pump(std::string_view phase, ProbeProblem& problem) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return true;
  char chunk[1024];
  const ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
    problem = {ProbeProblem::Kind::peer_died, "the peer " + peer_ + " closed the connection during " +
                                                  std::string(phase) +
                                                  " (it died or was killed mid-exchange)"};
    return false;
  }
  if (n > 0 && buffer_.size() < 2 * kProbeMaxLine) buffer_.append(chunk, static_cast<std::size_t>(n));
  return true;
}

result<Json> ProbeSocket::receive(const std::string& type, std::string_view phase,
                                  ProbeClock::time_point deadline, ProbeProblem& problem) {
  const auto started = ProbeClock::now();
  for (;;) {
    const std::size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      const std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return parse_probe_message(line, type, phase, peer_, problem);
    }
    if (buffer_.size() > kProbeMaxLine) {
      problem = {ProbeProblem::Kind::garbage,
                 "garbage on the socket from " + peer_ + " during " + std::string(phase) + ": more than " +
                     std::to_string(kProbeMaxLine) + " bytes without a newline ('" + excerpt(buffer_) + "')"};
      return fail(errc::invalid_argument, problem.text);
    }
    // A first byte that cannot open a message is garbage at once: no need to wait for a line.
    if (!buffer_.empty() && buffer_.front() != '{') {
      problem = {ProbeProblem::Kind::garbage, "garbage on the socket from " + peer_ + " during " +
                                                  std::string(phase) + ": '" + excerpt(buffer_) +
                                                  "' is not a gidpolicy probe message"};
      return fail(errc::invalid_argument, problem.text);
    }
    const int wait = remaining_ms(deadline);
    if (wait == 0) {
      problem = {ProbeProblem::Kind::absent, "the peer " + peer_ + " sent nothing for " +
                                                 fmt_seconds(seconds_to(deadline, started)) + " s: no " +
                                                 std::string(phase) + " within the deadline"};
      return fail(errc::invalid_argument, problem.text);
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, std::min(wait, 200));
    if (r < 0 && errno != EINTR) {
      problem = {ProbeProblem::Kind::socket, "poll on the socket to " + peer_ + ": " + std::strerror(errno)};
      return fail(errc::invalid_argument, problem.text);
    }
    if (r <= 0) continue;
    char chunk[1024];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
      problem = {ProbeProblem::Kind::peer_died, "the peer " + peer_ + " closed the connection during " +
                                                    std::string(phase) +
                                                    " (it died or was killed mid-exchange)"};
      return fail(errc::invalid_argument, problem.text);
    }
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      problem = {ProbeProblem::Kind::socket, "reading from " + peer_ + ": " + std::strerror(errno)};
      return fail(errc::invalid_argument, problem.text);
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

bool split_host_port(const std::string& spec, bool host_required, std::string& host, std::uint16_t& port,
                     std::string& why) {
  std::string port_text;
  if (!spec.empty() && spec.front() == '[') {
    const auto close = spec.find(']');
    if (close == std::string::npos || close + 1 >= spec.size() || spec[close + 1] != ':') {
      why = "expected [IPV6]:PORT, found '" + excerpt(spec) + "'";
      return false;
    }
    host = spec.substr(1, close - 1);
    port_text = spec.substr(close + 2);
  } else {
    const auto colon = spec.rfind(':');
    if (colon == std::string::npos) {
      host.clear();
      port_text = spec;
    } else {
      host = spec.substr(0, colon);
      port_text = spec.substr(colon + 1);
    }
  }
  if (host_required && host.empty()) {
    why = "expected HOST:PORT, found '" + excerpt(spec) + "'";
    return false;
  }
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoul(port_text) > 65535 || (host_required && std::stoul(port_text) == 0)) {
    why = std::string("expected a port ") + (host_required ? "1" : "0") + "..65535, found '" +
          excerpt(port_text) + "'";
    return false;
  }
  port = static_cast<std::uint16_t>(std::stoul(port_text));
  return true;
}

std::optional<int> probe_listen(const std::string& spec, std::uint16_t& bound_port, ProbeProblem& problem) {
  std::string host, why;
  std::uint16_t port = 0;
  if (!split_host_port(spec, false, host, port, why)) {
    problem = {ProbeProblem::Kind::invalid, "--listen: " + why};
    return std::nullopt;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int gai = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (gai != 0) {
    problem = {ProbeProblem::Kind::invalid, "--listen " + excerpt(spec) + ": " + ::gai_strerror(gai)};
    return std::nullopt;
  }
  int err = 0;
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      sockaddr* sa = reinterpret_cast<sockaddr*>(&ss);
      if (::getsockname(fd, sa, &len) == 0) {
        const std::string text = addr_text(sa);
        bound_port = static_cast<std::uint16_t>(std::stoul(text.substr(text.rfind(':') + 1)));
      }
      ::freeaddrinfo(res);
      return fd;
    }
    err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(res);
  problem = {ProbeProblem::Kind::socket, "--listen " + excerpt(spec) + ": " + std::strerror(err)};
  return std::nullopt;
}

std::optional<ProbeSocket> probe_accept(int listen_fd, ProbeClock::time_point deadline,
                                        ProbeProblem& problem) {
  const auto started = ProbeClock::now();
  for (;;) {
    const int wait = remaining_ms(deadline);
    if (wait == 0) {
      problem = {ProbeProblem::Kind::absent, "absent peer: nobody connected within " +
                                                 fmt_seconds(seconds_to(deadline, started)) +
                                                 " s (start `gidpolicy probe --connect` on the other host)"};
      return std::nullopt;
    }
    pollfd p{listen_fd, POLLIN, 0};
    const int r = ::poll(&p, 1, std::min(wait, 200));
    if (r <= 0) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    sockaddr* sa = reinterpret_cast<sockaddr*>(&ss);
    const int fd = ::accept4(listen_fd, sa, &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      problem = {ProbeProblem::Kind::socket, std::string("accept: ") + std::strerror(errno)};
      return std::nullopt;
    }
    return ProbeSocket(fd, addr_text(sa));
  }
}

std::optional<ProbeSocket> probe_connect(const std::string& spec, ProbeClock::time_point deadline,
                                         ProbeProblem& problem) {
  std::string host, why;
  std::uint16_t port = 0;
  if (!split_host_port(spec, true, host, port, why)) {
    problem = {ProbeProblem::Kind::invalid, "--connect: " + why};
    return std::nullopt;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int gai = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (gai != 0) {
    problem = {ProbeProblem::Kind::invalid, "--connect " + excerpt(spec) + ": " + ::gai_strerror(gai)};
    return std::nullopt;
  }
  const auto started = ProbeClock::now();
  ProbeProblem last{ProbeProblem::Kind::socket, "--connect " + excerpt(spec) + ": no address"};
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        int r = 0;
        while ((r = ::poll(&p, 1, remaining_ms(deadline))) < 0 && errno == EINTR) {
        }
        if (r == 0) {
          err = ETIMEDOUT;
        } else {
          socklen_t len = sizeof err;
          (void)::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    if (err == 0) {
      // Back to blocking reads bounded by poll(): receive() never blocks past its deadline.
      const int flags = ::fcntl(fd, F_GETFL);
      (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      std::string peer = addr_text(a->ai_addr);
      ::freeaddrinfo(res);
      return ProbeSocket(fd, std::move(peer));
    }
    ::close(fd);
    const std::string where = addr_text(a->ai_addr);
    if (err == ECONNREFUSED)
      last = {ProbeProblem::Kind::refused, "connection refused by " + where +
                                               ": no probe listens there (start `gidpolicy probe --listen " +
                                               std::to_string(port) + "` on that host first)"};
    else if (err == ETIMEDOUT)
      last = {ProbeProblem::Kind::absent, "absent peer: " + where + " did not answer within " +
                                              fmt_seconds(seconds_to(deadline, started)) + " s"};
    else
      last = {ProbeProblem::Kind::socket, "cannot reach " + where + ": " + std::strerror(err)};
  }
  ::freeaddrinfo(res);
  problem = last;
  return std::nullopt;
}

std::optional<std::uint64_t> probe_field(const Json& j, const char* key, std::uint64_t max,
                                         std::string& why) {
  if (!j.contains(key)) {
    why = std::string("field '") + key + "': missing";
    return std::nullopt;
  }
  const Json& v = j[key];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<long long>() >= 0)) {
    why = std::string("field '") + key + "': expected an integer 0.." + std::to_string(max) + ", found " +
          excerpt(v.dump());
    return std::nullopt;
  }
  const auto n = v.get<std::uint64_t>();
  if (n > max) {
    why = std::string("field '") + key + "': expected an integer 0.." + std::to_string(max) + ", found " +
          std::to_string(n);
    return std::nullopt;
  }
  return n;
}

std::optional<std::string> probe_text(const Json& j, const char* key, std::size_t max_len, std::string& why) {
  if (!j.contains(key) || !j[key].is_string()) {
    why = std::string("field '") + key + "': expected a string";
    return std::nullopt;
  }
  std::string s = j[key].get<std::string>();
  if (s.size() > max_len) {
    why = std::string("field '") + key + "': longer than " + std::to_string(max_len) + " bytes";
    return std::nullopt;
  }
  return s;
}

}  // namespace gidpolicy::cli
