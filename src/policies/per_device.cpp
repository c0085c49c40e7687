#include <gidpolicy/policies/per_device.hpp>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

namespace gidpolicy {

const AnyPolicy* PerDevice::policy_for(std::string_view device) const noexcept {
  if (auto it = by_device.find(device); it != by_device.end()) return &it->second;
  return fallback ? &*fallback : nullptr;
}

result<Selection> PerDevice::select(const GidTable& table, SelectOptions run) const {
  const AnyPolicy* p = policy_for(table.port().device);
  if (!p) {
    std::string d =
        "per-device policy has no entry for device '" + table.port().device + "' and no default (*=...)";
    auto trace = std::make_shared<Trace>();
    // Not spec(): with thousands of devices that repeats the whole list for every unlisted one.
    trace->attempts.push_back(Trace::Attempt{"per-device(...)", {}, d});
    return fail(Error(errc::device_not_found, std::move(d), std::move(trace)));
  }
  return p->select(table, run);
}

std::string PerDevice::spec() const {
  std::string s = "per-device(";
  bool first = true;
  for (const auto& [dev, p] : by_device) {
    if (!first) s += ';';
    first = false;
    s += dev + "=" + p.spec();
  }
  if (fallback) {
    if (!first) s += ';';
    s += "*=" + fallback->spec();
  }
  return s + ")";
}

std::vector<PeerAddress> PerDevice::peers() const {
  std::vector<PeerAddress> out;
  const auto add = [&out](const AnyPolicy& a) {
    for (PeerAddress& p : a.peers())
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
  };
  for (const auto& [device, a] : by_device) add(a);
  if (fallback) add(*fallback);
  return out;
}

bool PerDevice::picks_unchecked() const noexcept {
  for (const auto& [device, a] : by_device)
    if (a.picks_unchecked()) return true;
  return fallback && fallback->picks_unchecked();
}

}  // namespace gidpolicy
