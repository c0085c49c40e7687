#include "stack_options.hpp"

#include "scan.hpp"

#include <cctype>
#include <charconv>
#include <set>

namespace gidpolicy::detail {
namespace {
constexpr std::size_t kStackMaxOptions = 16;
constexpr std::size_t kStackMaxFound = 40;

std::string stack_quoted(std::string_view t) {
  std::string out = "'";
  for (char c : t.substr(0, kStackMaxFound)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u >= 0x7f) ? '?' : c;
  }
  if (t.size() > kStackMaxFound) out += "...";
  return out + "'";
}
}  // namespace

Error stack_option_error(std::size_t pos, std::string_view expected, std::string_view found) {
  return Error(errc::invalid_policy_spec, "at position " + std::to_string(pos) + ": expected " +
                                              std::string(expected) + ", found " +
                                              (found.empty() ? std::string("end of spec") : stack_quoted(found)));
}

result<std::vector<StackOption>> split_stack_options(std::string_view stack, std::string_view text,
                                                     std::size_t base, std::string_view allowed) {
  std::vector<StackOption> out;
  std::set<std::string_view> seen;
  const std::string expected = "an option of " + std::string(stack) + " (" + std::string(allowed) + ")";
  std::size_t i = 0;
  while (true) {
    if (out.size() == kStackMaxOptions)
      return fail(stack_option_error(base + i, "at most 16 options", text.substr(i)));
    StackOption o;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ',' && text[i] != '=') ++i;
    o.key = text.substr(start, i - start);
    o.key_pos = base + start;
    // Whole-word membership in the allowed list.
    bool known = false;
    for (std::size_t p = 0; !o.key.empty() && p <= allowed.size();) {
      const std::size_t e = allowed.find(", ", p);
      const std::string_view w = allowed.substr(p, e == std::string_view::npos ? std::string_view::npos : e - p);
      if (w == o.key) known = true;
      if (e == std::string_view::npos) break;
      p = e + 2;
    }
    if (!known) return fail(stack_option_error(o.key_pos, expected, o.key));
    if (!seen.insert(o.key).second)
      return fail(stack_option_error(o.key_pos, "each option once ('" + std::string(o.key) + "' is repeated)", o.key));
    if (i < text.size() && text[i] == '=') {
      ++i;
      const std::size_t vs = i;
      while (i < text.size() && text[i] != ',') ++i;
      o.value = text.substr(vs, i - vs);
      o.value_pos = base + vs;
      if (o.value->empty()) return fail(stack_option_error(o.value_pos, "a value for '" + std::string(o.key) + "'", ""));
    }
    out.push_back(o);
    if (i >= text.size()) break;
    ++i;  // ','
  }
  return out;
}

result<std::string_view> stack_value(const StackOption& o, std::string_view what) {
  if (!o.value)
    return fail(stack_option_error(o.key_pos + o.key.size(),
                                   "'=' and " + std::string(what) + " after '" + std::string(o.key) + "'", ""));
  return *o.value;
}

result<std::int64_t> stack_integer(const StackOption& o, std::int64_t lo, std::int64_t hi) {
  const std::string what = "an integer " + std::to_string(lo) + ".." + std::to_string(hi);
  GIDPOLICY_TRY(text, stack_value(o, what));
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi)
    return fail(stack_option_error(o.value_pos, what, text));
  return v;
}

result<Selection> pinned_index(const GidTable& table, std::uint32_t index, Recorder& rec, const std::string& who) {
  const std::uint32_t len = table.length();
  return read_explicit_index(
      table, index, rec,
      [&] {
        return where(table) + ": " + who + " is not below " +
               (table.port().gid_tbl_len ? "gid_tbl_len " : "the entries listed: ") + std::to_string(len) +
               ": the index names no slot (the driver refuses it)";
      },
      [&](const GidEntry*) -> result<void> {
        if (index <= 255) return success();
        rec.step(index, Verdict::index_above_255, [] { return std::string("not an sgid_index"); });
        return fail(errc::index_exceeds_uint8, where(table) + ": " + who +
                                                   " does not fit sgid_index (a uint8_t): it would route from index " +
                                                   std::to_string(index & 0xffu));
      },
      [&] { return where(table) + ": " + who + " names a slot the source did not print"; },
      [&](const GidEntry& chosen) {
        return (chosen.state == EntryState::empty ? std::string("empty slot") : describe(chosen)) + ": " + who +
               ", used unchecked";
      });
}

bool stack_ipv4(const Gid& g) noexcept {
  if (g.is_ipv4_mapped()) return true;
  const auto& b = g.bytes();
  // ff0e::ffff:a.b.c.d (rdma-core's "IPv4 encoded multicast addresses").
  if (b[0] != 0xff || b[1] != 0x0e) return false;
  for (std::size_t i = 2; i < 10; ++i)
    if (b[i] != 0) return false;
  return b[10] == 0xff && b[11] == 0xff;
}

}  // namespace gidpolicy::detail
