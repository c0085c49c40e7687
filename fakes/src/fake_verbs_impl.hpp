// Private to the fake VerbsApi's units (fake_verbs.cpp: the fake itself; fake_tables.cpp: table
// mutations; fake_qp_model.cpp: the QP state model): the model every one of them reads and changes.
#pragma once

#include <gidpolicy/fakes/fake_verbs.hpp>

#include <unistd.h>

#include <array>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

namespace gidpolicy::fakes {

namespace detail {

struct Port {
  PortInfo info;
  std::map<std::uint32_t, GidEntry> entries;
  Holes holes = Holes::empty;
  std::set<std::uint32_t> netdev_gone;

  [[nodiscard]] std::uint32_t length() const { return info.gid_tbl_len.value_or(0); }
  [[nodiscard]] GidTable table() const {
    std::vector<GidEntry> v;
    v.reserve(entries.size());
    for (const auto& [i, e] : entries) v.push_back(e);
    // The model keeps indices below gid_tbl_len and unique: make() cannot fail here.
    return GidTable::make(info, std::move(v), holes).value();
  }
};

struct Device {
  std::string name;
  DriverModel driver;
  verbs::ReadSupport support{true, true, true};
  std::map<std::uint32_t, Port> ports;
};

struct Qp {
  FakeQp state;
  std::uint64_t handle = 0;  // the device handle it was created through
};

struct Pending {
  enum class What : std::uint8_t { fail_kind_nth, fail_every, fail_any_nth, mutate } what;
  VerbsCall kind = VerbsCall::device_names;
  unsigned remaining = 0;
  int err = 0;
  TableMutation mutation;
};

inline std::string hex(int v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

}  // namespace detail

using detail::Device;
using detail::hex;
using detail::Pending;
using detail::Port;
using detail::Qp;

struct FakeVerbs::Impl {
  mutable std::mutex mu;
  std::vector<Device> devices;                   // in the order added: ibv_get_device_list's order
  std::map<std::uint64_t, std::string> handles;  // open device handles
  std::map<std::uint64_t, Qp> qps;
  std::uint64_t next_id = 1;
  std::uint32_t next_qp_num = 0x100;
  std::function<result<std::uint32_t>()> qp_numbers;
  std::array<unsigned, verbs::kVerbsCallKinds> counts{};
  std::vector<VerbsCall> log;
  std::vector<Pending> pending;
  std::vector<Error> failed_mutations;
  struct Events {
    int fd = -1;  // eventfd, semaphore mode: its counter is the queue's length
    std::deque<verbs::AsyncEvent> queue;
    unsigned unacked = 0;
  };
  std::map<std::uint64_t, Events> events;  // per open device handle

  ~Impl() {
    for (auto& [h, e] : events)
      if (e.fd >= 0) ::close(e.fd);
  }

  static bool usable_state(PortState s) { return s == PortState::active || s == PortState::armed; }

  /// Queue an event on every handle open on `dev`.
  void raise(const std::string& dev, std::uint32_t port, ibv_event_type type) {
    for (auto& [h, name] : handles) {
      if (name != dev) continue;
      Events& e = events[h];
      if (e.queue.size() >= FakeVerbs::kMaxQueuedEvents) continue;
      verbs::AsyncEvent ev;
      ev.type = type;
      ev.port = port;
      std::memset(&ev.raw, 0, sizeof ev.raw);
      ev.raw.event_type = type;
      ev.raw.element.port_num = static_cast<int>(port);
      e.queue.push_back(ev);
      if (e.fd >= 0) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(e.fd, &one, sizeof one);
      }
    }
  }

  Device* device(std::string_view name) {
    for (auto& d : devices)
      if (d.name == name) return &d;
    return nullptr;
  }
  const Device* device(std::string_view name) const {
    for (const auto& d : devices)
      if (d.name == name) return &d;
    return nullptr;
  }

  result<Device*> device_or_error(std::string_view name) {
    if (Device* d = device(name)) return d;
    return fail(errc::device_not_found, "the fake has no device '" + std::string(name) + "'");
  }

  result<Port*> port(std::string_view dev, std::uint32_t p) {
    GIDPOLICY_TRY(d, device_or_error(dev));
    auto it = d->ports.find(p);
    if (it == d->ports.end())
      return fail(errc::invalid_argument,
                  "the fake device " + std::string(dev) + " has no port " + std::to_string(p));
    return &it->second;
  }

  /// Count a call, apply mutations due now, and fire a fault due now.
  result<void> enter(VerbsCall kind, const std::string& what) {
    ++counts[static_cast<std::size_t>(kind)];
    log.push_back(kind);
    // Mutations first: a mutation "at call N" is visible to call N even when N also fails.
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->what == Pending::What::mutate && it->kind == kind && --it->remaining == 0) {
        if (auto r = apply(it->mutation); !r) failed_mutations.push_back(r.error());
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    std::optional<int> fire;
    for (auto it = pending.begin(); it != pending.end();) {
      bool erase = false;
      switch (it->what) {
        case Pending::What::fail_kind_nth:
          if (it->kind == kind && --it->remaining == 0) {
            if (!fire) fire = it->err;
            erase = true;
          }
          break;
        case Pending::What::fail_any_nth:
          if (--it->remaining == 0) {
            if (!fire) fire = it->err;
            erase = true;
          }
          break;
        case Pending::What::fail_every:
          if (it->kind == kind && !fire) fire = it->err;
          break;
        case Pending::What::mutate:
          break;
      }
      it = erase ? pending.erase(it) : it + 1;
    }
    if (fire) return fail_errno(*fire, what + ": injected fault");
    return success();
  }

  /// Apply one mutation to the model and raise the events the kernel would (fake_tables.cpp).
  result<void> apply(const TableMutation& m);

  result<std::string> handle_device(DeviceHandle h) const {
    auto it = handles.find(h.id);
    if (it == handles.end())
      return fail(errc::invalid_argument,
                  "device handle " + std::to_string(h.id) + " is not open in the fake");
    return it->second;
  }

  unsigned qps_on(std::string_view dev) const {
    unsigned n = 0;
    for (const auto& [id, q] : qps)
      if (q.state.device == dev) ++n;
    return n;
  }

  /// Where a call is, for messages: "read_gid_entry(rdma_en2, 1, 3)".
  static std::string where(VerbsCall c, std::string_view dev, std::uint32_t port, std::uint32_t index) {
    return std::string(verbs::to_string(c)) + "(" + std::string(dev) + ", " + std::to_string(port) + ", " +
           std::to_string(index) + ")";
  }
};

}  // namespace gidpolicy::fakes
