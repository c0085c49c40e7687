// rdmacm.exceptions_become_errno: an exception inside an exported function of the fake librdmacm
// becomes that function's failure with an errno (std::bad_alloc: ENOMEM, as librdmacm answers
// running out of memory), never a crash of the program, and the library's lock is released on
// the way out, so the next call works.
//
// The exception is forced the way a program meets one: memory runs out. This program replaces
// the global operator new (the fake libraries bind to the program's, as every shared library
// does), and while `fail_here` is set on the calling thread every allocation fails: a throwing
// new throws std::bad_alloc, a nothrow new returns NULL. Each call below reaches a throwing
// allocation (a control-log record, a reason string) before it answers, so without the guard
// the exception would leave the extern "C" function and end this program in std::terminate.
//
// GIDPOLICY_FAKE_TABLES names a table, GIDPOLICY_FAKE_CM_DIR a scratch directory. Exit 0 when
// every case holds, 1 otherwise (each failure printed), 2 when the library cannot start.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {
thread_local bool fail_here = false;
int failures = 0;

void check(bool ok, const char* what, long got, int err) {
  std::printf("%s %s: returned %ld errno %d\n", ok ? "ok  " : "FAIL", what, got, err);
  if (!ok) ++failures;
}

// Runs `call` with every allocation of this thread failing; returns its result and errno.
template <class Call>
auto starved(Call call, int& err) {
  errno = 0;
  fail_here = true;
  auto r = call();
  fail_here = false;
  err = errno;
  return r;
}
}  // namespace

void* operator new(std::size_t n) {
  if (fail_here) throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return fail_here ? nullptr : std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return fail_here ? nullptr : std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

int main() {
  // Start the library with memory to spare: the configuration, the devices, a channel, an id.
  rdma_event_channel* channel = rdma_create_event_channel();
  rdma_cm_id* id = nullptr;
  if (!channel || rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) {
    std::printf("the fake librdmacm did not start: %s\n", std::strerror(errno));
    return 2;
  }
  int err = 0;
  long r = 0;

  r = starved([&] { return rdma_listen(id, 1); }, err);  // refused (not bound): the log record allocates
  check(r == -1 && err == ENOMEM, "rdma_listen", r, err);
  int tos = 0;
  r = starved([&] { return rdma_set_option(id, RDMA_OPTION_ID, 12345, &tos, sizeof tos); }, err);
  check(r == -1 && err == ENOMEM, "rdma_set_option", r, err);
  r = starved([&] { return rdma_resolve_route(id, 100); }, err);
  check(r == -1 && err == ENOMEM, "rdma_resolve_route", r, err);
  sockaddr_in lo{};
  lo.sin_family = AF_INET;
  lo.sin_addr.s_addr = htonl(0x7f000001u);  // 127.0.0.1
  r = starved([&] { return rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&lo)); }, err);
  check(r == -1 && err == ENOMEM, "rdma_bind_addr", r, err);
  r = starved([&] { return rdma_join_multicast(id, reinterpret_cast<sockaddr*>(&lo), nullptr); }, err);
  check(r == -1 && err == ENOMEM, "rdma_join_multicast", r, err);
  rdma_cm_id* refused = nullptr;  // an unknown port space: refused before anything is made
  r = starved([&] { return rdma_create_id(channel, &refused, nullptr, static_cast<rdma_port_space>(7)); },
              err);
  check(r == -1 && err == ENOMEM, "rdma_create_id", r, err);
  // A function that returns nothing answers with errno alone: the channel still has an id, its
  // refusal (EBUSY) is logged, and the log record is what runs out of memory.
  errno = 0;
  fail_here = true;
  rdma_destroy_event_channel(channel);
  fail_here = false;
  err = errno;
  check(err == ENOMEM, "rdma_destroy_event_channel", 0, err);
  rdma_event_channel* none = starved([&] { return rdma_create_event_channel(); }, err);
  check(none == nullptr && err == ENOMEM, "rdma_create_event_channel", 0, err);

  // The lock was released each time and nothing was left half-made: the id and the channel
  // work and go as usual.
  rdma_cm_id* second = nullptr;
  r = rdma_create_id(channel, &second, nullptr, RDMA_PS_TCP);
  check(r == 0, "rdma_create_id after", r, errno);
  r = rdma_set_option(id, RDMA_OPTION_ID, 12345, &tos, sizeof tos);
  check(r == -1 && errno == ENOSYS, "rdma_set_option after (ENOSYS, the kernel's answer)", r, errno);
  r = second ? rdma_destroy_id(second) : -1;
  check(r == 0, "rdma_destroy_id after", r, errno);
  r = rdma_destroy_id(id);
  check(r == 0, "rdma_destroy_id", r, errno);
  errno = 0;
  rdma_destroy_event_channel(channel);
  check(errno == 0, "rdma_destroy_event_channel after", 0, errno);
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
