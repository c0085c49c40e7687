// `gidpolicy explain-errno`: what an errno means for a table and a selection: from modify_qp at
// RTR (diagnose()), or from the TCP side channel the ranks exchange their GIDs over
// (diagnose_side_channel()); an error line says which (read_error_message()).
#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/kernel_routes.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/side_channel.hpp>

#include <fmt/core.h>

#include <cctype>
#include <cstdlib>

namespace gidpolicy::cli {

namespace {

/// An errno as a number (1..4095) or a name: the RTR names of `p` (errno_name), then the side
/// channel's (socket_errno_name).
std::optional<int> parse_errno(const std::string& s, Platform p) {
  if (s.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(s[0]))) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (*end != '\0' || v <= 0 || v > 4095) return std::nullopt;
    return static_cast<int>(v);
  }
  std::string upper = s;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (int n = 1; n < 256; ++n)
    if (errno_name(p, n) == upper) return n;
  return socket_errno_from_name(p, upper);
}

/// What the command line says about the failure: the number (or its text, read per platform
/// since a name's number differs), and the side when the error line or --side tells.
struct Asked {
  std::optional<ErrorMessage> message;  ///< the error line, when one was given
  std::optional<ErrorSide> side;        ///< nullopt: both explanations
};

std::string bad_errno(const std::string& text) {
  return "explain-errno: expected an errno number or name such as 22 or EINVAL, or a program's error line "
         "such as \"[jaccl] Couldn't connect (error: 60)\", found " +
         show_text(text, 80);
}

/// The side-channel part: the causes of the number on the TCP socket, for `call`.
std::string side_channel_text(int err, Platform p, const Asked& a) {
  const SocketCall call = a.message ? a.message->call : SocketCall::unknown;
  const bool closed = a.message && a.message->peer_closed;
  std::string head = "from the side channel (the TCP connection the ranks exchange their GIDs over";
  if (call != SocketCall::unknown) head += ", at " + std::string(to_string(call)) + "()";
  head += "):\n";
  return head + indent(diagnose_side_channel(err, p, call, closed).to_string(), "  ");
}

}  // namespace

int run_explain(const ExplainArgs& o) {
  std::optional<Gid> advertised, peer;
  if (o.advertised) {
    auto g = parse_address(*o.advertised);
    if (!g)
      return usage_error(Error(g.error().code, "--advertised " + *o.advertised + ": " + g.error().detail));
    advertised = g.value();
  }
  if (o.peer) {
    auto g = parse_address(*o.peer);
    if (!g) return usage_error(Error(g.error().code, "--peer " + *o.peer + ": " + g.error().detail));
    peer = g.value();
  }
  Asked asked;
  if (o.side) asked.side = *o.side == "rtr" ? ErrorSide::rtr : ErrorSide::side_channel;
  // A number or name first; only text that is neither is read as an error line.
  const bool looks_like_errno =
      parse_errno(o.err, Platform::linux_kernel) || parse_errno(o.err, Platform::darwin);
  if (!looks_like_errno) {
    asked.message = read_error_message(o.err);
    if (!asked.message) return usage_error(bad_errno(o.err));
    const ErrorSide said = asked.message->side;
    if (asked.side && *asked.side != said &&
        !(said == ErrorSide::queue_pair && *asked.side == ErrorSide::rtr))
      return usage_error("explain-errno --side " + *o.side + ": the error line says the number came from " +
                         (said == ErrorSide::side_channel ? std::string("the side channel's socket")
                                                          : std::string("ibv_modify_qp")));
    asked.side = said;
  }
  // The platform: --platform, else the table's (DriverModel::for_table), else JACCL's own (a
  // [jaccl] line comes from macOS: JACCL loads librdma.dylib), else this host's.
  std::optional<Platform> named;
  if (o.platform) named = platform_from_string(*o.platform).value_or(Platform::linux_kernel);
  if (!named && asked.message && asked.message->program == "jaccl") named = Platform::darwin;
  auto model_of = [&](const GidTable* t) {
    return t ? DriverModel::for_table(*t, named) : DriverModel::for_platform(named.value_or(host_platform()));
  };
  // A live table was read in this namespace: its netdevs can be checked against it (ENODEV).
  std::optional<NetworkView> view;
  if (o.has_source && !o.source.input && !o.source.sysfs && !o.source.bundle) {
    KernelRoutes kernel;
    if (auto v = observe_network(kernel, {})) view = std::move(v).value();
  }
  auto context = [&](const GidTable* t) {
    DiagnoseContext c;
    c.network = view ? &*view : nullptr;
    c.table = t;
    c.sgid_index = o.sgid_index;
    c.advertised = advertised;
    c.peer_gid = peer;
    return c;
  };
  // The number on `p`: the error line's, else the argument read as that platform names it.
  auto number_on = [&](Platform p) -> std::optional<int> {
    if (asked.message) return asked.message->err;
    return parse_errno(o.err, p);
  };
  const bool rtr = !asked.side || *asked.side == ErrorSide::rtr;
  const bool socket = !asked.side || *asked.side == ErrorSide::side_channel;
  // Both sides asked (a bare number): the side channel's part only where it has a model for
  // the number (EINVAL, say, is no socket error a side channel meets).
  auto socket_part = [&](int err, Platform p) -> std::string {
    if (!socket) return "";
    if (asked.side == ErrorSide::side_channel || asked.message) return side_channel_text(err, p, asked);
    const Diagnosis d = diagnose_side_channel(err, p);
    if (d.causes.size() == 1 && d.causes.front().id == "unknown") return "";
    return side_channel_text(err, p, asked);
  };
  auto queue_pair_part = [&](int err, Platform p) {
    return "ibv_modify_qp to " + asked.message->transition + " failed with " + errno_name(p, err) + " (" +
           std::to_string(err) + ") on " + std::string(to_string(p)) +
           ": gidpolicy models the RTR transition, where the GID is used; an " + asked.message->transition +
           " failure is not about the GID (check the attributes the program passes there)\n";
  };
  const bool queue_pair = asked.message && asked.message->side == ErrorSide::queue_pair;
  if (!o.has_source) {
    const DriverModel model = model_of(nullptr);
    const auto err = number_on(model.platform);
    if (!err && !(asked.message && asked.message->peer_closed)) return usage_error(bad_errno(o.err));
    if (queue_pair) {
      standard_output().print("{}", queue_pair_part(*err, model.platform));
      return kExitOk;
    }
    std::string out;
    if (rtr) out += diagnose(*err, model, context(nullptr)).to_string();
    if (const std::string s = socket_part(err.value_or(0), model.platform); !s.empty())
      out += (out.empty() ? "" : "\n") + s;
    standard_output().print("{}", out);
    return kExitOk;
  }
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  bool first = true;
  for (const auto& t : loaded.value().tables) {
    const DriverModel model = model_of(&t);
    const auto err = number_on(model.platform);
    if (!err && !(asked.message && asked.message->peer_closed)) return usage_error(bad_errno(o.err));
    std::string out;
    if (queue_pair)
      out = queue_pair_part(*err, model.platform);
    else if (rtr)
      out = diagnose(*err, model, context(&t)).to_string();
    if (!queue_pair)
      if (const std::string s = socket_part(err.value_or(0), model.platform); !s.empty())
        out += (out.empty() ? "" : "\n") + s;
    if (!first) standard_output().print("\n");
    first = false;
    standard_output().print("{}:\n{}", port_name(t), indent(out, "  "));
  }
  return kExitOk;
}

}  // namespace gidpolicy::cli
