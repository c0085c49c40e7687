// `gidpolicy explain-errno`: what an errno from modify_qp means for a table and a selection.
#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/kernel_routes.hpp>

#include <fmt/core.h>

#include <cctype>
#include <cstdlib>

namespace gidpolicy::cli {

namespace {

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
  return std::nullopt;
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
  // The driver that judges: the named platform's, else the table's (DriverModel::for_table),
  // else this host's.
  auto model_of = [&](const GidTable* t) {
    std::optional<Platform> named;
    if (o.platform) named = platform_from_string(*o.platform).value_or(Platform::linux_kernel);
    return t ? DriverModel::for_table(*t, named) : DriverModel::for_platform(named.value_or(host_platform()));
  };
  // A live table was read in this namespace: its netdevs can be checked against it (ENODEV).
  std::optional<NetworkView> view;
  if (o.has_source && !o.source.input && !o.source.sysfs) {
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
  if (!o.has_source) {
    const DriverModel model = model_of(nullptr);
    auto err = parse_errno(o.err, model.platform);
    if (!err)
      return usage_error("explain-errno: expected an errno number or name such as 22 or EINVAL, found '" +
                         o.err + "'");
    standard_output().print("{}", diagnose(*err, model, context(nullptr)).to_string());
    return kExitOk;
  }
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  bool first = true;
  for (const auto& t : loaded.value().tables) {
    const DriverModel model = model_of(&t);
    auto err = parse_errno(o.err, model.platform);
    if (!err)
      return usage_error("explain-errno: expected an errno number or name such as 22 or EINVAL, found '" +
                         o.err + "'");
    if (!first) standard_output().print("\n");
    first = false;
    standard_output().print("{}:\n{}", port_name(t),
                            indent(diagnose(*err, model, context(&t)).to_string(), "  "));
  }
  return kExitOk;
}

}  // namespace gidpolicy::cli
