// Fuzz the fleet's one-pass `show --json` snapshot reader: never crash, never accept what is not
// JSON (nlohmann is the referee), and what it accepts names a host and holds ports.
#include <gidpolicy/fleet.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto snap = gidpolicy::fleet::parse_snapshot(text, "fuzz.json");
  if (!snap) return 0;
  if (!nlohmann::json::accept(text)) std::abort();
  if (snap.value().host.empty() || snap.value().ports.empty()) std::abort();
  return 0;
}
