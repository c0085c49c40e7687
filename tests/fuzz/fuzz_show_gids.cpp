// Fuzz the show_gids reader: never crash; what reads must write and read back as its view.
#include <gidpolicy/formats/show_gids.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tables = gidpolicy::formats::read_show_gids(text, "fuzz.txt");
  if (!tables) return 0;
  const auto view = gidpolicy::formats::show_gids_view(tables.value());
  auto back =
      gidpolicy::formats::read_show_gids(gidpolicy::formats::write_show_gids(tables.value()), "again.txt");
  if (!back || !(back.value() == view)) std::abort();
  return 0;
}
