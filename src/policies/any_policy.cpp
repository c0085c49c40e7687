#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/ranked.hpp>

namespace gidpolicy {

AnyPolicy::AnyPolicy() : AnyPolicy(Ranked{}) {}

}  // namespace gidpolicy
