// Harness for docs/formats.md "Reading tables from code": a fragment that reads a JSON table text.
// The snippet's own #include lands inside the function; the header is included here first, so
// that one is a no-op (#pragma once).
#include <gidpolicy/formats/json.hpp>

#include <iostream>
#include <string>

int snippet(const std::string& text);
int snippet(const std::string& text) {
  {  // the snippet's own indentation starts at column 1
#include SNIPPET_MAIN
  }
  return 0;
}
