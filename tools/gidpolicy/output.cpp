// The one output path of `gidpolicy` (output.hpp): stdout, files, devices, FIFOs and trees.
#include "output.hpp"

#include "commands.hpp"
#include "render.hpp"

#include <gidpolicy/quoting.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>

namespace gidpolicy::cli {

namespace {

namespace fs = std::filesystem;

// Above this much buffered text, write it out: a large report streams rather than piling up.
constexpr std::size_t kFlushAt = 64 * 1024;
// Symbolic links followed before giving up, as the kernel's own limit for a path (ELOOP).
constexpr int kMaxLinks = 40;

std::string os_reason(int err) { return std::generic_category().message(err); }

std::string dir_of(const std::string& path) {
  const std::string d = fs::path(path).parent_path().string();
  return d.empty() ? "." : d;
}

std::string kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

// The calling process's umask, which creating a file through open() applies on its own; read
// where a mode is set explicitly (a tree's directory). The CLI writes from one thread.
mode_t current_umask() {
  const mode_t m = ::umask(022);
  ::umask(m);
  return m;
}

// The path a dangling symlink leads to: the links are followed one by one (bounded) until a
// name that does not exist. Relative targets are relative to the link's own directory.
struct Resolved {
  std::string path;
  std::string error;  // empty on success
};
Resolved follow_dangling(const std::string& link) {
  std::string cur = link;
  for (int hops = 0; hops < kMaxLinks; ++hops) {
    std::string target(PATH_MAX, '\0');
    const ssize_t n = ::readlink(cur.c_str(), target.data(), target.size());
    if (n < 0) return {{}, "cannot read the symbolic link " + cur + ": " + os_reason(errno)};
    target.resize(static_cast<std::size_t>(n));
    const fs::path base = fs::path(cur).parent_path();
    const std::string next =
        fs::path(target).is_absolute() || base.empty() ? target : (base / target).string();
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) {
      if (errno == ENOENT) return {next, {}};
      return {{}, next + ": " + os_reason(errno)};
    }
    if (!S_ISLNK(st.st_mode)) return {{}, next + " appeared while it was being resolved"};
    cur = next;
  }
  return {{}, "it is a chain of more than " + std::to_string(kMaxLinks) + " symbolic links"};
}

// The descriptor number a name such as /dev/stdout's target stands for: /proc/self/fd/N,
// /dev/fd/N, /proc/<this pid>/fd/N. Such a name means the descriptor this process holds (a
// shell's `>> log` included), not a path to rename over.
std::optional<int> fd_number(const std::string& p) {
  const std::string own = "/proc/" + std::to_string(::getpid()) + "/fd/";
  for (const std::string& prefix :
       {std::string("/proc/self/fd/"), std::string("/dev/fd/"), std::string("/proc/thread-self/fd/"), own}) {
    if (p.size() <= prefix.size() || p.size() > prefix.size() + 9 || p.compare(0, prefix.size(), prefix) != 0)
      continue;
    int n = 0;
    for (std::size_t i = prefix.size(); i < p.size(); ++i) {
      if (p[i] < '0' || p[i] > '9') return std::nullopt;
      n = n * 10 + (p[i] - '0');
    }
    return n;
  }
  return std::nullopt;
}

// Follows `path`'s symbolic links (bounded) looking for a descriptor name (fd_number()).
std::optional<int> names_a_descriptor(const std::string& path) {
  std::string cur = path;
  for (int hops = 0; hops <= kMaxLinks; ++hops) {
    if (auto n = fd_number(cur)) return n;
    struct stat st {};
    if (::lstat(cur.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return std::nullopt;
    std::string target(PATH_MAX, '\0');
    const ssize_t len = ::readlink(cur.c_str(), target.data(), target.size());
    if (len < 0) return std::nullopt;
    target.resize(static_cast<std::size_t>(len));
    const fs::path base = fs::path(cur).parent_path();
    cur = fs::path(target).is_absolute() || base.empty() ? target : (base / target).string();
  }
  return std::nullopt;
}

// The directory a new file or tree goes into must exist: say which one is missing.
std::string check_parent(const std::string& path, const std::string& via) {
  const std::string dir = dir_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return "the directory " + dir + via + (errno == ENOENT ? " does not exist" : ": " + os_reason(errno));
  if (!S_ISDIR(st.st_mode)) return dir + via + " is " + kind_of(st.st_mode) + ", not a directory";
  return {};
}

// Where a file or tree target really is, following links: the path written (renamed onto) and
// whether it exists. `st` receives what it is when it exists.
Resolved locate(const std::string& path, struct stat& st, bool& exists) {
  exists = false;
  if (path.empty()) return {{}, "an empty path"};
  if (::stat(path.c_str(), &st) == 0) {
    exists = true;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return {path, {}};  // written in place, not renamed
    // Rename in the directory the file really is in: through a link, the link itself stays.
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) return {{}, "cannot resolve the path: " + os_reason(errno)};
    std::string r = real;
    std::free(real);
    return {r, {}};
  }
  const int err = errno;
  if (err != ENOENT) return {{}, os_reason(err)};
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    Resolved r = follow_dangling(path);
    if (!r.error.empty()) return r;
    if (std::string why = check_parent(r.path, " (where the symbolic link leads)"); !why.empty())
      return {{}, "a symbolic link to " + r.path + ", but " + why};
    return r;
  }
  if (std::string why = check_parent(path, ""); !why.empty()) return {{}, why};
  return {path, {}};
}

// A name no one can guess: 64 random bits in hex.
std::string random_tag() {
  std::random_device rd;
  const std::uint64_t v = (std::uint64_t{rd()} << 32) ^ rd();
  return fmt::format("{:016x}", v);
}

// A hidden sibling of `final_path`, in the same directory so rename() is atomic. The visible
// name is cut so the temporary name stays within NAME_MAX.
std::string temp_name(const std::string& final_path, const char* what) {
  std::string base = fs::path(final_path).filename().string();
  if (base.size() > 200) base.resize(200);
  return (fs::path(dir_of(final_path)) / ("." + base + ".gidpolicy-" + what + "-" + random_tag())).string();
}

// Blocking write of all of `s` to `fd`; EINTR retried, a non-blocking descriptor waited on.
int write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd p{fd, POLLOUT, 0};
        (void)::poll(&p, 1, -1);
        continue;
      }
      return errno;
    }
    if (n == 0) return EIO;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace

Output Output::standard() {
  Output o;
  o.fd_ = STDOUT_FILENO;
  o.where_ = "stdout";
  return o;
}

Output Output::open(const std::optional<std::string>& path, std::string_view option) {
  if (!path || *path == "-") return standard();
  Output o;
  o.where_ = std::string(option) + " " + *path;
  if (const auto n = names_a_descriptor(*path)) {
    // /dev/stdout and the like: written where the descriptor points, as a shell's redirection
    // would be; never renamed over (that would drop an appended-to log's earlier lines).
    const int fd = ::fcntl(*n, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
      o.fail_errno(errno, "descriptor " + std::to_string(*n) + " is not open");
      return o;
    }
    o.fd_ = fd;
    o.own_fd_ = true;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
      o.fail("descriptor " + std::to_string(*n) + " is a directory");
    return o;
  }
  struct stat st {};
  bool exists = false;
  const Resolved r = locate(*path, st, exists);
  if (!r.error.empty()) {
    o.fail(r.error);
    return o;
  }
  if (exists && S_ISDIR(st.st_mode)) {
    o.fail("it is a directory; give a file name");
    return o;
  }
  if (exists && S_ISSOCK(st.st_mode)) {
    o.fail("it is a socket; gidpolicy writes files, devices and FIFOs");
    return o;
  }
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or FIFO is written where it is: replacing it would break what it is for. No
    // O_TRUNC (a device has no length; a FIFO none to cut), no O_CREAT (it exists). A FIFO
    // opened without O_NONBLOCK would wait forever for a reader; with it, no reader is ENXIO.
    const int flags = O_WRONLY | O_NOCTTY | O_CLOEXEC | (S_ISFIFO(st.st_mode) ? O_NONBLOCK : 0);
    const int fd = ::open(r.path.c_str(), flags);
    if (fd < 0) {
      if (errno == ENXIO && S_ISFIFO(st.st_mode))
        o.fail("it is a FIFO that nothing is reading; start the reader first");
      else
        o.fail_errno(errno, "cannot open " + kind_of(st.st_mode));
      return o;
    }
    o.fd_ = fd;
    o.own_fd_ = true;
    struct stat now {};
    // What was opened must be what was looked at: had the name been swapped for a regular file
    // in between, writing into it without truncating would leave stale bytes after the output.
    if (::fstat(fd, &now) != 0 || (now.st_mode & S_IFMT) != (st.st_mode & S_IFMT)) {
      o.fail("it changed while it was being opened");
      return o;
    }
    if (S_ISFIFO(st.st_mode)) (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return o;
  }
  // An existing file the user could not write (a shell's `>` would say EACCES) is not swapped
  // for a new one just because its directory is writable.
  if (exists && ::faccessat(AT_FDCWD, r.path.c_str(), W_OK, AT_EACCESS) != 0) {
    o.fail_errno(errno, "cannot write it");
    return o;
  }
  // Regular or absent: a fresh temporary file, renamed over the target at commit(). A new file's
  // mode is 0666 less the umask, as any tool's; an existing file keeps its mode (and, when root
  // writes, its owner).
  o.final_ = r.path;
  for (int attempt = 0; attempt < 16 && o.fd_ < 0; ++attempt) {
    std::string t = temp_name(o.final_, "tmp");
    const int fd =
        ::open(t.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, exists ? 0600 : 0666);
    if (fd >= 0) {
      o.fd_ = fd;
      o.own_fd_ = true;
      o.temp_ = std::move(t);
    } else if (errno != EEXIST) {
      o.fail_errno(errno, "cannot create a temporary file in " + dir_of(o.final_));
      return o;
    }
  }
  if (o.fd_ < 0) {
    o.fail("cannot create a temporary file in " + dir_of(o.final_) + ": every name tried exists");
    return o;
  }
  if (exists) {
    if (::geteuid() == 0 && (st.st_uid != ::geteuid() || st.st_gid != ::getegid()) &&
        ::fchown(o.fd_, st.st_uid, st.st_gid) != 0) {
      o.fail_errno(errno, "cannot give the new file the old one's owner");
      return o;
    }
    if (::fchmod(o.fd_, st.st_mode & 07777) != 0)
      o.fail_errno(errno, "cannot give the new file the old one's mode");
  }
  return o;
}

Output::Output(Output&& o) noexcept { *this = std::move(o); }

Output& Output::operator=(Output&& o) noexcept {
  std::swap(fd_, o.fd_);
  std::swap(own_fd_, o.own_fd_);
  std::swap(where_, o.where_);
  std::swap(temp_, o.temp_);
  std::swap(final_, o.final_);
  std::swap(buf_, o.buf_);
  std::swap(committed_, o.committed_);
  std::swap(error_, o.error_);
  return *this;
}

Output::~Output() {
  if (own_fd_ && fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void Output::fail(const std::string& why) {
  if (!error_) error_ = "output error: " + where_ + ": " + why;
  buf_.clear();
}

void Output::fail_errno(int err, std::string_view doing) {
  fail(doing.empty() ? os_reason(err) : std::string(doing) + ": " + os_reason(err));
}

bool Output::drain() {
  if (error_) return false;
  if (buf_.empty()) return true;
  if (const int err = write_all(fd_, buf_); err != 0) {
    fail_errno(err);
    return false;
  }
  buf_.clear();
  return true;
}

void Output::write(std::string_view s) {
  if (error_ || committed_) return;
  buf_.append(s);
  if (buf_.size() >= kFlushAt) (void)drain();
}

bool Output::flush() { return drain(); }

std::optional<std::string> Output::commit() {
  if (committed_) return error_;
  committed_ = true;
  (void)drain();
  if (!error_ && !temp_.empty() && ::fsync(fd_) != 0) fail_errno(errno, "cannot sync");
  if (own_fd_ && fd_ >= 0) {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0 && errno != EINTR) fail_errno(errno, "close");
  }
  if (!temp_.empty()) {
    if (!error_ && ::rename(temp_.c_str(), final_.c_str()) != 0)
      fail_errno(errno, "cannot rename the temporary file " + temp_ + " into place");
    if (error_) ::unlink(temp_.c_str());
    temp_.clear();
    // The rename is durable once the directory is synced; a file system that cannot sync a
    // directory (EINVAL) has nothing to sync.
    if (!error_) {
      const int dfd = ::open(dir_of(final_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd >= 0) {
        if (::fsync(dfd) != 0 && errno != EINVAL) fail_errno(errno, "cannot sync its directory");
        ::close(dfd);
      }
    }
  }
  return error_;
}

Output& standard_output() {
  static Output out = Output::standard();
  return out;
}

int finish_output(int code) {
  Output& out = standard_output();
  std::optional<std::string> err = out.commit();
  // Nothing of the tool's own writes to std::cout or C's stdout (--help goes through here too);
  // should a library ever do, what it lost is caught here rather than dropped.
  errno = 0;
  std::cout.flush();
  const bool lost = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (lost && !err)
    err =
        "output error: stdout: " + (errno ? os_reason(errno) : std::string("a write through C stdio failed"));
  // A file system may report a write error only when the file is closed (NFS). EBADF: stdout
  // was never open, which a write, had there been one, has already reported.
  if (::close(STDOUT_FILENO) != 0 && errno != EBADF && errno != EINTR && !err)
    err = "output error: stdout: " + os_reason(errno);
  if (err) return output_error(*err);
  return code;
}

int output_error(const std::string& line) {
  print_error(line);
  return kExitUsage;
}

namespace {

// Where a tree goes (links followed), or why it cannot go there.
struct TreeTarget {
  std::string path;
  bool exists = false;
  mode_t mode = 0;
  std::optional<std::string> error;
};
TreeTarget tree_target(const std::string& given, std::string_view option, bool replace) {
  std::string path = fs::path(given).lexically_normal().string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();  // "out/" names the directory "out"
  const std::string where = "output error: " + std::string(option) + " " + given + ": ";
  struct stat st {};
  TreeTarget t;
  const Resolved r = locate(path, st, t.exists);
  if (!r.error.empty()) {
    t.error = where + r.error;
    return t;
  }
  t.path = r.path;
  t.mode = st.st_mode & 07777;
  std::error_code ec;
  if (t.exists && !S_ISDIR(st.st_mode))
    t.error = where + "it is " + kind_of(st.st_mode) + ", not a directory";
  else if (t.exists && !fs::is_empty(t.path, ec) && !replace)
    t.error = where +
              "it is not empty: writing into it would keep GIDs from what is there; give a new or empty "
              "directory, or --replace to replace it";
  return t;
}

}  // namespace

std::optional<std::string> check_tree(const std::string& path, std::string_view option, bool replace) {
  return tree_target(path, option, replace).error;
}

StagedTree StagedTree::open(const std::string& given, std::string_view option, bool replace) {
  StagedTree t;
  t.given_ = given;
  t.option_ = std::string(option);
  const TreeTarget target = tree_target(given, option, replace);
  if (target.error) {
    t.error_ = target.error;
    return t;
  }
  t.real_ = target.path;
  t.exists_ = target.exists;
  t.mode_ = target.mode;
  // mkdtemp: created exclusively (mkdir never follows a link), mode 0700 while it fills.
  std::string tmp = temp_name(t.real_, "tmp") + "XXXXXX";
  if (!::mkdtemp(tmp.data())) {
    t.error_ = "output error: " + t.option_ + " " + given + ": cannot create a temporary directory in " +
               dir_of(t.real_) + ": " + os_reason(errno);
    return t;
  }
  t.tmp_ = std::move(tmp);
  return t;
}

StagedTree::StagedTree(StagedTree&& o) noexcept { *this = std::move(o); }

StagedTree& StagedTree::operator=(StagedTree&& o) noexcept {
  std::swap(given_, o.given_);
  std::swap(option_, o.option_);
  std::swap(real_, o.real_);
  std::swap(tmp_, o.tmp_);
  std::swap(exists_, o.exists_);
  std::swap(mode_, o.mode_);
  std::swap(error_, o.error_);
  return *this;
}

StagedTree::~StagedTree() { remove_staging(); }

void StagedTree::remove_staging() {
  if (tmp_.empty()) return;
  std::error_code ignored;
  fs::remove_all(tmp_, ignored);
  tmp_.clear();
}

result<void> StagedTree::write_file(std::string_view name, std::string_view text) {
  if (tmp_.empty()) return fail(errc::invalid_argument, "the tree is not open");
  GIDPOLICY_TRY(path, join_file_name(tmp_, name));
  // O_EXCL|O_NOFOLLOW: a name written twice, or anything planted in the private directory, is an
  // error rather than a file written through.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return fail_errno(errno, show_text(std::string(name)) + ": cannot create");
  const int err = write_all(fd, text);
  if (::close(fd) != 0 && err == 0 && errno != EINTR)
    return fail_errno(errno, show_text(std::string(name)) + ": close");
  if (err != 0) return fail_errno(err, show_text(std::string(name)) + ": write failed");
  return success();
}

std::optional<std::string> StagedTree::commit() {
  if (error_) return error_;
  const std::string where = "output error: " + option_ + " " + given_ + ": ";
  const auto failed = [&](const std::string& why) {
    remove_staging();
    error_ = where + why;
    return error_;
  };
  if (tmp_.empty()) return failed("the tree was already committed");
  const mode_t mode = exists_ ? static_cast<mode_t>(mode_) : (0777 & ~current_umask());
  if (::chmod(tmp_.c_str(), mode) != 0)
    return failed("cannot set the mode of " + tmp_ + ": " + os_reason(errno));
  // The old tree is moved into a fresh private directory (a name nobody can have planted), the
  // new one renamed into place, then the old one removed; if the second rename fails the old
  // tree goes back.
  std::string aside, old;
  if (exists_) {
    aside = temp_name(real_, "old") + "XXXXXX";
    if (!::mkdtemp(aside.data()))
      return failed("cannot create a directory to move the old tree aside: " + os_reason(errno));
    old = (fs::path(aside) / "tree").string();
    if (::rename(real_.c_str(), old.c_str()) != 0) {
      const int err = errno;
      ::rmdir(aside.c_str());
      return failed("cannot move the old tree aside: " + os_reason(err));
    }
  }
  if (::rename(tmp_.c_str(), real_.c_str()) != 0) {
    const int err = errno;
    if (!old.empty()) (void)::rename(old.c_str(), real_.c_str());
    if (!aside.empty()) ::rmdir(aside.c_str());
    return failed("cannot rename " + tmp_ + " into place: " + os_reason(err));
  }
  tmp_.clear();
  std::error_code ec;
  if (!aside.empty()) fs::remove_all(aside, ec);
  return std::nullopt;
}

std::optional<std::string> write_tree(const std::string& given, std::string_view option, bool replace,
                                      const std::function<result<void>(const fs::path&)>& fill) {
  StagedTree tree = StagedTree::open(given, option, replace);
  if (tree.error()) return tree.error();
  if (auto filled = fill(tree.staging()); !filled) {
    // A system error is the write failing (a full disk); anything else is the writer refusing
    // what it was given, said as it says it.
    const Error& e = filled.error();
    return e.code.category() == std::generic_category()
               ? "output error: " + std::string(option) + " " + given + ": " + e.what()
               : e.what();
  }
  return tree.commit();
}

}  // namespace gidpolicy::cli
