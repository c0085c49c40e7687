// Side-channel errnos and error lines (side_channel.hpp).
#include <gidpolicy/side_channel.hpp>

#include <cctype>
#include <cerrno>
#include <utility>
#include <vector>

namespace gidpolicy {

#if defined(__linux__) || defined(__APPLE__)
// The hand-written numbers must be this host's <cerrno> (the other platform's are checked by
// the tests against its <sys/errno.h> values, written in docs/facts.md).
namespace {
constexpr SocketErrnos kHostSocket = SocketErrnos::of(host_platform());
static_assert(kHostSocket.econnrefused == ECONNREFUSED && kHostSocket.etimedout == ETIMEDOUT &&
              kHostSocket.ehostunreach == EHOSTUNREACH && kHostSocket.ehostdown == EHOSTDOWN);
static_assert(kHostSocket.enetunreach == ENETUNREACH && kHostSocket.eaddrnotavail == EADDRNOTAVAIL &&
              kHostSocket.eaddrinuse == EADDRINUSE && kHostSocket.econnreset == ECONNRESET);
static_assert(kHostSocket.epipe == EPIPE && kHostSocket.econnaborted == ECONNABORTED);
}  // namespace
#endif

std::string_view to_string(SocketCall c) noexcept {
  switch (c) {
    case SocketCall::connect:
      return "connect";
    case SocketCall::bind:
      return "bind";
    case SocketCall::accept:
      return "accept";
    case SocketCall::send:
      return "send";
    case SocketCall::recv:
      return "recv";
    case SocketCall::unknown:
      break;
  }
  return "unknown";
}

std::string_view to_string(ErrorSide s) noexcept {
  switch (s) {
    case ErrorSide::rtr:
      return "rtr";
    case ErrorSide::queue_pair:
      return "queue_pair";
    case ErrorSide::side_channel:
      break;
  }
  return "side_channel";
}

// A named namespace, not an anonymous one: a unity build puts this file in one translation unit
// with others whose helpers have the same names.
namespace side_channel_detail {

struct Named {
  int SocketErrnos::*field;
  const char* name;
};
constexpr Named kNames[] = {
    {&SocketErrnos::econnrefused, "ECONNREFUSED"},
    {&SocketErrnos::etimedout, "ETIMEDOUT"},
    {&SocketErrnos::ehostunreach, "EHOSTUNREACH"},
    {&SocketErrnos::ehostdown, "EHOSTDOWN"},
    {&SocketErrnos::enetunreach, "ENETUNREACH"},
    {&SocketErrnos::eaddrnotavail, "EADDRNOTAVAIL"},
    {&SocketErrnos::eaddrinuse, "EADDRINUSE"},
    {&SocketErrnos::econnreset, "ECONNRESET"},
    {&SocketErrnos::epipe, "EPIPE"},
    {&SocketErrnos::econnaborted, "ECONNABORTED"},
};

CandidateCause cause(std::string id, Likelihood l, std::string summary, std::string remedy) {
  return CandidateCause{std::move(id), l, std::move(summary), std::move(remedy)};
}

// The connect() causes: the SYN's fate says where to look.
void connect_causes(int err, const SocketErrnos& e, std::vector<CandidateCause>& out) {
  if (err == e.econnrefused) {
    out.push_back(
        cause("nobody_listening", Likelihood::likely,
              "the peer answered, but nothing listens at that address and port: the rank that "
              "accepts (JACCL's rank 0, the coordinator) has not started yet, has already failed, "
              "or listens on another port",
              "start the accepting rank first, or within the connecting rank's retries (JACCL: 4 "
              "attempts, 1, 2, 4 and 8 s apart); read its log for an earlier error; check the port"));
    out.push_back(
        cause("wrong_address", Likelihood::possible,
              "the address belongs to another host than the accepting rank's (a stale or swapped "
              "hostfile entry)",
              "check the hostfile's ips (or the coordinator address) against that host's addresses"));
  } else if (err == e.etimedout) {
    out.push_back(cause("syn_unanswered", Likelihood::likely,
                        "nothing answered the connection request: a firewall drops it (macOS: the "
                        "application firewall; Linux: nftables or iptables), or the peer is down",
                        "allow the program's incoming connections on the accepting host, or try with the "
                        "firewall off; ping the address from this host"));
    out.push_back(cause("wrong_interface", Likelihood::possible,
                        "the address is reached over another interface than the cable it lives on: several "
                        "interfaces with a 169.254/16 address (the Thunderbolt Bridge and each port), or a "
                        "VPN that routes the address elsewhere",
                        "use an address on the cable's own interface; see where it goes: route -n get ADDR "
                        "(macOS) or ip route get ADDR (Linux)"));
  } else if (err == e.ehostunreach || err == e.ehostdown) {
    out.push_back(
        cause("no_neighbour", Likelihood::likely,
              "no route to the peer, or nobody answered ARP: this host has no address in the "
              "peer's subnet on the cable's interface (a Thunderbolt port without IPv4), the peer's "
              "interface has none, or the link is down",
              "give both ends of the cable an IPv4 address in one subnet (gidpolicy doctor says "
              "which interface lacks one); check the cable"));
  } else if (err == e.enetunreach) {
    out.push_back(cause("no_route", Likelihood::likely,
                        "no interface of this host is in the peer's network and no route covers it",
                        "give the cable's interface an address in the peer's subnet, or add a route"));
  }
}

void bind_causes(int err, const SocketErrnos& e, std::vector<CandidateCause>& out) {
  if (err == e.eaddrnotavail) {
    out.push_back(cause("address_not_here", Likelihood::likely,
                        "the address to listen on is not one of this host's: the accepting rank was given "
                        "another host's address, or its interface lost the address",
                        "give the accepting rank an address of its own host (ifconfig -a or ip addr lists "
                        "them)"));
  } else if (err == e.eaddrinuse) {
    out.push_back(cause("port_taken", Likelihood::likely,
                        "another socket holds that port: a run still going, or another job",
                        "end the earlier run (lsof -i :PORT names it) or use another port"));
  }
}

void stream_causes(int err, const SocketErrnos& e, bool peer_closed, std::vector<CandidateCause>& out) {
  if (peer_closed || err == e.econnreset || err == e.epipe || err == e.econnaborted) {
    out.push_back(
        cause("peer_ended", Likelihood::likely,
              "the other rank closed the connection or ended (it failed during initialisation, "
              "crashed, ran out of memory or was killed) while the ranks were exchanging",
              "read the other ranks' logs: the first error there is the cause, this one follows it"));
  } else if (err == e.etimedout) {
    out.push_back(cause("link_lost", Likelihood::likely,
                        "the connection stopped answering: the cable was pulled, or the peer hung",
                        "check the cable and the peer's process"));
  }
}

}  // namespace side_channel_detail

std::string socket_errno_name(Platform p, int err) {
  const SocketErrnos e = SocketErrnos::of(p);
  for (const side_channel_detail::Named& n : side_channel_detail::kNames)
    if (e.*n.field == err) return n.name;
  return "errno " + std::to_string(err);
}

std::optional<int> socket_errno_from_name(Platform p, std::string_view name) noexcept {
  const SocketErrnos e = SocketErrnos::of(p);
  for (const side_channel_detail::Named& n : side_channel_detail::kNames)
    if (name == n.name) return e.*n.field;
  return std::nullopt;
}

Diagnosis diagnose_side_channel(int err, Platform p, SocketCall call, bool peer_closed) {
  const SocketErrnos e = SocketErrnos::of(p);
  Diagnosis d;
  d.platform = p;
  d.err = peer_closed ? 0 : err;
  d.name = peer_closed ? "the peer closed the connection (no errno)" : socket_errno_name(p, err);
  std::vector<CandidateCause> out;
  if (peer_closed) {
    side_channel_detail::stream_causes(0, e, true, out);
  } else {
    // A call the line does not name: every call's causes for this number.
    // A call the line does not name: every call's causes for this number, each saying its call.
    const bool any = call == SocketCall::unknown;
    const auto from = [&](std::string_view what, auto&& add) {
      const std::size_t before = out.size();
      add();
      if (any)
        for (std::size_t i = before; i < out.size(); ++i)
          out[i].summary = std::string(what) + ": " + out[i].summary;
    };
    if (any || call == SocketCall::connect)
      from("at connect()", [&] { side_channel_detail::connect_causes(err, e, out); });
    if (any || call == SocketCall::bind)
      from("at bind()", [&] { side_channel_detail::bind_causes(err, e, out); });
    if (any || call == SocketCall::send || call == SocketCall::recv || call == SocketCall::accept)
      from("at send() or recv()", [&] { side_channel_detail::stream_causes(err, e, false, out); });
  }
  if (out.empty()) {
    std::string s = "errno " + std::to_string(err) + " on " + std::string(to_string(p)) +
                    (d.name.rfind("errno ", 0) == 0 ? "" : " (" + d.name + ")") +
                    " is not one gidpolicy has a model for from a side channel's " +
                    (call == SocketCall::unknown ? std::string("socket") : std::string(to_string(call)));
    const Platform other = p == Platform::darwin ? Platform::linux_kernel : Platform::darwin;
    const std::string other_name = socket_errno_name(other, err);
    if (other_name.rfind("errno ", 0) != 0)
      s += "; on " + std::string(to_string(other)) + " " + std::to_string(err) + " is " + other_name +
           ": was the number captured on the other platform?";
    out.push_back(side_channel_detail::cause("unknown", Likelihood::possible, std::move(s), ""));
  }
  d.causes = std::move(out);
  return d;
}

// A named namespace, not an anonymous one: a unity build puts this file in one translation unit
// with others whose helpers have the same names.
namespace side_channel_detail {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The decimal number at the start of `s` (at most 4 digits: errnos are small), and its length.
std::optional<std::pair<int, std::size_t>> leading_number(std::string_view s) {
  std::size_t n = 0;
  int v = 0;
  while (n < s.size() && n < 5 && std::isdigit(static_cast<unsigned char>(s[n])) != 0) {
    v = v * 10 + (s[n] - '0');
    ++n;
  }
  if (n == 0 || n > 4) return std::nullopt;
  return std::pair{v, n};
}

// `s` is `prefix` then a number then `suffix` (then only white space).
std::optional<int> number_between(std::string_view s, std::string_view prefix, std::string_view suffix) {
  if (!starts_with(s, prefix)) return std::nullopt;
  s.remove_prefix(prefix.size());
  const auto num = leading_number(s);
  if (!num) return std::nullopt;
  s.remove_prefix(num->second);
  if (!starts_with(s, suffix)) return std::nullopt;
  s.remove_prefix(suffix.size());
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return std::nullopt;
  return num->first;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

}  // namespace side_channel_detail

std::optional<ErrorMessage> read_error_message(std::string_view text) {
  if (text.size() > kMaxErrorMessage) return std::nullopt;
  std::string_view s = side_channel_detail::trim(text);
  for (std::string_view prefix : {"RuntimeError: ", "ValueError: ", "OSError: ", "ConnectionRefusedError: ",
                                  "TimeoutError: ", "ConnectionResetError: "})
    if (side_channel_detail::starts_with(s, prefix)) {
      s.remove_prefix(prefix.size());
      break;
    }
  ErrorMessage m;
  // Python's socket errors: "[Errno 61] Connection refused" (a socket's, whatever the call).
  if (const auto n = side_channel_detail::number_between(
          s.substr(0, s.find(']') == std::string_view::npos ? 0 : s.find(']') + 1), "[Errno ", "]")) {
    m.err = *n;
    return m;
  }
  // "[tag] ": JACCL's and the ring backend's.
  if (side_channel_detail::starts_with(s, "[")) {
    const auto close = s.find(']');
    if (close == std::string_view::npos || close > 32) return std::nullopt;
    m.program = std::string(s.substr(1, close - 1));
    s = side_channel_detail::trim(s.substr(close + 1));
  }
  struct Shape {
    std::string_view prefix, suffix;
    ErrorSide side;
    SocketCall call;
    std::string_view transition;
  };
  static constexpr Shape kShapes[] = {
      {"Couldn't connect (error: ", ")", ErrorSide::side_channel, SocketCall::connect, ""},
      {"Couldn't bind socket (error: ", ")", ErrorSide::side_channel, SocketCall::bind, ""},
      {"Couldn't listen (error: ", ")", ErrorSide::side_channel, SocketCall::bind, ""},
      {"Accept failed (error: ", ")", ErrorSide::side_channel, SocketCall::accept, ""},
      {"Send failed with errno=", "", ErrorSide::side_channel, SocketCall::send, ""},
      {"Recv failed with errno=", "", ErrorSide::side_channel, SocketCall::recv, ""},
      {"Changing queue pair to RTR failed with errno ", "", ErrorSide::rtr, SocketCall::unknown, ""},
      {"Changing queue pair to INIT failed with errno ", "", ErrorSide::queue_pair, SocketCall::unknown,
       "INIT"},
      {"Changing queue pair to RTS failed with errno ", "", ErrorSide::queue_pair, SocketCall::unknown,
       "RTS"},
  };
  for (const Shape& sh : kShapes) {
    if (const auto n = side_channel_detail::number_between(s, sh.prefix, sh.suffix)) {
      m.side = sh.side;
      m.call = sh.call;
      m.transition = std::string(sh.transition);
      m.err = *n;
      return m;
    }
  }
  if (side_channel_detail::starts_with(s, "Recv failed: peer closed the side channel")) {
    m.call = SocketCall::recv;
    m.peer_closed = true;
    return m;
  }
  return std::nullopt;
}

}  // namespace gidpolicy
