// The C API's watch entry points (gidpolicy.h, "Watching a port") on the fake through its C ABI,
// as a C program that dlsym()ed libibverbs holds it: event loop, change kinds, replan.
#include <gidpolicy/gidpolicy.h>
#include <gidpolicy/fakes/fake_c_abi.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>

#include <gtest/gtest.h>
#include "support/assert_ok.hpp"

#include <poll.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

using gidpolicy::fakes::TableMutation;

constexpr const char* kTable = R"({"schema": "gidpolicy.tables", "version": 1, "ports": [
  {"device": "rdma_en2", "port": 1, "state": "active", "link_layer": "thunderbolt", "gid_tbl_len": 16,
   "entries": [{"index": 0, "gid": "fe80::14a2:7cff:fe31:9d05"}, {"index": 1, "gid": "::ffff:169.254.10.2"}]}]})";

class CWatch : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.load_text(kTable, "test").has_value());
    namespace c = gidpolicy::fakes::c_abi;
    int n = 0;
    ibv_device** list = c::get_device_list(&n);
    ASSERT_NE(list, nullptr);
    ctx_ = c::open_device(list[0]);
    c::free_device_list(list);
    ASSERT_NE(ctx_, nullptr);
    fns_.query_port = &c::query_port;
    fns_.query_gid = &c::query_gid;
    fns_.query_gid_ex_sized = &c::query_gid_ex;
    async_.get_async_event = &c::get_async_event;
    async_.ack_async_event = &c::ack_async_event;
    ASSERT_EQ(gidpolicy_profile_parse("jaccl-fixed", &policy_, err_, sizeof err_), GIDPOLICY_OK) << err_;
    gidpolicy_table* t = nullptr;
    ASSERT_EQ(gidpolicy_snapshot(&fns_, ctx_, 1, GIDPOLICY_SNAPSHOT_NO_NETDEV_NAMES, &t, err_, sizeof err_),
              GIDPOLICY_OK)
        << err_;
    ASSERT_EQ(gidpolicy_select(policy_, t, &sel_, err_, sizeof err_), GIDPOLICY_OK) << err_;
    gidpolicy_table_free(t);
  }
  void TearDown() override {
    gidpolicy_plan_free(sel_);
    gidpolicy_profile_free(policy_);
    if (ctx_) gidpolicy::fakes::c_abi::close_device(ctx_);
  }

  gidpolicy::fakes::FakeVerbs fake_;
  gidpolicy::fakes::c_abi::Binding binding_{fake_};
  ibv_context* ctx_ = nullptr;
  gidpolicy_verbs_fns fns_{};
  gidpolicy_async_fns async_{};
  gidpolicy_profile* policy_ = nullptr;
  gidpolicy_plan* sel_ = nullptr;
  char err_[1024] = {};
};

TEST_F(CWatch, DisappearsThenReappearsElsewhereAndReplanFollowsIt) {
  gidpolicy_watch* w = nullptr;
  ASSERT_EQ(gidpolicy_watch_open(&fns_, &async_, ctx_, 1, sel_, &w, err_, sizeof err_), GIDPOLICY_OK) << err_;
  ASSERT_GE(gidpolicy_watch_fd(w), 0);
  gidpolicy_change_kind kind = GIDPOLICY_CHANGE_UNCHANGED;
  uint32_t index = 0;
  ASSERT_EQ(gidpolicy_watch_process(w, &kind, &index, err_, sizeof err_), GIDPOLICY_OK);
  EXPECT_EQ(kind, GIDPOLICY_CHANGE_NONE);

  ASSERT_TRUE(fake_.apply(TableMutation::emptied("rdma_en2", 1, 1)).has_value());
  pollfd p{gidpolicy_watch_fd(w), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 60000), 1);  // the fake signals at once; 60 s is a hang guard
  ASSERT_EQ(gidpolicy_watch_process(w, &kind, &index, err_, sizeof err_), GIDPOLICY_OK) << err_;
  EXPECT_EQ(kind, GIDPOLICY_CHANGE_DISAPPEARED);
  EXPECT_EQ(index, UINT32_MAX);
  gidpolicy_plan* next = nullptr;
  int tell = -1;
  EXPECT_EQ(gidpolicy_watch_replan(w, policy_, sel_, &next, &tell, err_, sizeof err_),
            GIDPOLICY_ERR_NO_CANDIDATE);
  EXPECT_EQ(next, nullptr);

  ASSERT_TRUE(
      fake_
          .apply(TableMutation::set(
              "rdma_en2", 1,
              gidpolicy::GidEntry::valid(4, VALUE_OR_FAIL(gidpolicy::Gid::parse("::ffff:169.254.10.2")))))
          .has_value());
  ASSERT_EQ(gidpolicy_watch_process(w, &kind, &index, err_, sizeof err_), GIDPOLICY_OK) << err_;
  EXPECT_EQ(kind, GIDPOLICY_CHANGE_REAPPEARED);
  EXPECT_EQ(index, 4u);
  char line[256];
  gidpolicy_watch_describe(w, line, sizeof line);
  EXPECT_EQ(std::string(line),
            "rdma_en2 port 1: ::ffff:169.254.10.2 (ib) reappeared at index 4 [gid_change]");
  ASSERT_EQ(gidpolicy_watch_replan(w, policy_, sel_, &next, &tell, err_, sizeof err_), GIDPOLICY_OK) << err_;
  EXPECT_EQ(gidpolicy_plan_sgid_index(next), 4);
  EXPECT_EQ(tell, 0);
  EXPECT_EQ(gidpolicy_plan_agrees(next), 1);
  gidpolicy_plan_free(next);
  gidpolicy_watch_free(w);
}

struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<gidpolicy_change_kind, uint32_t>> changes;
  std::string last;
};

void on_change(void* user, gidpolicy_change_kind kind, uint32_t index, const char* description) {
  auto* s = static_cast<Seen*>(user);
  std::lock_guard lock(s->mu);
  s->changes.emplace_back(kind, index);
  s->last = description;
  s->cv.notify_all();
}

TEST_F(CWatch, ThreadFormCallsBackForEachChange) {
  gidpolicy_watch* w = nullptr;
  ASSERT_EQ(gidpolicy_watch_open(&fns_, &async_, ctx_, 1, sel_, &w, err_, sizeof err_), GIDPOLICY_OK) << err_;
  Seen seen;
  gidpolicy_watch_thread* t = nullptr;
  ASSERT_EQ(gidpolicy_watch_thread_start(&w, &on_change, &seen, &t, err_, sizeof err_), GIDPOLICY_OK) << err_;
  EXPECT_EQ(w, nullptr);  // the thread owns it now
  ASSERT_TRUE(fake_.apply(TableMutation::moved_index("rdma_en2", 1, 1, 6)).has_value());
  {
    std::unique_lock lock(seen.mu);
    // A hang guard: the watch thread calls back as soon as it is scheduled.
    ASSERT_TRUE(seen.cv.wait_for(lock, std::chrono::seconds(60), [&] { return !seen.changes.empty(); }));
    EXPECT_EQ(seen.changes[0].first, GIDPOLICY_CHANGE_MOVED);
    EXPECT_EQ(seen.changes[0].second, 6u);
    EXPECT_EQ(seen.last, "rdma_en2 port 1: ::ffff:169.254.10.2 (ib) moved from index 1 to 6 [gid_change]");
  }
  gidpolicy_watch_thread_stop(t);
  gidpolicy_watch_thread_stop(nullptr);
  gidpolicy_watch* none = nullptr;
  EXPECT_EQ(gidpolicy_watch_thread_start(&none, &on_change, &seen, &t, err_, sizeof err_),
            GIDPOLICY_ERR_INVALID_ARGUMENT);
}

TEST_F(CWatch, BadArgumentsAndMissingEventCallsAreStatuses) {
  gidpolicy_watch* w = nullptr;
  EXPECT_EQ(gidpolicy_watch_open(&fns_, nullptr, ctx_, 1, sel_, &w, err_, sizeof err_),
            GIDPOLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(gidpolicy_watch_open(&fns_, &async_, ctx_, 0, sel_, &w, err_, sizeof err_),
            GIDPOLICY_ERR_INVALID_ARGUMENT);
  gidpolicy_async_fns none{};
  EXPECT_EQ(gidpolicy_watch_open(&fns_, &none, ctx_, 1, sel_, &w, err_, sizeof err_),
            GIDPOLICY_ERR_NOT_SUPPORTED);
  EXPECT_EQ(w, nullptr);
  EXPECT_EQ(gidpolicy_watch_fd(nullptr), -1);
  gidpolicy_watch_free(nullptr);
}

}  // namespace
