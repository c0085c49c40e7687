// GIDs written as text in tests: one definition for every test file, so the test programs can be
// built as unity builds (GIDPOLICY_UNITY_BUILD) without each file's own copy colliding.
//
// Example:
//   EXPECT_EQ(table.entry(2)->gid, g("::ffff:10.99.0.3"));
#pragma once

#include <gidpolicy/gid.hpp>

#include "support/assert_ok.hpp"

#include <string_view>

namespace gidpolicy {

/// The GID `text` names; text that does not parse fails the test with the parser's message
/// (VALUE_OR_FAIL), it never terminates the test program.
inline Gid g(std::string_view text) { return VALUE_OR_FAIL(Gid::parse(text)); }
/// The same, under the upper-case name the format tests use.
inline Gid G(const char* text) { return g(text); }

}  // namespace gidpolicy
