// MockVerbs: a gmock mock of VerbsApi that delegates to a FakeVerbs by default.
//
// An interaction test states only the expectations it cares about ("modify_qp is never
// called", "read_gid_entry is called exactly once for index 3") while every other call behaves
// like the stateful fake (tables, driver model, faults). Header-only and for tests only:
// include it from a test that links GTest::gmock; the gidpolicy_fakes library itself does not
// depend on gtest (the drop-in libibverbs.so.1 links the fake without it).
//
// Example:
//   gidpolicy::fakes::FakeVerbs fake;
//   if (auto ok = fake.load_file(path); !ok) return ok.error();
//   testing::NiceMock<gidpolicy::fakes::MockVerbs> mock(fake);    // every call goes to the fake
//   EXPECT_CALL(mock, modify_qp).Times(0);                         // preflight refuses first
//   auto dev = mock.open_device("rdma_en2").value();
//   auto qp = mock.create_qp(dev, gidpolicy::QpKind::uc).value();
//   auto r = gidpolicy::verbs::apply_rtr(mock, qp, dev, 1, rtr);
#pragma once

#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <gmock/gmock.h>

namespace gidpolicy::fakes {

class MockVerbs : public verbs::VerbsApi {
 public:
  /// Every method delegates to `fake` unless a test says otherwise.
  explicit MockVerbs(FakeVerbs& fake) : fake_(fake) {
    using ::testing::_;
    using ::testing::Invoke;
    ON_CALL(*this, backend_name).WillByDefault([this] { return "mock(" + fake_.backend_name() + ")"; });
    ON_CALL(*this, device_names).WillByDefault(Invoke(&fake_, &FakeVerbs::device_names));
    ON_CALL(*this, open_device).WillByDefault(Invoke(&fake_, &FakeVerbs::open_device));
    ON_CALL(*this, close_device).WillByDefault(Invoke(&fake_, &FakeVerbs::close_device));
    ON_CALL(*this, device_name).WillByDefault(Invoke(&fake_, &FakeVerbs::device_name));
    ON_CALL(*this, port_attributes).WillByDefault(Invoke(&fake_, &FakeVerbs::port_attributes));
    ON_CALL(*this, read_gid).WillByDefault(Invoke(&fake_, &FakeVerbs::read_gid));
    ON_CALL(*this, read_gid_entry).WillByDefault(Invoke(&fake_, &FakeVerbs::read_gid_entry));
    ON_CALL(*this, read_gid_table).WillByDefault(Invoke(&fake_, &FakeVerbs::read_gid_table));
    ON_CALL(*this, read_support).WillByDefault(Invoke(&fake_, &FakeVerbs::read_support));
    ON_CALL(*this, create_qp).WillByDefault(Invoke(&fake_, &FakeVerbs::create_qp));
    ON_CALL(*this, modify_qp).WillByDefault(Invoke(&fake_, &FakeVerbs::modify_qp));
    ON_CALL(*this, query_qp).WillByDefault(Invoke(&fake_, &FakeVerbs::query_qp));
    ON_CALL(*this, destroy_qp).WillByDefault(Invoke(&fake_, &FakeVerbs::destroy_qp));
    ON_CALL(*this, async_event_fd).WillByDefault(Invoke(&fake_, &FakeVerbs::async_event_fd));
    ON_CALL(*this, read_async_event).WillByDefault(Invoke(&fake_, &FakeVerbs::read_async_event));
    ON_CALL(*this, ack_async_event).WillByDefault(Invoke(&fake_, &FakeVerbs::ack_async_event));
  }

  MOCK_METHOD(std::string, backend_name, (), (const, override));
  MOCK_METHOD(result<std::vector<std::string>>, device_names, (), (override));
  MOCK_METHOD(result<verbs::DeviceHandle>, open_device, (std::string_view name), (override));
  MOCK_METHOD(result<void>, close_device, (verbs::DeviceHandle device), (override));
  MOCK_METHOD(result<std::string>, device_name, (verbs::DeviceHandle device), (const, override));
  MOCK_METHOD(result<PortInfo>, port_attributes, (verbs::DeviceHandle device, std::uint32_t port),
              (override));
  MOCK_METHOD(result<Gid>, read_gid, (verbs::DeviceHandle device, std::uint32_t port, std::uint32_t index),
              (override));
  MOCK_METHOD(result<GidEntry>, read_gid_entry,
              (verbs::DeviceHandle device, std::uint32_t port, std::uint32_t index), (override));
  MOCK_METHOD(result<std::vector<verbs::GidTableRow>>, read_gid_table,
              (verbs::DeviceHandle device, std::uint32_t max_entries), (override));
  MOCK_METHOD(verbs::ReadSupport, read_support, (verbs::DeviceHandle device), (const, override));
  MOCK_METHOD(result<verbs::QpHandle>, create_qp, (verbs::DeviceHandle device, QpKind kind), (override));
  MOCK_METHOD(result<void>, modify_qp, (verbs::QpHandle qp, const ibv_qp_attr& attr, int mask), (override));
  MOCK_METHOD(result<verbs::QpInfo>, query_qp, (verbs::QpHandle qp), (override));
  MOCK_METHOD(result<void>, destroy_qp, (verbs::QpHandle qp), (override));
  MOCK_METHOD(result<int>, async_event_fd, (verbs::DeviceHandle device), (override));
  MOCK_METHOD(result<std::optional<verbs::AsyncEvent>>, read_async_event, (verbs::DeviceHandle device),
              (override));
  MOCK_METHOD(result<void>, ack_async_event, (verbs::DeviceHandle device, const verbs::AsyncEvent& event),
              (override));

  [[nodiscard]] FakeVerbs& fake() const noexcept { return fake_; }

 private:
  FakeVerbs& fake_;
};

}  // namespace gidpolicy::fakes
