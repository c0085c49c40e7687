#include "fleet_report.hpp"

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/names.hpp>
#include <gidpolicy/quoting.hpp>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <map>

namespace gidpolicy::cli {
namespace detail_fleet_report {

using fleet::Analysis;
using fleet::Direction;
using fleet::Link;
using gidpolicy::LinkOutcome;

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

void text_report(const Analysis& an, const ReportOptions& o, const ReportWrite& out) {
  const auto& s = an.summary();
  if (s.unreliable == 0)
    out(fmt::format("{} of {} hosts, profile {}: {} of {} links connected\n", an.topology_name(),
                    an.host_count(), an.profile_spec(), s.connected, s.links));
  else  // never "N of N links connected" when hosts share an address
    out(
        fmt::format("{} of {} hosts, profile {}: {} of {} links connected reliably; {} more connect over "
                    "a GID another host also holds (not reliably connected)\n",
                    an.topology_name(), an.host_count(), an.profile_spec(), s.connected - s.unreliable,
                    s.links, s.unreliable));
  if (!an.conflicts().empty()) {
    out("fleet-wide conflicts:\n");
    std::size_t listed = 0;
    for (const auto& c : an.conflicts()) {
      if (listed++ == o.limit) {
        out(fmt::format("  ... and {} more conflicts (--json lists them all)\n",
                        an.conflicts().size() - o.limit));
        break;
      }
      out(fmt::format("  {}: {}\n", c.fatal ? "error" : "warning", an.describe(c)));
    }
  }
  if (s.unreliable) {
    // Each such link with the side whose GID others hold: bounded like the failed links.
    out(fmt::format("links not reliably connected ({}{}):\n",
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
        out(fmt::format("  {}{}: {}\n", an.describe_link(l), l.lane ? fmt::format(" (lane {})", l.lane) : "",
                        why));
      });
    if (s.unreliable > shown)
      out(fmt::format("  ... and {} more (--json lists them with --all-links)\n", s.unreliable - shown));
  }
  if (s.all_connected()) return;
  out("failures by cause:\n");
  std::size_t shown = 0;
  for (const auto& g : s.groups) {
    if (shown++ == o.limit) {
      out(fmt::format("  ... and {} more causes (--json lists them all)\n", s.groups.size() - o.limit));
      break;
    }
    out("  " + an.describe(g) + "\n");
  }
  const std::uint64_t failed = s.links - s.connected;
  out(fmt::format("failed links ({}{}):\n", failed > o.limit ? fmt::format("first {} of ", o.limit) : "",
                  failed));
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
      out(fmt::format("  {}{}: {}\n", an.describe_link(l), l.lane ? fmt::format(" (lane {})", l.lane) : "",
                      why));
    });
  }
  if (failed > printed)
    out(fmt::format("  ... and {} more failed links (--json lists them)\n", failed - printed));
}

// ---------------------------------------------------------------------------------------------
// JSON, streamed: the small parts through nlohmann, links one by one.

std::string direction_json_of(const Analysis& an, const Direction& d) {
  if (d.ok()) return R"({"outcome":"ok","cause":null,"by":null})";
  const auto& side = an.sides()[d.culprit];
  return fmt::format(R"({{"outcome":"{}","cause":{},"by":{},"device":{}}})", gidpolicy::to_string(d.outcome),
                     d.cause, jstr(an.host(side.host).host), jstr(side.device));
}

void json_report(const Analysis& an, const ReportOptions& o, const std::string& stack,
                 const ReportWrite& out) {
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
  out(text);
  out(o.all_links ? R"(,"link_detail":"all","links_detail":[)"
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
        direction_json_of(an, l.a_to_b), direction_json_of(an, l.b_to_a));
    first = false;
    out(buf);
  });
  // With --stack: every host, whether the stack's choice is the entry to use there (the text's
  // per-host list, complete).
  out(stack.empty() ? "\n]}\n" : "\n],\"stack\":" + stack + "}\n");
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
  // With observations: what the wire did on the worst direction, and what was predicted for it.
  const ObservedDirection* seen = nullptr;
  Direction predicted;
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

void svg_report(const Analysis& an, const ReportOptions& o, const ReportWrite& sink) {
  const std::size_t n = an.host_count();
  const std::size_t block = (n + 999) / 1000;
  const std::size_t g = (n + block - 1) / block;
  std::vector<Cell> cells(g * g);
  const std::vector<ObservedLink>* seen = o.observed;
  if (seen && seen->size() != an.link_count()) seen = nullptr;  // not this analysis's links
  auto add = [&](std::uint32_t from, std::uint32_t to, const Direction& d, const ObservedDirection* obs) {
    Cell& c = cells[(from / block) * g + to / block];
    ++c.total;
    const LinkOutcome outcome = obs ? obs->outcome : d.outcome;
    const auto w = static_cast<std::uint8_t>(1 + static_cast<unsigned>(outcome));
    if (outcome != LinkOutcome::ok) {
      if (c.failed++ == 0 || w > c.worst) {
        c.cause = d.cause;
        c.culprit = d.culprit;
        c.seen = obs;
        c.predicted = d;
      }
    }
    c.worst = std::max(c.worst, w);
  };
  // Observed causes: the failed directions per text, for the legend under the matrix.
  std::map<std::string, std::uint64_t> seen_causes;
  std::uint64_t seen_connected = 0;
  an.for_each_link(0, an.link_count(), [&](const Link& l) {
    const auto ha = an.sides()[l.a].host, hb = an.sides()[l.b].host;
    const ObservedLink* ol = seen ? &(*seen)[l.index] : nullptr;
    if (ol && !ol->tried) return;  // not tried: no cell, as a pair without a link
    add(ha, hb, l.a_to_b, ol ? &ol->a_to_b : nullptr);
    add(hb, ha, l.b_to_a, ol ? &ol->b_to_a : nullptr);
    if (!ol) return;
    seen_connected += ol->connected() ? 1U : 0U;
    for (const ObservedDirection* od : {&ol->a_to_b, &ol->b_to_a})
      if (od->outcome != LinkOutcome::ok) ++seen_causes[od->text];
  });
  std::vector<std::pair<std::string, std::uint64_t>> seen_groups(seen_causes.begin(), seen_causes.end());
  std::stable_sort(seen_groups.begin(), seen_groups.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });

  const int cs = static_cast<int>(std::clamp<std::size_t>(900 / g, 1, 28));
  const bool every_label = cs >= 9;
  const int label_w = 150, top = 190;
  const int side = static_cast<int>(g) * cs;
  const auto& s = an.summary();
  const std::size_t max_causes = 12;
  const std::size_t cause_count = seen ? seen_groups.size() : s.groups.size();
  const std::size_t shown_causes = std::min(cause_count, max_causes);
  const int width = label_w + std::max(side, 760) + 20;
  const int height = top + side + 40 + static_cast<int>(shown_causes) * 18 + 40;
  auto name = [&](std::size_t cell) {
    if (block == 1) return an.host(static_cast<std::uint32_t>(cell)).host;
    const std::size_t lo = cell * block, hi = std::min(n, lo + block) - 1;
    return an.host(static_cast<std::uint32_t>(lo)).host + " .. " +
           an.host(static_cast<std::uint32_t>(hi)).host;
  };

  sink(fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">)"
      "\n",
      width, height, width, height));
  sink(fmt::format(R"(<rect width="{}" height="{}" fill="#ffffff"/>)"
                   "\n",
                   width, height));
  sink(fmt::format(R"(<text x="10" y="22" font-size="16" font-weight="bold">{}</text>)"
                   "\n",
                   xml_escape(fmt::format("{}: {} of {} hosts, profile {}", o.title, an.topology_name(), n,
                                          an.profile_spec()))));
  sink(fmt::format(
      R"(<text x="10" y="42">{}</text>)"
      "\n",
      xml_escape(fmt::format("{} of {} links connected{}; row sends to column (legend: directions){}; hover "
                             "a cell for the cause",
                             seen ? seen_connected : s.connected, s.links,
                             seen ? fmt::format(" on the wire (predicted: {})", s.connected) : std::string(),
                             block > 1 ? fmt::format("; each cell is {} x {} hosts", block, block) : ""))));
  // Legend with direction counts per outcome.
  std::array<std::uint64_t, 7> counts{};
  for (const auto& c : cells)
    if (c.total) ++counts[c.worst];
  const char* names[] = {"no link",    "ok",           "dropped (wrong source GID)", "times out", "RTR error",
                         "QP refused", "side unusable"};
  int lx = 10;
  for (std::uint8_t w = 1; w <= 6; ++w) {
    sink(fmt::format(
        R"(<rect x="{}" y="54" width="12" height="12" fill="{}"/><text x="{}" y="65">{} ({})</text>)"
        "\n",
        lx, colour(w), lx + 16, names[w], counts[w]));
    // About 7 px per character at 12 px: the name, " (", the count, ")", then a gap.
    lx += 16 +
          7 * static_cast<int>(std::string_view(names[w]).size() + std::to_string(counts[w]).size() + 3) + 14;
  }
  sink(fmt::format(
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
    sink(fmt::format(
        R"(<text x="{}" y="{}" font-size="{}" text-anchor="end" dominant-baseline="middle">{}</text>)"
        "\n",
        label_w - 4, top + mid, fs, label));
    sink(fmt::format(
        R"~(<text transform="translate({},{}) rotate(-60)" font-size="{}" dominant-baseline="middle">{}</text>)~"
        "\n",
        label_w + mid, top - 4, fs, label));
  }
  sink(fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="#999"/>)"
                   "\n",
                   label_w, top, side, side, colour(0)));
  // Cells, row by row, equal neighbours merged.
  auto same = [](const Cell& x, const Cell& y) {
    const bool seen_same = x.seen == y.seen || (x.seen && y.seen && x.seen->text == y.seen->text);
    return x.worst == y.worst && x.cause == y.cause && x.culprit == y.culprit && seen_same &&
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
        } else if (first.seen) {
          // The wire's outcome, then what was predicted for that direction.
          if (total > 1) title += fmt::format("{} of {} directions fail; worst: ", failed, total);
          title += std::string(gidpolicy::to_string(first.seen->outcome)) + ": " + first.seen->text;
          title += first.predicted.ok()
                       ? std::string("; predicted: ok (the wire contradicts it)")
                       : "; predicted: " + std::string(gidpolicy::to_string(first.predicted.outcome)) + ": " +
                             an.describe(first.predicted);
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
        sink(buf);
      }
      c = e;
    }
  }
  // The causes, largest first.
  int y = top + side + 30;
  sink(fmt::format(R"(<text x="10" y="{}" font-weight="bold">{}</text>)"
                   "\n",
                   y,
                   cause_count == 0 ? "every link connects"
                   : seen           ? "failures on the wire by cause (failed directions)"
                                    : "failures by cause"));
  for (std::size_t k = 0; k < shown_causes; ++k) {
    y += 18;
    std::uint8_t w = 0;
    std::string full;
    if (seen) {
      full = fmt::format("{} x {}", seen_groups[k].second, seen_groups[k].first);
      w = static_cast<std::uint8_t>(1 + static_cast<unsigned>(LinkOutcome::rtr_error));
      for (const auto& ol : *seen)
        for (const ObservedDirection* od : {&ol.a_to_b, &ol.b_to_a})
          if (od->outcome != LinkOutcome::ok && od->text == seen_groups[k].first)
            w = static_cast<std::uint8_t>(1 + static_cast<unsigned>(od->outcome));
    } else {
      const auto& grp = s.groups[k];
      w = static_cast<std::uint8_t>(1 + static_cast<unsigned>(an.causes()[grp.cause].outcome));
      full = an.describe(grp);
    }
    // Long causes (a failed selection's whole explanation) are cut to the picture's width;
    // the full text is on hover.
    const std::size_t fit = static_cast<std::size_t>(std::max(40, (width - 40) / 7));
    // Cut on a code point (cut_utf8): a cut inside a UTF-8 sequence is not UTF-8, so not XML.
    const std::string shown = full.size() > fit ? std::string(cut_utf8(full, fit - 3)) + "..." : full;
    sink(fmt::format(
        R"(<g><title>{}</title><rect x="10" y="{}" width="12" height="12" fill="{}"/><text x="28" y="{}">{}</text></g>)"
        "\n",
        xml_escape(full), y - 11, colour(w), y, xml_escape(shown)));
  }
  if (cause_count > shown_causes) {
    y += 18;
    sink(fmt::format(R"(<text x="28" y="{}">... and {} more causes ({})</text>)"
                     "\n",
                     y, cause_count - shown_causes, seen ? "--json lists them" : "gidpolicy fleet --json"));
  }
  sink("</svg>\n");
}

}  // namespace detail_fleet_report

void fleet_text(const fleet::Analysis& an, const ReportOptions& o, const ReportWrite& out) {
  detail_fleet_report::text_report(an, o, out);
}
void fleet_json(const fleet::Analysis& an, const ReportOptions& o, const std::string& stack,
                const ReportWrite& out) {
  detail_fleet_report::json_report(an, o, stack, out);
}
std::string fleet_direction_json(const fleet::Analysis& an, const fleet::Direction& d) {
  return detail_fleet_report::direction_json_of(an, d);
}
void fleet_svg(const fleet::Analysis& an, const ReportOptions& o, const ReportWrite& sink) {
  detail_fleet_report::svg_report(an, o, sink);
}

}  // namespace gidpolicy::cli
