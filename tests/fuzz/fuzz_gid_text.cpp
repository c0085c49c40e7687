// Fuzz Gid::parse / Cidr::parse / parse_address: never crash, and whatever parses must print
// back to text that parses to the same value (both text forms).
#include <gidpolicy/gid.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto g = gidpolicy::Gid::parse(text)) {
    auto again = gidpolicy::Gid::parse(g.value().to_string());
    auto full = gidpolicy::Gid::parse(g.value().to_full_string());
    if (!again || again.value() != g.value() || !full || full.value() != g.value()) std::abort();
  } else if (g.error().detail.find("at position ") != 0) {
    std::abort();  // every rejection names its position
  }
  if (auto c = gidpolicy::Cidr::parse(text)) {
    auto back = gidpolicy::Cidr::parse(c.value().to_string());
    if (!back || back.value().prefix_len != c.value().prefix_len) std::abort();
  }
  (void)gidpolicy::parse_address(text);
  return 0;
}
