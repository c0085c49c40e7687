// Memory regions as the kernel and an HCA treat them: what ibv_reg_mr accepts, the keys it hands
// out, and the only way the data path touches a program's memory.
//
//  * Registration (validate_registration) follows ib_uverbs_reg_mr, ib_check_mr_access and
//    ib_umem_get: an iova whose page offset differs from the address's, an unknown access bit or
//    remote write/atomic without local write is EINVAL; on-demand paging (which the fake does not
//    offer) is EOPNOTSUPP; a range that wraps, or that covers no page at all (length 0 at a
//    page-aligned address), is EINVAL; a page that is not mapped, not readable, or not writable
//    while the access lets anything write (local/remote write, remote atomic, MW bind) is EFAULT,
//    as pinning it fails. Length 0 inside a page counts that page, as the kernel does.
//  * Keys (allocate_key) are <24-bit index, 8-bit variant>, as mlx5's mkeys. The index space
//    starts at a per-process point, so two processes' keys differ as two registrations on one
//    device do; an index freed by ibv_dereg_mr is reused with the next variant, so a stale key
//    never reaches the region that now holds its index.
//  * Copies (copy_to_program / copy_from_program) go through process_vm_writev/readv on the own
//    process: a page the program unmapped while it was still registered is EFAULT, never a
//    SIGSEGV in the progress thread. (Hardware pinned those pages and would still move the
//    bytes; the fake cannot reach them and ends the transfer in an error instead.)
#include "fakelib.hpp"

#include <fcntl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace gidpolicy::fakelib {
namespace {

std::uintptr_t page_size() {
  static const std::uintptr_t p = [] {
    const long v = ::sysconf(_SC_PAGESIZE);
    return v > 0 ? static_cast<std::uintptr_t>(v) : std::uintptr_t{4096};
  }();
  return p;
}

// Whether every page of [begin, end) lies in mappings that allow reading (and writing when
// `writable`), read from /proc/self/maps (sorted by address). Errors: EFAULT for a page that
// fails, ENOENT when the file cannot be read.
int check_maps(std::uintptr_t begin, std::uintptr_t end, bool writable) {
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ENOENT;
  std::string pending;
  char chunk[16384];
  std::uintptr_t covered = begin;  // [begin, covered) is known good
  int verdict = EFAULT;
  bool done = false;
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl = 0; !done && (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      // "lo-hi perms offset dev inode path"
      const char* line = pending.c_str() + start;
      char* next = nullptr;
      const unsigned long long lo = std::strtoull(line, &next, 16);
      if (!next || *next != '-') continue;
      const unsigned long long hi = std::strtoull(next + 1, &next, 16);
      if (!next || *next != ' ' || static_cast<std::size_t>(next - pending.c_str()) + 3 > nl) continue;
      const bool r = next[1] == 'r', w = next[2] == 'w';
      if (hi <= covered) continue;
      if (lo > covered || !r || (writable && !w)) {
        done = true;  // a hole, or a mapping the pin would refuse
        break;
      }
      covered = static_cast<std::uintptr_t>(hi);
      if (covered >= end) {
        verdict = 0;
        done = true;
      }
    }
    if (done) break;
    pending.erase(0, start);
    if (pending.size() > 4096) pending.clear();  // no line of the file is that long
  }
  ::close(fd);
  return verdict;
}

// Without /proc: one byte of every page read through process_vm_readv (mapped and readable;
// writability cannot be probed without writing).
int probe_pages(std::uintptr_t begin, std::uintptr_t end) {
  char sink[64];
  iovec local{sink, 1};
  for (std::uintptr_t p = begin; p < end; p += page_size()) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): probing the program's own addresses
    iovec remote{reinterpret_cast<void*>(p), 1};
    if (::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) != 1) return EFAULT;
  }
  return 0;
}

constexpr unsigned kKnownAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                                  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB;

}  // namespace

int validate_registration(const void* addr, std::size_t length, std::uint64_t iova, unsigned access,
                          std::string& why) {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  const std::uintptr_t page = page_size();
  if ((a & (page - 1)) != (iova & (page - 1))) {
    why = "the iova's offset in its page differs from the address's";
    return EINVAL;
  }
  const unsigned unknown = access & ~(kKnownAccess | static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE));
  if (unknown) {
    why = "unknown access bits " + std::to_string(unknown);
    return EINVAL;
  }
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
    why = "remote write/atomic access without local write";
    return EINVAL;
  }
  if (access & IBV_ACCESS_ON_DEMAND) {
    why = "on-demand paging is not supported by this device";
    return EOPNOTSUPP;
  }
  if (length > std::numeric_limits<std::uintptr_t>::max() - a ||
      a + length > std::numeric_limits<std::uintptr_t>::max() - (page - 1)) {
    why = "the range wraps around the address space";
    return EINVAL;
  }
  const std::uintptr_t begin = a & ~(page - 1);
  const std::uintptr_t end = (a + length + page - 1) & ~(page - 1);
  if (begin == end) {
    why = "the range covers no page (length 0 at a page boundary)";
    return EINVAL;
  }
  const bool writable = (access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)) != 0;
  int err = check_maps(begin, end, writable);
  if (err == ENOENT) err = probe_pages(begin, end);
  if (err) {
    why = writable ? "a page of the range is not mapped readable and writable (pinning fails)"
                   : "a page of the range is not mapped readable (pinning fails)";
    return EFAULT;
  }
  return 0;
}

std::uint32_t allocate_key(Library& lib) {
  if (lib.key_base == 0) {
    // Per process: pid and clock mixed, so two processes' index ranges (and variants) differ.
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    std::uint64_t x = (static_cast<std::uint64_t>(::getpid()) << 32) ^
                      static_cast<std::uint64_t>(ts.tv_nsec) ^ (static_cast<std::uint64_t>(ts.tv_sec) << 20);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    lib.key_base = static_cast<std::uint32_t>(x) | 1u;  // never 0: 0 is "not chosen yet"
  }
  if (!lib.freed_keys.empty()) {
    // The oldest freed index, with the next variant.
    const std::uint32_t old = lib.freed_keys.front();
    lib.freed_keys.pop_front();
    return (old & ~0xffu) | ((old + 1) & 0xffu);  // the index is never 0, so neither is the key
  }
  for (;;) {
    const std::uint32_t index = (lib.key_base + lib.keys_issued++) & 0xffffffu;
    const std::uint32_t variant = (lib.key_base >> 24) & 0xffu;
    const std::uint32_t key = (index << 8) | variant;
    if (index != 0 && !lib.mr_by_key.count(key)) return key;  // index 0: key 0 means "no key"
  }
}

void release_key(Library& lib, std::uint32_t key) {
  lib.mr_by_key.erase(key);
  lib.freed_keys.push_back(key);
}

const Mr* live_region(const Library& lib, std::uint32_t key, const Pd* pd, std::uint64_t addr,
                      std::uint64_t len, bool by_iova, int need_access) {
  auto it = lib.mr_by_key.find(key);
  if (it == lib.mr_by_key.end()) return nullptr;
  const Mr& m = *it->second;
  if (pd && m.pd != pd) return nullptr;
  if (need_access && !(m.access & need_access)) return nullptr;
  const std::uint64_t base = by_iova ? m.iova : reinterpret_cast<std::uintptr_t>(m.mr.addr);
  if (addr < base || len > m.mr.length || addr - base > m.mr.length - len) return nullptr;
  return &m;
}

bool copy_to_program(std::uint64_t addr, const void* src, std::size_t n) {
  if (n == 0) return true;
  iovec local{const_cast<void*>(src), n};
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the verbs ABI carries addresses as integers
  iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr)), n};
  for (;;) {
    const ssize_t r = ::process_vm_writev(::getpid(), &local, 1, &remote, 1, 0);
    if (r == static_cast<ssize_t>(n)) return true;
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
}

bool copy_from_program(void* dst, std::uint64_t addr, std::size_t n) {
  if (n == 0) return true;
  iovec local{dst, n};
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the verbs ABI carries addresses as integers
  iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr)), n};
  for (;;) {
    const ssize_t r = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
    if (r == static_cast<ssize_t>(n)) return true;
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
}

}  // namespace gidpolicy::fakelib
