// AnyPolicy: any SelectionPolicy behind one value type.
//
// What a spec string parses into, what FirstOf and PerDevice hold, and what the CLI, the C API
// and the fake fabric pass around. A value: copies are cheap (the policy inside is immutable
// and shared), equality compares the held policies (same type and equal options), so
// `parse_policy(p.spec()).value() == p` is testable for every policy.
//
// Example:
//   gidpolicy::AnyPolicy p = gidpolicy::Ranked{};
//   auto s = p.select(table);
//   if (const auto* r = p.target<gidpolicy::Ranked>()) r->options.family;
#pragma once

#include <gidpolicy/policy.hpp>

#include <concepts>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace gidpolicy {

class AnyPolicy {
 public:
  /// Holds the automatic policy (Ranked with default options): a default-constructed AnyPolicy
  /// is the recommended behaviour, never an empty one that fails at select().
  AnyPolicy();

  /// Wrap any policy (not another AnyPolicy: that is a copy).
  /// Implicit on purpose (a policy *is* an AnyPolicy); the requires-clause keeps copies and moves
  /// of AnyPolicy itself on the copy/move constructors, which clang-tidy 14 cannot see.
  template <class P>
  requires(!std::same_as<std::remove_cvref_t<P>, AnyPolicy> && SelectionPolicy<std::remove_cvref_t<P>>)
      AnyPolicy(P&& policy)  // NOLINT(google-explicit-constructor,bugprone-forwarding-reference-overload)
      : impl_(std::make_shared<const Model<std::remove_cvref_t<P>>>(std::forward<P>(policy))) {}

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const {
    return impl_->select(table, run);
  }
  [[nodiscard]] std::string spec() const { return impl_->spec(); }
  /// The held policy's answers (SelectionPolicy, policy.hpp): the peers it routes to, and
  /// whether it may pick a slot unchecked.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return impl_->peers(); }
  [[nodiscard]] bool picks_unchecked() const noexcept { return impl_->picks_unchecked(); }

  /// The held policy if it is a P, else nullptr.
  template <class P>
  [[nodiscard]] const P* target() const noexcept {
    if (impl_->type() != typeid(P)) return nullptr;
    return &static_cast<const Model<P>*>(impl_.get())->policy;
  }
  [[nodiscard]] const std::type_info& type() const noexcept { return impl_->type(); }

  friend bool operator==(const AnyPolicy& a, const AnyPolicy& b) {
    return a.impl_ == b.impl_ || a.impl_->equals(*b.impl_);
  }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual result<Selection> select(const GidTable& table, SelectOptions run) const = 0;
    virtual std::string spec() const = 0;
    virtual std::vector<PeerAddress> peers() const = 0;
    virtual bool picks_unchecked() const noexcept = 0;
    virtual const std::type_info& type() const noexcept = 0;
    virtual bool equals(const Concept& other) const = 0;
  };
  template <class P>
  struct Model final : Concept {
    explicit Model(P p) : policy(std::move(p)) {}
    result<Selection> select(const GidTable& table, SelectOptions run) const override {
      return policy.select(table, run);
    }
    std::string spec() const override { return policy.spec(); }
    std::vector<PeerAddress> peers() const override { return policy.peers(); }
    bool picks_unchecked() const noexcept override { return policy.picks_unchecked(); }
    const std::type_info& type() const noexcept override { return typeid(P); }
    bool equals(const Concept& other) const override {
      return other.type() == typeid(P) && static_cast<const Model&>(other).policy == policy;
    }
    P policy;
  };

  std::shared_ptr<const Concept> impl_;
};

static_assert(SelectionPolicy<AnyPolicy>);

}  // namespace gidpolicy
