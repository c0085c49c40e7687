// Fuzz format detection plus whichever reader it picks: never crash, never a success without
// tables unless the input was show_gids output that found none (or JSON with no port), never an
// error without a message.
#include <gidpolicy/formats/detect.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tables = gidpolicy::formats::read_tables(text, "fuzz");
  if (!tables) {
    if (tables.error().detail.empty()) std::abort();
    return 0;
  }
  auto format = gidpolicy::formats::detect_format(text, "fuzz");
  if (!format) std::abort();  // read_tables succeeded, so detection did
  if (tables.value().empty() && format.value() == gidpolicy::formats::Format::devinfo) std::abort();
  return 0;
}
