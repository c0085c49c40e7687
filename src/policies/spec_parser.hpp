// Internal: the one parser behind parse_policy() and parse_profile().
#pragma once

#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/source_index.hpp>

#include <string_view>

namespace gidpolicy::detail {

struct ParsedProfile {
  AnyPolicy policy;
  SourceIndex source;
};

/// Parse a spec; `allow_source` admits the "@sgid=N" suffix and the profile name "jaccl"
/// (profiles only): a bare "jaccl" yields JacclFirstMapped + SourceIndex::literal(1).
result<ParsedProfile> parse_spec(std::string_view spec, bool allow_source);

}  // namespace gidpolicy::detail
