// The bounded reader behind every text input (files, stdin, devices): a size cap and binary
// detection chunk by chunk, so /dev/zero or /dev/urandom is refused after the first read
// instead of filling memory until EOF that never comes.
#include <gidpolicy/formats/detect.hpp>

#include "text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace gidpolicy::formats {
namespace {

constexpr std::size_t kChunk = std::size_t{64} * 1024;

// Bytes of `s` that are not part of a well-formed UTF-8 sequence. A sequence cut at the end
// of the chunk is not counted (the next chunk holds the rest).
std::size_t invalid_utf8(std::string_view s) {
  std::size_t bad = 0;
  for (std::size_t k = 0; k < s.size();) {
    const auto c = static_cast<unsigned char>(s[k]);
    std::size_t n = 0;
    if (c < 0x80) {
      ++k;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf)
      n = 1;
    else if (c >= 0xe0 && c <= 0xef)
      n = 2;
    else if (c >= 0xf0 && c <= 0xf4)
      n = 3;
    if (n == 0) {
      ++bad;
      ++k;
      continue;
    }
    if (k + n >= s.size()) break;  // cut at the chunk's end
    bool ok = true;
    for (std::size_t j = 1; j <= n; ++j) ok = ok && (static_cast<unsigned char>(s[k + j]) & 0xc0) == 0x80;
    if (!ok) {
      ++bad;
      ++k;
      continue;
    }
    k += n + 1;
  }
  return bad;
}

result<void> check_chunk(std::string_view text, std::size_t from, bool first, std::string_view source) {
  std::string_view chunk = text.substr(from);
  for (std::size_t k = 0; k < chunk.size(); ++k) {
    const auto c = static_cast<unsigned char>(chunk[k]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f') || c == 0x7f)
      return fail(errc::unknown_format, std::string(source) + ":" + detail::line_column(text, from + k) +
                                            ": binary data (byte " + detail::hex_byte(chunk, k + 1) +
                                            "), not a table: expected ibv_devinfo, show_gids or JSON text");
  }
  // Pastes carry some UTF-8 (quotes, ellipses); mostly-invalid UTF-8 is binary even without a
  // control byte.
  if (first && chunk.size() >= 64 && invalid_utf8(chunk) * 8 > chunk.size())
    return fail(errc::unknown_format,
                std::string(source) + ": binary data (mostly invalid UTF-8 in the first " +
                    std::to_string(chunk.size()) +
                    " bytes), not a table: expected ibv_devinfo, show_gids or JSON text");
  return success();
}

}  // namespace

result<std::string> read_text_fd(int fd, std::string_view source, std::size_t max_bytes) {
  std::string text;
  char buf[kChunk];
  bool first = true;
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errc::io_error, std::string(source) + ": cannot read input (" +
                                      std::generic_category().message(errno) + ")");
    }
    if (n == 0) break;
    const std::size_t from = text.size();
    if (from + static_cast<std::size_t>(n) > max_bytes)
      return fail(errc::parse_error, std::string(source) + ": more than " + std::to_string(max_bytes) +
                                         " bytes (the input limit; GID tables are far smaller): "
                                         "raise it with --max-input-bytes if this is a real table");
    text.append(buf, static_cast<std::size_t>(n));
    GIDPOLICY_TRYV(check_chunk(text, from, first, source));
    first = false;
  }
  return text;
}

result<std::string> read_text_file(const std::filesystem::path& path, std::size_t max_bytes) {
  // O_NONBLOCK only for the open: a FIFO without a writer would otherwise block in open();
  // reads are blocking again so a pipe being written (a process substitution) is read whole.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail(errc::io_error, path.string() + ": " + std::generic_category().message(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return fail(errc::io_error, path.string() + ": not a file");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  auto text = read_text_fd(fd, path.string(), max_bytes);
  ::close(fd);
  return text;
}

}  // namespace gidpolicy::formats
