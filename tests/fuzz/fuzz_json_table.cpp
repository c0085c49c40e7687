// Fuzz the JSON table reader: never crash; a document that reads must write and read back equal.
#include <gidpolicy/formats/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tables = gidpolicy::formats::read_json(text, "fuzz.json");
  if (!tables) return 0;
  auto back = gidpolicy::formats::read_json(gidpolicy::formats::write_json(tables.value()), "again.json");
  if (!back || !(back.value() == tables.value())) std::abort();
  return 0;
}
