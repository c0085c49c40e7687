#include <gidpolicy/policies/filters.hpp>

#include <algorithm>
#include <cctype>
#include <string>

namespace gidpolicy {
namespace {

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string_view to_string(FamilyFilter f) noexcept {
  switch (f) {
    case FamilyFilter::ipv4:
      return "ipv4";
    case FamilyFilter::ipv6:
      return "ipv6";
    case FamilyFilter::any:
      break;
  }
  return "any";
}

std::optional<FamilyFilter> family_filter_from_string(std::string_view s) noexcept {
  const std::string l = lower_ascii(s);
  if (l == "any") return FamilyFilter::any;
  if (l == "ipv4" || l == "4" || l == "inet") return FamilyFilter::ipv4;
  if (l == "ipv6" || l == "6" || l == "inet6") return FamilyFilter::ipv6;
  return std::nullopt;
}

std::string_view to_string(TypeFilter t) noexcept {
  switch (t) {
    case TypeFilter::ib:
      return "ib";
    case TypeFilter::roce_v1:
      return "roce_v1";
    case TypeFilter::roce_v2:
      return "roce_v2";
    case TypeFilter::any:
      break;
  }
  return "any";
}

std::optional<TypeFilter> type_filter_from_string(std::string_view s) noexcept {
  const std::string l = lower_ascii(s);
  if (l == "any") return TypeFilter::any;
  if (l == "ib") return TypeFilter::ib;
  if (l == "roce_v1" || l == "v1" || l == "roce v1") return TypeFilter::roce_v1;
  if (l == "roce_v2" || l == "v2" || l == "roce v2") return TypeFilter::roce_v2;
  return std::nullopt;
}

}  // namespace gidpolicy
