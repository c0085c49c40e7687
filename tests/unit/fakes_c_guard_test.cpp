// The one guard every C entry point of the fakes runs in (fakes/include/gidpolicy/fakes/c_guard.hpp):
// an exception never crosses the C ABI, it becomes the call's failure with the errno it stands
// for, and a locked call's lock is released on the way out.
#include <gidpolicy/fakes/c_guard.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <mutex>
#include <new>
#include <stdexcept>
#include <system_error>

namespace {

namespace c_guard = gidpolicy::fakes::c_guard;

TEST(CGuard, ExceptionsBecomeTheirErrno) {
  errno = 0;
  EXPECT_EQ(c_guard::unlocked(-1, []() -> int { throw std::bad_alloc(); }), -1);
  EXPECT_EQ(errno, ENOMEM);
  // A thread or lock that could not be had says what the system call said.
  EXPECT_EQ(c_guard::unlocked(-1, []() -> int { throw std::system_error(EAGAIN, std::generic_category()); }),
            -1);
  EXPECT_EQ(errno, EAGAIN);
  // Anything else is the fake's bug: still an errno, never std::terminate.
  EXPECT_EQ(c_guard::unlocked(-1, []() -> int { throw std::logic_error("bug"); }), -1);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(c_guard::errno_frame([]() -> int { throw std::system_error(ENOSPC, std::system_category()); }),
            ENOSPC);
  EXPECT_EQ(c_guard::count_frame([]() -> ssize_t { throw 42; }), -EIO);
}

TEST(CGuard, BodyAnswersPassThroughAndSuccessKeepsErrno) {
  errno = 1234;
  EXPECT_EQ(c_guard::unlocked(-1, [] { return 7; }), 7);
  EXPECT_EQ(errno, 1234);
  static int object = 0;
  EXPECT_EQ(c_guard::unlocked<int*>(nullptr, [] { return &object; }), &object);
  EXPECT_EQ(errno, 1234);
}

TEST(CGuard, ErrnoSetFrameReturnsAndSetsTheErrno) {
  errno = 0;
  EXPECT_EQ(c_guard::errno_set_frame([] { return EINVAL; }), EINVAL);
  EXPECT_EQ(errno, EINVAL);
  errno = 1234;
  EXPECT_EQ(c_guard::errno_set_frame([] { return 0; }), 0);
  EXPECT_EQ(errno, 1234);  // success leaves errno alone
  EXPECT_EQ(c_guard::errno_set_frame([]() -> int { throw std::bad_alloc(); }), ENOMEM);
  EXPECT_EQ(errno, ENOMEM);
}

TEST(CGuard, LockedHoldsTheLockAndReleasesItOnAnException) {
  std::mutex mu;
  EXPECT_EQ(c_guard::locked(mu, -1,
                            [&](std::unique_lock<std::mutex>& lock) {
                              EXPECT_TRUE(lock.owns_lock());  // held by the frame
                              return 0;
                            }),
            0);
  errno = 0;
  EXPECT_EQ(c_guard::locked(mu, -1, [](std::unique_lock<std::mutex>&) -> int { throw std::bad_alloc(); }),
            -1);
  EXPECT_EQ(errno, ENOMEM);
  ASSERT_TRUE(mu.try_lock());  // released by the unwinding: the next call is not blocked
  mu.unlock();
  // A body that waits releases the lock itself; the frame does not unlock twice.
  EXPECT_EQ(c_guard::locked(mu, -1,
                            [&](std::unique_lock<std::mutex>& lock) {
                              lock.unlock();
                              EXPECT_TRUE(mu.try_lock());
                              mu.unlock();
                              lock.lock();
                              return 0;
                            }),
            0);
  errno = 0;
  c_guard::locked_void(mu, [](std::unique_lock<std::mutex>&) { throw std::bad_alloc(); });
  EXPECT_EQ(errno, ENOMEM);
  ASSERT_TRUE(mu.try_lock());
  mu.unlock();
  errno = 0;
  c_guard::unlocked_void([] { throw std::bad_alloc(); });
  EXPECT_EQ(errno, ENOMEM);
}

}  // namespace
