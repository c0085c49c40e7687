// Fuzz the ibv_devinfo reader: never crash; what reads must write and read back as its
// devinfo_view (a table read from devinfo is already in view form, so: equal).
#include <gidpolicy/formats/devinfo.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tables = gidpolicy::formats::read_devinfo(text, "fuzz.txt");
  if (!tables) return 0;
  const auto view = gidpolicy::formats::devinfo_view(tables.value());
  auto back =
      gidpolicy::formats::read_devinfo(gidpolicy::formats::write_devinfo(tables.value()), "again.txt");
  if (!back || !(back.value() == view)) std::abort();
  return 0;
}
