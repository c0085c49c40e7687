// The one guard around every C entry point of the fakes: the in-process C ABI, the drop-in
// libibverbs.so.1 and the drop-in librdmacm.so.1 (the shared fake core; no JSON, no verbs state).
//
// A C caller cannot catch a C++ exception: one that leaves an extern "C" function ends the
// program in std::terminate, where the real library would have returned an error. So each
// entry point runs its body inside one of these frames, which keep every exception inside and
// answer it in the call's own return convention with the errno the exception stands for:
//  * std::bad_alloc: ENOMEM, as libibverbs and librdmacm answer running out of memory;
//  * std::system_error of the generic or system category (a thread or a lock that could not be
//    had): its errno, as the failed system call would have said;
//  * anything else: EIO (a bug of the fake, still never a crash of the program).
//
// The conventions (rdma-core 44's):
//  * errno_frame: 0 or a positive errno (ibv_query_port, ibv_destroy_*, _ibv_query_gid_ex);
//  * errno_set_frame: the same, and a failure's errno left in errno too (ibv_modify_qp: the
//    provider's command failed with that errno);
//  * minus_one_frame: `body` answers 0 or an errno, the caller sees 0, or -1 with errno;
//  * pointer_frame: an object, or NULL with errno;
//  * count_frame: a count or a negative errno (_ibv_query_gid_table);
//  * locked / unlocked: the body's own answer (it sets errno where it fails, as librdmacm's
//    calls do), `failure` with errno for an exception; `locked` holds `mu` around the body and
//    hands it the lock, so a call that waits (rdma_get_cm_event) can release and retake it.
//
// And fork(): own_fork registers what the library's lock and state need in a child that
// keeps using the library without exec (its threads are gone, the parent's sockets stay the
// parent's), as real librdmacm keeps working in such a child for the ids it creates there.
//
// Example (a librdmacm-style call, -1 with errno, its lock held; an exception is -1 with ENOMEM):
//   static std::mutex mu;
//   int rc = gidpolicy::fakes::c_guard::locked(mu, -1, [&](std::unique_lock<std::mutex>&) -> int {
//     return 0;  // the call's own answer, errno set where it fails
//   });
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <cerrno>
#include <mutex>
#include <new>
#include <system_error>
#include <type_traits>
#include <utility>

namespace gidpolicy::fakes::c_guard {

/// The errno the exception being handled stands for (see the header comment). Call it only
/// inside a catch block.
inline int current_exception_errno() noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  } catch (const std::system_error& e) {
    const bool os =
        e.code().category() == std::generic_category() || e.code().category() == std::system_category();
    return os && e.code().value() > 0 ? e.code().value() : EIO;
  } catch (...) {
    return EIO;
  }
}

/// Calls that return 0 or a positive errno.
template <class Body>
int errno_frame(Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return current_exception_errno();
  }
}

/// Calls that return 0 or a positive errno and leave a failure's errno in errno too.
template <class Body>
int errno_set_frame(Body&& body) noexcept {
  const int err = errno_frame(std::forward<Body>(body));
  if (err != 0) errno = err;
  return err;
}

/// Calls that return 0, or -1 with errno: `body` returns 0 or the errno.
template <class Body>
int minus_one_frame(Body&& body) noexcept {
  const int err = errno_frame(std::forward<Body>(body));
  if (err == 0) return 0;
  errno = err;
  return -1;
}

/// Calls that return an object, or NULL with errno: `body` returns the object, or NULL with the
/// errno set through its argument (EINVAL when it set none).
template <class Body>
auto pointer_frame(Body&& body) noexcept -> decltype(body(std::declval<int&>())) {
  int err = 0;
  try {
    auto* p = body(err);
    if (p) return p;
  } catch (...) {
    err = current_exception_errno();
  }
  errno = err != 0 ? err : EINVAL;
  return nullptr;
}

/// Calls that return a count or a negative errno.
template <class Body>
ssize_t count_frame(Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return -static_cast<ssize_t>(current_exception_errno());
  }
}

/// fork() for a library whose state one mutex guards (the drop-in librdmacm): registers, once,
/// pthread_atfork handlers that take `Mutex()` before the fork (no other thread is then halfway
/// through changing the state the child copies) and release it in both processes; in the child,
/// `Child()` runs first, with the lock held, to make the copied state the child's own (its
/// threads did not come along: a progress thread is restarted at its next use). Call it at the
/// top of each guarded call; after the first, it costs one check of a static.
template <std::mutex& (*Mutex)() noexcept, void (*Child)() noexcept>
void own_fork() noexcept {
  static const bool registered = [] {
    return ::pthread_atfork([] { Mutex().lock(); }, [] { Mutex().unlock(); },
                            [] {
                              Child();
                              Mutex().unlock();
                            }) == 0;
  }();
  (void)registered;
}

/// The body's own answer with `mu` held (the body gets the lock and may release and retake it
/// while it waits); an exception releases the lock and becomes `failure` with errno set.
template <class Result, class Body>
Result locked(std::mutex& mu, Result failure, Body&& body) noexcept {
  try {
    std::unique_lock<std::mutex> lock(mu);
    return body(lock);
  } catch (...) {
    errno = current_exception_errno();  // the lock is already released by the unwinding
    return failure;
  }
}

/// A call that returns nothing (rdma_destroy_qp ...): `body` runs with `mu` held; an exception
/// releases the lock and leaves its errno, the only answer such a call has.
template <class Body>
void locked_void(std::mutex& mu, Body&& body) noexcept {
  try {
    std::unique_lock<std::mutex> lock(mu);
    body(lock);
  } catch (...) {
    errno = current_exception_errno();
  }
}

/// As locked, without a lock: for calls that take none themselves (pure answers, and calls made
/// of other entry points, which lock for themselves).
template <class Result, class Body>
Result unlocked(Result failure, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    errno = current_exception_errno();
    return failure;
  }
}

/// As locked_void, without a lock.
template <class Body>
void unlocked_void(Body&& body) noexcept {
  try {
    body();
  } catch (...) {
    errno = current_exception_errno();
  }
}

}  // namespace gidpolicy::fakes::c_guard
