#include "fleet_cmd.hpp"
#include "env_file.hpp"
#include "fleet_stack.hpp"

#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"
#include "subcommands.hpp"

#include <gidpolicy/fleet.hpp>
#include <gidpolicy/names.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stacks.hpp>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>

namespace gidpolicy::cli {
namespace {

using fleet::Analysis;
using fleet::Direction;
using fleet::Link;
using gidpolicy::LinkOutcome;

// The report and the --svg matrix go through the one output path (output.hpp).
using Sink = Output;

std::string jstr(const std::string& s) { return nlohmann::json(valid_utf8(s)).dump(); }

std::string xml_escape(std::string_view s) {
  // Names pass the name rule (names.hpp) before they get here; this keeps the file valid XML
  // whatever a text holds: text that is not UTF-8, or holds a control character XML 1.0 cannot
  // carry (not even as a character reference), is written as quote_name() shows it.
  std::string safe;
  const bool control = std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && u != '\t' && u != '\n' && u != '\r') || u == 0x7f;
  });
  if (control || !is_utf8(s)) {
    safe = quote_name(s, s.size());
    s = safe;
  }
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Text

void print_text(const Analysis& an, const FleetArgs& o, Sink& out) {
  const auto& s = an.summary();
  if (s.unreliable == 0)
    out.write(fmt::format("{} of {} hosts, profile {}: {} of {} links connected\n", an.topology_name(),
                          an.host_count(), an.profile_spec(), s.connected, s.links));
  else  // never "N of N links connected" when hosts share an address
    out.write(
        fmt::format("{} of {} hosts, profile {}: {} of {} links connected reliably; {} more connect over "
                    "a GID another host also holds (not reliably connected)\n",
                    an.topology_name(), an.host_count(), an.profile_spec(), s.connected - s.unreliable,
                    s.links, s.unreliable));
  if (!an.conflicts().empty()) {
    out.write("fleet-wide conflicts:\n");
    std::size_t listed = 0;
    for (const auto& c : an.conflicts()) {
      if (listed++ == o.limit) {
        out.write(fmt::format("  ... and {} more conflicts (--json lists them all)\n",
                              an.conflicts().size() - o.limit));
        break;
      }
      out.write(fmt::format("  {}: {}\n", c.fatal ? "error" : "warning", an.describe(c)));
    }
  }
  if (s.unreliable) {
    // Each such link with the side whose GID others hold: bounded like the failed links.
    out.write(fmt::format("links not reliably connected ({}{}):\n",
                          s.unreliable > o.limit ? fmt::format("first {} of ", o.limit) : "", s.unreliable));
    std::size_t shown = 0;
    const std::uint64_t chunk = 65536;
    for (std::uint64_t b = 0; b < an.link_count() && shown < o.limit; b += chunk)
      an.for_each_link(b, b + chunk, [&](const Link& l) {
        if (!l.connected() || l.reliable() || shown >= o.limit) return;
        ++shown;
        std::string why;
        for (std::uint32_t side : {l.a, l.b}) {
          const auto& si = an.sides()[side];
          if (si.conflict == fleet::kNoConflict || !si.advertised) continue;
          why += fmt::format("{}{} advertises {}, which {} hosts hold", why.empty() ? "" : "; ",
                             an.host(si.host).host, si.advertised->to_string(),
                             an.conflicts()[si.conflict].host_count);
        }
        out.write(fmt::format("  {}{}: {}\n", an.describe_link(l),
                              l.lane ? fmt::format(" (lane {})", l.lane) : "", why));
      });
    if (s.unreliable > shown)
      out.write(
          fmt::format("  ... and {} more (--json lists them with --all-links)\n", s.unreliable - shown));
  }
  if (s.all_connected()) return;
  out.write("failures by cause:\n");
  std::size_t shown = 0;
  for (const auto& g : s.groups) {
    if (shown++ == o.limit) {
      out.write(fmt::format("  ... and {} more causes (--json lists them all)\n", s.groups.size() - o.limit));
      break;
    }
    out.write("  " + an.describe(g) + "\n");
  }
  const std::uint64_t failed = s.links - s.connected;
  out.write(fmt::format("failed links ({}{}):\n",
                        failed > o.limit ? fmt::format("first {} of ", o.limit) : "", failed));
  std::size_t printed = 0;
  // Stop at the limit: at fleet size most links need not be looked at again.
  const std::uint64_t chunk = 65536;
  for (std::uint64_t b = 0; b < an.link_count() && printed < o.limit; b += chunk) {
    an.for_each_link(b, b + chunk, [&](const Link& l) {
      if (l.connected() || printed >= o.limit) return;
      ++printed;
      std::string why = an.describe(l.a_to_b.ok() ? l.b_to_a : l.a_to_b);
      if (!l.a_to_b.ok() && !l.b_to_a.ok() &&
          (l.a_to_b.cause != l.b_to_a.cause || l.a_to_b.culprit != l.b_to_a.culprit))
        why += "; " + an.describe(l.b_to_a);
      out.write(fmt::format("  {}{}: {}\n", an.describe_link(l),
                            l.lane ? fmt::format(" (lane {})", l.lane) : "", why));
    });
  }
  if (failed > printed)
    out.write(fmt::format("  ... and {} more failed links (--json lists them)\n", failed - printed));
}

// ---------------------------------------------------------------------------------------------
// JSON, streamed: the small parts through nlohmann, links one by one.

std::string json_direction(const Analysis& an, const Direction& d) {
  if (d.ok()) return R"({"outcome":"ok","cause":null,"by":null})";
  const auto& side = an.sides()[d.culprit];
  return fmt::format(R"({{"outcome":"{}","cause":{},"by":{},"device":{}}})", gidpolicy::to_string(d.outcome),
                     d.cause, jstr(an.host(side.host).host), jstr(side.device));
}

void print_json(const Analysis& an, const FleetArgs& o, const std::string& stack, Sink& out) {
  using Json = nlohmann::ordered_json;
  const auto& s = an.summary();
  Json head;
  head["schema"] = "gidpolicy.fleet";
  // Version 2: the common envelope's "host" (null: a fleet is many hosts, each named in its
  // sides) and "source" (what was read).
  head["version"] = 2;
  head["host"] = nullptr;
  head["source"] = fmt::format("{} host snapshot{}", an.host_count(), an.host_count() == 1 ? "" : "s");
  head["topology"] = an.topology_name();
  head["profile"] = an.profile_spec();
  head["hosts"] = an.host_count();
  head["links"] = s.links;
  head["connected"] = s.connected;
  head["failed"] = s.links - s.connected;
  head["unreliable"] = s.unreliable;
  head["ok"] = an.ok();
  Json conflicts = Json::array();
  for (std::size_t c = 0; c < an.conflicts().size(); ++c) {
    const auto& k = an.conflicts()[c];
    Json j;
    j["id"] = c;
    j["kind"] = std::string(fleet::to_string(k.kind));
    j["fatal"] = k.fatal;
    Json gids = Json::array();
    for (const auto& g : k.gids) gids.push_back(g.to_string());
    j["gids"] = std::move(gids);
    j["gid_count"] = k.gid_count;
    j["device"] = k.device;
    j["other_device"] = k.other_device.empty() ? Json(nullptr) : Json(k.other_device);
    Json hosts = Json::array();
    for (auto h : k.hosts) hosts.push_back(an.host(h).host);
    j["hosts"] = std::move(hosts);
    j["host_count"] = k.host_count;
    j["links"] = k.links;
    j["text"] = an.describe(k);
    conflicts.push_back(std::move(j));
  }
  head["conflicts"] = std::move(conflicts);
  Json causes = Json::array();
  std::vector<const fleet::CauseGroup*> group_of(an.causes().size(), nullptr);
  for (const auto& g : s.groups) group_of[g.cause] = &g;
  for (std::size_t c = 0; c < an.causes().size(); ++c) {
    const auto& cause = an.causes()[c];
    Json j;
    j["id"] = c;
    j["outcome"] = std::string(gidpolicy::to_string(cause.outcome));
    j["device"] = cause.device;
    j["errno"] = cause.err ? Json(cause.err) : Json(nullptr);
    j["errno_name"] = cause.err ? Json(errno_name(cause.platform, cause.err)) : Json(nullptr);
    j["text"] = cause.text;
    j["links"] = group_of[c] ? group_of[c]->links : 0;
    j["hosts"] = group_of[c] ? group_of[c]->hosts : 0;
    causes.push_back(std::move(j));
  }
  head["causes"] = std::move(causes);
  Json sides = Json::array();
  for (const auto& side : an.sides()) {
    Json j;
    j["host"] = an.host(side.host).host;
    j["device"] = side.device;
    j["port"] = side.port;
    j["usable"] = side.usable;
    j["advertised"] = side.advertised ? Json(side.advertised->to_string()) : Json(nullptr);
    j["sgid_index"] = side.sgid_index ? Json(*side.sgid_index) : Json(nullptr);
    j["conflict"] = side.conflict == fleet::kNoConflict ? Json(nullptr) : Json(side.conflict);
    sides.push_back(std::move(j));
  }
  head["sides"] = std::move(sides);
  std::string text = head.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  text.pop_back();  // reopen the object for the streamed links
  out.write(text);
  out.write(o.all_links ? R"(,"link_detail":"all","links_detail":[)"
                        : R"(,"link_detail":"failed","links_detail":[)");
  bool first = true;
  std::string buf;
  an.for_each_link(0, an.link_count(), [&](const Link& l) {
    if (!o.all_links && l.connected()) return;
    const auto& a = an.sides()[l.a];
    const auto& b = an.sides()[l.b];
    buf = fmt::format(
        R"({}{{"index":{},"a":{},"a_device":{},"b":{},"b_device":{},"lane":{},"connected":{},"conflict":{},"a_to_b":{},"b_to_a":{}}})",
        first ? "\n" : ",\n", l.index, jstr(an.host(a.host).host), jstr(a.device), jstr(an.host(b.host).host),
        jstr(b.device), l.lane, l.connected() ? "true" : "false",
        l.conflict == fleet::kNoConflict ? std::string("null") : std::to_string(l.conflict),
        json_direction(an, l.a_to_b), json_direction(an, l.b_to_a));
    first = false;
    out.write(buf);
  });
  // With --stack: every host, whether the stack's choice is the entry to use there (the text's
  // per-host list, complete).
  out.write(stack.empty() ? "\n]}\n" : "\n],\"stack\":" + stack + "}\n");
}

// ---------------------------------------------------------------------------------------------
// SVG: a host x host matrix, row = sender, column = receiver, coloured by the worst outcome of
// that direction's links, the cause on hover (<title>). Above 1,000 hosts cells hold blocks of
// hosts; equal neighbouring cells of a row merge into one rectangle, so a healthy fleet of
// 1,000 hosts is a few thousand elements, not a million.

struct Cell {
  std::uint8_t worst = 0;  // 0: no link; else 1 + LinkOutcome
  std::uint32_t cause = 0;
  std::uint32_t culprit = 0;
  std::uint32_t failed = 0, total = 0;
};

const char* colour(std::uint8_t worst) {
  if (worst == 0) return "#eeeeee";
  switch (static_cast<LinkOutcome>(worst - 1)) {
    case LinkOutcome::ok:
      return "#2ca02c";
    case LinkOutcome::dropped:
      return "#e6b800";
    case LinkOutcome::times_out:
      return "#ff7f0e";
    case LinkOutcome::rtr_error:
      return "#d62728";
    case LinkOutcome::qp_refused:
      return "#9467bd";
    case LinkOutcome::unusable:
      return "#444444";
  }
  return "#eeeeee";
}

void write_svg(const Analysis& an, Sink& sink) {
  const std::size_t n = an.host_count();
  const std::size_t block = (n + 999) / 1000;
  const std::size_t g = (n + block - 1) / block;
  std::vector<Cell> cells(g * g);
  auto add = [&](std::uint32_t from, std::uint32_t to, const Direction& d) {
    Cell& c = cells[(from / block) * g + to / block];
    ++c.total;
    const auto w = static_cast<std::uint8_t>(1 + static_cast<unsigned>(d.outcome));
    if (!d.ok()) {
      if (c.failed++ == 0 || w > c.worst) {
        c.cause = d.cause;
        c.culprit = d.culprit;
      }
    }
    c.worst = std::max(c.worst, w);
  };
  an.for_each_link(0, an.link_count(), [&](const Link& l) {
    const auto ha = an.sides()[l.a].host, hb = an.sides()[l.b].host;
    add(ha, hb, l.a_to_b);
    add(hb, ha, l.b_to_a);
  });

  const int cs = static_cast<int>(std::clamp<std::size_t>(900 / g, 1, 28));
  const bool every_label = cs >= 9;
  const int label_w = 150, top = 190;
  const int side = static_cast<int>(g) * cs;
  const auto& s = an.summary();
  const std::size_t max_causes = 12;
  const std::size_t shown_causes = std::min(s.groups.size(), max_causes);
  const int width = label_w + std::max(side, 760) + 20;
  const int height = top + side + 40 + static_cast<int>(shown_causes) * 18 + 40;
  auto name = [&](std::size_t cell) {
    if (block == 1) return an.host(static_cast<std::uint32_t>(cell)).host;
    const std::size_t lo = cell * block, hi = std::min(n, lo + block) - 1;
    return an.host(static_cast<std::uint32_t>(lo)).host + " .. " +
           an.host(static_cast<std::uint32_t>(hi)).host;
  };

  sink.write(fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">)"
      "\n",
      width, height, width, height));
  sink.write(fmt::format(R"(<rect width="{}" height="{}" fill="#ffffff"/>)"
                         "\n",
                         width, height));
  sink.write(fmt::format(R"(<text x="10" y="22" font-size="16" font-weight="bold">{}</text>)"
                         "\n",
                         xml_escape(fmt::format("gidpolicy fleet: {} of {} hosts, profile {}",
                                                an.topology_name(), n, an.profile_spec()))));
  sink.write(fmt::format(
      R"(<text x="10" y="42">{}</text>)"
      "\n",
      xml_escape(fmt::format(
          "{} of {} links connected; row sends to column (legend: directions){}; hover a cell for the cause",
          s.connected, s.links,
          block > 1 ? fmt::format("; each cell is {} x {} hosts", block, block) : ""))));
  // Legend with direction counts per outcome.
  std::array<std::uint64_t, 7> counts{};
  for (const auto& c : cells)
    if (c.total) ++counts[c.worst];
  const char* names[] = {"no link",    "ok",           "dropped (wrong source GID)", "times out", "RTR error",
                         "QP refused", "side unusable"};
  int lx = 10;
  for (std::uint8_t w = 1; w <= 6; ++w) {
    sink.write(fmt::format(
        R"(<rect x="{}" y="54" width="12" height="12" fill="{}"/><text x="{}" y="65">{} ({})</text>)"
        "\n",
        lx, colour(w), lx + 16, names[w], counts[w]));
    // About 7 px per character at 12 px: the name, " (", the count, ")", then a gap.
    lx += 16 +
          7 * static_cast<int>(std::string_view(names[w]).size() + std::to_string(counts[w]).size() + 3) + 14;
  }
  sink.write(fmt::format(
      R"(<rect x="{}" y="54" width="12" height="12" fill="{}" stroke="#999"/><text x="{}" y="65">no link</text>)"
      "\n",
      lx, colour(0), lx + 16));
  // Axis labels: every host when cells are big enough, otherwise evenly spaced ticks.
  // Ticks at least 14 px apart.
  const std::size_t step = every_label ? 1 : 14 / static_cast<std::size_t>(cs) + 1;
  const int fs = every_label ? std::min(cs - 1, 12) : 10;
  for (std::size_t k = 0; k < g; k += step) {
    const std::string label = xml_escape(block == 1 ? an.host(static_cast<std::uint32_t>(k)).host : name(k));
    const int mid = static_cast<int>(k) * cs + cs / 2;
    sink.write(fmt::format(
        R"(<text x="{}" y="{}" font-size="{}" text-anchor="end" dominant-baseline="middle">{}</text>)"
        "\n",
        label_w - 4, top + mid, fs, label));
    sink.write(fmt::format(
        R"~(<text transform="translate({},{}) rotate(-60)" font-size="{}" dominant-baseline="middle">{}</text>)~"
        "\n",
        label_w + mid, top - 4, fs, label));
  }
  sink.write(fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="#999"/>)"
                         "\n",
                         label_w, top, side, side, colour(0)));
  // Cells, row by row, equal neighbours merged.
  auto same = [](const Cell& x, const Cell& y) {
    return x.worst == y.worst && x.cause == y.cause && x.culprit == y.culprit &&
           (x.failed == 0) == (y.failed == 0) && (x.failed == x.total) == (y.failed == y.total);
  };
  const int gap = cs >= 6 ? 1 : 0;
  std::string buf;
  for (std::size_t r = 0; r < g; ++r) {
    for (std::size_t c = 0; c < g;) {
      const Cell& first = cells[r * g + c];
      std::size_t e = c + 1;
      while (e < g && same(cells[r * g + e], first)) ++e;
      if (first.total != 0) {
        std::uint64_t failed = 0, total = 0;
        for (std::size_t k = c; k < e; ++k) {
          failed += cells[r * g + k].failed;
          total += cells[r * g + k].total;
        }
        std::string to = e - c == 1
                             ? name(c)
                             : name(c) + " ... " + name(e - 1) + " (" + std::to_string(e - c) + " columns)";
        std::string title = name(r) + " -> " + to + ": ";
        if (failed == 0) {
          title += total == 1 ? "connected" : fmt::format("{} directions, all connected", total);
        } else {
          Direction d;
          d.outcome = static_cast<LinkOutcome>(first.worst - 1);
          d.cause = first.cause;
          d.culprit = first.culprit;
          if (total > 1) title += fmt::format("{} of {} directions fail; worst: ", failed, total);
          title += gidpolicy::to_string(d.outcome);
          title += ": " + an.describe(d);
        }
        buf =
            fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>)"
                        "\n",
                        label_w + static_cast<int>(c) * cs, top + static_cast<int>(r) * cs,
                        static_cast<int>(e - c) * cs - gap, cs - gap, colour(first.worst), xml_escape(title));
        sink.write(buf);
      }
      c = e;
    }
  }
  // The causes, largest first.
  int y = top + side + 30;
  sink.write(fmt::format(R"(<text x="10" y="{}" font-weight="bold">{}</text>)"
                         "\n",
                         y, s.groups.empty() ? "every link connects" : "failures by cause"));
  for (std::size_t k = 0; k < shown_causes; ++k) {
    y += 18;
    const auto& grp = s.groups[k];
    const auto w = static_cast<std::uint8_t>(1 + static_cast<unsigned>(an.causes()[grp.cause].outcome));
    // Long causes (a failed selection's whole explanation) are cut to the picture's width;
    // the full text is on hover.
    const std::string full = an.describe(grp);
    const std::size_t fit = static_cast<std::size_t>(std::max(40, (width - 40) / 7));
    // Cut on a code point (cut_utf8): a cut inside a UTF-8 sequence is not UTF-8, so not XML.
    const std::string shown = full.size() > fit ? std::string(cut_utf8(full, fit - 3)) + "..." : full;
    sink.write(fmt::format(
        R"(<g><title>{}</title><rect x="10" y="{}" width="12" height="12" fill="{}"/><text x="28" y="{}">{}</text></g>)"
        "\n",
        xml_escape(full), y - 11, colour(w), y, xml_escape(shown)));
  }
  if (s.groups.size() > shown_causes) {
    y += 18;
    sink.write(fmt::format(R"(<text x="28" y="{}">... and {} more causes (gidpolicy fleet --json)</text>)"
                           "\n",
                           y, s.groups.size() - shown_causes));
  }
  sink.write("</svg>\n");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
FleetCommand::FleetCommand(CLI::App& app) {
  cmd_ = add_subcommand(app, "fleet");
  cmd_->add_option("hosts", o_.hosts, "FILE, HOST=FILE or a directory of *.json snapshots, one host each")
      ->required();
  cmd_->add_option("--topology", o_.topology, "mesh, ring, rail, or jaccl (a JACCL device file)")
      ->check(CLI::IsMember({"mesh", "ring", "rail", "jaccl"}))
      ->capture_default_str();
  cmd_->add_option("--device", o_.device,
                   "mesh/ring: the device every host uses (default: each host's first port)");
  cmd_->add_option("--port", o_.port, "The port on every named device")
      ->check(CLI::Range(1, 255))
      ->capture_default_str();
  cmd_->add_option("--rails", o_.rails,
                   "rail: the rails' devices in order (default: each host's ports in natural order)")
      ->delimiter(',');
  const StackInfo& jaccl = stack_row(StackId::jaccl);
  auto* devices_opt =
      cmd_->add_option("--jaccl-devices", o_.jaccl_devices,
                       "JACCL's device file, or an mlx.distributed_config hostfile (default: $" +
                           std::string(jaccl.launch.read_first) + " or $" + std::string(jaccl.launch.device) +
                           "); implies --topology jaccl");
  cmd_->add_option(
          "--hostfile", o_.jaccl_devices,
          "The hostfile mlx.distributed_config writes ({\"hosts\": [{\"ssh\", \"ips\", \"rdma\"}]}): "
          "its rdma rows are the device file; implies --topology jaccl")
      ->excludes(devices_opt);
  ring_flag_ = cmd_->add_flag("--jaccl-ring", o_.jaccl_ring,
                              "Prefer JACCL's ring when the file allows one (default: $" +
                                  std::string(stack_vars::kJacclRing) + " or $" +
                                  std::string(stack_vars::kMlxJacclRing) + " set)");
  cmd_->add_option("--profile", o_.profile, "What every host runs: a profile spec such as jaccl or auto")
      ->capture_default_str();
  cmd_->add_option(
      "--stack", o_.stack,
      "Every host runs this stack's own choice (" + stack_names(StackSet::predicted) +
          ", with its options: nccl:gid_index=3); hosts where it is not the entry to use are named");
  cmd_->add_option("--env-dir", o_.env_dir,
                   "With --stack: write one dotenv file per host (HOST.env) with the settings that make the "
                   "stack use gidpolicy's auto pick there");
  cmd_->add_option("--env-file", o_.env_file,
                   "With --stack: the launch's settings (a dotenv or docker-compose file), as check --stacks "
                   "reads them; they win over the environment's");
  cmd_->add_flag("--no-env", o_.no_env,
                 "With --stack: do not read the stack's settings from the environment");
  cmd_->add_flag("--replace", o_.replace_env_dir,
                 "With --env-dir: replace a non-empty directory (refused otherwise)");
  cmd_->add_option("--platform", o_.platform, "Driver model for every host (default: by link layer)")
      ->check(CLI::IsMember({"linux", "darwin"}));
  cmd_->add_flag(
      "--json", o_.json,
      "Print JSON (schema gidpolicy.fleet; gidpolicy(1) describes it): causes, sides, failed links streamed");
  cmd_->add_flag("--all-links", o_.all_links, "With --json: list connected links too");
  cmd_->add_option("--limit", o_.limit, "Text: list at most this many causes and failed links")
      ->capture_default_str();
  cmd_->add_option("--svg", o_.svg,
                   "Write a host x host matrix coloured by outcome (cause on hover) to FILE");
  cmd_->add_option("--output", o_.output, "Write the report to FILE (atomically) instead of stdout");
  cmd_->add_option("--threads", o_.threads, "Threads for reading and judging")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
}

int FleetCommand::run() const {
  FleetArgs o = o_;
  auto env = [](const char* a, const char* b) -> const char* {
    if (const char* v = std::getenv(a)) return v;
    return std::getenv(b);
  };
  if (o.jaccl_devices) o.topology = "jaccl";
  if (o.topology == "jaccl" && !o.jaccl_devices) {
    const StackInfo& jaccl = stack_row(StackId::jaccl);
    if (const char* f =
            env(std::string(jaccl.launch.read_first).c_str(), std::string(jaccl.launch.device).c_str()))
      o.jaccl_devices = std::string(f);
  }
  if (!ring_flag_->count() &&
      env(std::string(stack_vars::kJacclRing).c_str(), std::string(stack_vars::kMlxJacclRing).c_str()))
    o.jaccl_ring = true;
  return run_fleet(o);
}

int run_fleet(const FleetArgs& o) {
  // Both outputs are looked at before any work: a target that cannot be written is said at once,
  // not after reading a whole cluster's snapshots.
  std::optional<Sink> svg;
  if (o.svg) {
    svg.emplace(Sink::open(o.svg, "--svg"));
    if (svg->error()) return output_error(*svg->error());
  }
  auto sink = Sink::open(o.output, "--output");
  if (sink.error()) return output_error(*sink.error());
  std::string stack_name;
  std::optional<StackLaunch> launch;  // --stack's settings (read_launch)
  std::string stack_spec;  // the row's automatic spec with the options given: nvshmem:gid_index=3 is nccl's
  if (o.stack) {
    if (o.profile != "auto") return usage_error("fleet: give --stack or --profile, not both");
    const std::size_t colon = o.stack->find(':');
    stack_name = o.stack->substr(0, colon);
    const StackInfo* row = find_stack(stack_name);
    if (!row || !row->predicted)
      return usage_error("fleet --stack: expected one of " + stack_names(StackSet::predicted) + ", found '" +
                         bounded(stack_name) + "'");
    stack_spec = std::string(row->automatic) + (colon == std::string::npos ? "" : o.stack->substr(colon));
    // The launch's settings (the environment's, --env-file's), the same on every host: options
    // given after ':' state the settings themselves and win over them.
    auto settings = read_launch_settings(!o.no_env, o.env_file);
    if (!settings) return usage_error(settings.error());
    launch = read_launch(row->id, settings.value());
    if (launch->refused)
      return usage_error("fleet --stack " + bounded(stack_name) + ": " + launch->pin_variable + " " +
                         *launch->refused + ": the stack does not start");
    if (colon == std::string::npos) stack_spec += launch_spec_options(*launch);
  } else if (o.env_file || o.no_env) {
    return usage_error("fleet: --env-file and --no-env are for --stack");
  } else if (o.env_dir) {
    return usage_error("fleet --env-dir needs --stack STACK (which stack's settings to write)");
  }
  // --env-dir is staged beside its target and renamed into place only after every other output
  // is written: a run that fails later leaves none of it (StagedTree, output.hpp).
  std::optional<StagedTree> env_tree;
  if (o.env_dir) {
    env_tree.emplace(StagedTree::open(*o.env_dir, "--env-dir", o.replace_env_dir));
    if (env_tree->error()) return output_error(*env_tree->error());
  }
  const std::string profile_text = o.stack ? stack_spec : o.profile;
  auto profile = parse_profile(profile_text);
  if (!profile)
    return usage_error(Error(profile.error().code, std::string(o.stack ? "--stack " : "--profile ") +
                                                       bounded(o.stack ? *o.stack : o.profile) + ": " +
                                                       profile.error().detail));
  fleet::Topology topo;
  topo.device = o.device;
  topo.port = o.port;
  if (o.topology == "ring") topo.pairing = fleet::Pairing::ring;
  if (o.topology == "rail") {
    topo.pairing = fleet::Pairing::rail;
    topo.rails = o.rails;
  }
  if (o.topology == "jaccl" && !o.jaccl_devices)
    return usage_error("fleet --topology jaccl: give the device file with --jaccl-devices FILE (or set " +
                       std::string(stack_row(StackId::jaccl).launch.read_first) + ")");
  fleet::ReadLimits limits;
  limits.threads = o.threads;
  auto hosts = fleet::read_snapshots(o.hosts, limits);
  if (!hosts) return usage_error(hosts.error());
  if (o.topology == "jaccl") {
    // The hosts first: the device file is checked against their count before it is built.
    // A JACCL device file or a hostfile: mlx.launch turns the hostfile's rdma rows into the
    // device file it points its variable (the jaccl row's device setting) at, so either stands
    // for the same matrix.
    auto devices = fleet::read_device_file(*o.jaccl_devices, hosts.value().size());
    if (!devices) return usage_error(devices.error());
    topo.pairing = fleet::Pairing::jaccl;
    topo.jaccl = std::move(devices).value();
    topo.jaccl_prefer_ring = o.jaccl_ring;
  }
  fleet::Options opts;
  opts.profile = profile.value();
  opts.threads = o.threads;
  if (o.platform)
    opts.driver =
        DriverModel::for_platform(platform_from_string(*o.platform).value_or(Platform::linux_kernel));
  auto an = Analysis::run(std::move(hosts).value(), topo, opts);
  if (!an) return usage_error(an.error());
  const Analysis& a = an.value();
  if (svg) write_svg(a, *svg);
  bool stack_wrong = false;
  std::vector<StackHost> stack_hosts;
  if (o.stack) {
    const std::size_t colon = o.stack->find(':');
    stack_hosts = judge_stack_hosts(
        a, profile.value(), o, find_stack(stack_name),
        colon == std::string::npos ? std::string_view() : std::string_view(*o.stack).substr(colon),
        launch ? &*launch : nullptr);
    stack_wrong =
        std::any_of(stack_hosts.begin(), stack_hosts.end(), [](const StackHost& h) { return !h.right; });
  }
  if (o.json) {
    print_json(
        a, o, o.stack ? stack_json(stack_hosts, profile.value(), launch ? &*launch : nullptr) : std::string(),
        sink);
  } else {
    print_text(a, o, sink);
    if (o.stack) print_stack_hosts(stack_hosts, profile.value(), o, sink);
    if (launch)
      for (const SettingReading& r : launch->read)
        sink.write("  launch setting read: " + show_text(r.variable, 60) + "=" + show_text(r.value, 40) +
                   " (" + show_text(r.origin) + "): " + show_text(r.reading, std::string::npos) +
                   (r.applied ? "" : " [not applied]") + "\n");
  }
  bool env_conflict = false;
  if (env_tree)
    if (auto wrote = write_env_dir(a, stack_name, *env_tree, env_conflict); !wrote) {
      const Error& e = wrote.error();
      return e.code.category() == std::generic_category()
                 ? output_error("output error: --env-dir " + *o.env_dir + ": " + e.what())
                 : usage_error(e);
    }
  // Every output is complete: each is put in place now, the report last (a failure of one of
  // them before the report is said, and the report is not written).
  if (svg)
    if (auto err = svg->commit()) return output_error(*err);
  if (env_tree)
    if (auto err = env_tree->commit()) return output_error(*err);
  if (auto err = sink.commit()) return output_error(*err);
  // A duplicate address fails the fleet even where the fabric model connects every link.
  return a.ok() && !stack_wrong && !env_conflict ? kExitOk : kExitFinding;
}

}  // namespace gidpolicy::cli
