// `gidpolicy show`: the tables as read, as text or JSON.
#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/formats/json.hpp>

#include <fmt/core.h>

#include <unistd.h>

namespace gidpolicy::cli {

namespace {

std::string holes_note(const GidTable& t) {
  if (t.holes() == Holes::not_shown) return unlisted_slots_note(t);
  if (!t.port().gid_tbl_len)
    return "table length unknown (show_gids does not print it); indices not listed are empty";
  return "indices not listed are empty";
}

void print_show_table(const GidTable& t) {
  const PortInfo& p = t.port();
  standard_output().print("{}: {}, {}, gid_tbl_len {}, active_mtu {}\n", port_name(t),
                          to_string(p.link_layer), to_string(p.state),
                          p.gid_tbl_len ? std::to_string(*p.gid_tbl_len) : std::string("unknown"),
                          mtu_bytes(p.active_mtu));
  standard_output().print("  {:>5}  {:<39}  {:<8}  {:<15}  {:<15}  {}\n", "INDEX", "GID", "TYPE", "IPv4",
                          "NETDEV", "FLAGS");
  for (const auto& e : t) {
    std::string flags;
    for (const auto& f : formats::entry_flags(e)) flags += (flags.empty() ? "" : ",") + f;
    if (e.state == EntryState::unreadable) flags += fmt::format(" (errno {})", e.read_error.value());
    const bool valid = e.state == EntryState::valid;
    standard_output().print("  {:>5}  {:<39}  {:<8}  {:<15}  {:<15}  {}\n", e.index,
                            valid ? e.gid.to_string() : "-", valid ? std::string(to_string(e.type)) : "-",
                            valid ? e.gid.ipv4_string() : "", e.netdev.empty() ? "" : e.netdev, flags);
  }
  if (t.size() == 0) standard_output().print("  (no GID listed)\n");
  standard_output().print("  {}\n", holes_note(t));
}

}  // namespace

int run_show(const ShowArgs& o) {
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  const auto& tables = loaded.value().tables;
  if (o.json) {
    // "host" names the machine for `gidpolicy fleet`: a pasted or converted table may come
    // from anywhere, so only live devices default to this machine's name.
    Json host = nullptr;
    if (o.host) {
      // The name rule (names.hpp): `gidpolicy fleet` prints this name in every report line.
      if (auto why = name_problem(*o.host, NameKind::host))
        return usage_error("--host " + quote_name(*o.host, 80) + ": " + *why);
      host = *o.host;
    } else if (const auto& b = loaded.value().bundle_host; b && !b->host.empty()) {
      // A bundle names the host it was collected on (checked as --host is).
      if (auto why = name_problem(b->host, NameKind::host))
        return usage_error(*o.source.bundle + ": its host name " + quote_name(b->host, 80) + ": " + *why +
                           "; give one with --host NAME");
      host = b->host;
    } else if (!o.source.input && !o.source.sysfs && !o.source.bundle) {
      char name[256] = {};
      if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') {
        if (auto why = name_problem(name, NameKind::host))
          return usage_error("this machine's host name " + quote_name(name, 80) + ": " + *why +
                             "; give one with --host NAME");
        host = std::string(name);
      }
    }
    // Version 2 of the tables document (formats/json.hpp): the same text `convert --to json`
    // writes, so every reader of either reads both.
    formats::TablesDocument about;
    if (host.is_string()) about.host = host.get<std::string>();
    about.source = loaded.value().source;
    standard_output().write(formats::write_json(tables, about));
    return kExitOk;
  }
  for (std::size_t k = 0; k < tables.size(); ++k) {
    if (k) standard_output().print("\n");
    print_show_table(tables[k]);
  }
  return kExitOk;
}

}  // namespace gidpolicy::cli
