// SpecOptions: the options of one policy in a spec ("validated:index=3,type=roce_v2"), as the
// spec parser hands them to the policy's own factory (registry.hpp).
//
// The parser checks the option names against the policy's registry row (unknown and repeated
// keys are refused there, with the row's list of options); the factory reads the values. Each
// reader returns the parser's positioned error ("at position P: expected E, found 'X' in ...",
// spec.hpp), so a policy's options report exactly as the grammar's do, wherever the policy lives.
//
// Example (a factory, as a policy's own source writes it, here as a lambda):
//   auto from_options = [](const SpecOptions& opts) -> result<AnyPolicy> {
//     if (opts.empty()) return AnyPolicy(Ds4Scan{});
//     GIDPOLICY_TRY(v, opts.integer(opts.front(), 0, 4294967295, "an index"));
//     return AnyPolicy(Ds4ExplicitIndex{static_cast<std::uint32_t>(v)});
//   };
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace gidpolicy {

/// One option as written: its key, the key's byte offset in the spec, and its value (with the
/// value's offset) when it had one ("index=3"); a flag ("allow-link-local") has no value.
struct SpecOption {
  std::string_view key;
  std::size_t key_pos = 0;
  std::optional<std::string_view> value;
  std::size_t value_pos = 0;
};

namespace detail {
/// The parser's error: errc::invalid_policy_spec, "at position `at`: expected `expected`, found
/// ..." quoting `value` when given (an option value holding ':' or '/'), else the token at `at`,
/// and a bounded excerpt of `spec` around `at`.
Error spec_error(std::string_view spec, std::size_t at, std::string_view expected,
                 std::optional<std::string_view> value = std::nullopt);
}  // namespace detail

/// The options of one policy, in the order written; views into the spec being parsed (valid
/// only during the factory call).
class SpecOptions {
 public:
  /// `end` is the offset just past the options (where a missing required option is reported).
  SpecOptions(std::string_view spec, std::vector<SpecOption> options, std::size_t end)
      : spec_(spec), options_(std::move(options)), end_(end) {}

  [[nodiscard]] bool empty() const noexcept { return options_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return options_.size(); }
  [[nodiscard]] const SpecOption& front() const { return options_.front(); }
  [[nodiscard]] auto begin() const noexcept { return options_.begin(); }
  [[nodiscard]] auto end() const noexcept { return options_.end(); }

  /// A decimal integer in [lo, hi] ("expected `what` lo..hi").
  [[nodiscard]] result<std::int64_t> integer(const SpecOption& o, std::int64_t lo, std::int64_t hi,
                                             std::string_view what) const;
  /// The option's value, which it must have ("expected '=' and `what` after 'key'").
  [[nodiscard]] result<std::string_view> value(const SpecOption& o, std::string_view what) const;
  /// A flag: the option must have no value.
  [[nodiscard]] result<void> flag(const SpecOption& o) const;
  /// A non-zero IPv4 or IPv6 address (IPv4 as ::ffff:a.b.c.d).
  [[nodiscard]] result<Gid> address(const SpecOption& o) const;
  /// A CIDR prefix such as 10.0.0.0/8 or fd00::/8.
  [[nodiscard]] result<Cidr> cidr(const SpecOption& o) const;

  /// The option's value is not what `expected` says: the error quotes the whole value.
  [[nodiscard]] Error bad_value(const SpecOption& o, std::string_view expected) const;
  /// An error at the option's key ("one of 'roce' or 'type', once").
  [[nodiscard]] Error bad_key(const SpecOption& o, std::string_view expected) const;
  /// Something the options as a whole lack, reported at their end ("the option 'index=N' ...").
  [[nodiscard]] Error missing(std::string_view expected) const;

 private:
  std::string_view spec_;
  std::vector<SpecOption> options_;
  std::size_t end_;
};

}  // namespace gidpolicy
