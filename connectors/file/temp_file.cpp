#include "connectors/file/temp_file.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace dedupctl::connectors::file {

namespace {

// Calls `io(done)` (a pwrite or pread of what is left after `done` bytes) until `size` bytes are
// through; false with errno (0: nothing moved) when a call moves nothing.
template <typename Io> bool transfer_all(std::size_t size, Io&& io) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = io(done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      errno = n < 0 ? errno : 0;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace

TempFile::TempFile(const std::string& stem, std::string what, std::string room) : m_room(std::move(room)) {
  const char* tmpdir = std::getenv("TMPDIR");
  m_dir = tmpdir && *tmpdir ? tmpdir : "/tmp";
  m_describe = fmt::format("{} in {} (TMPDIR)", what, m_dir);
  std::string name = m_dir + "/" + stem + "-XXXXXX";
  m_fd = ::mkstemp(name.data());
  if (m_fd < 0) {
    throw UsageError(fmt::format("cannot create {}: {}; set TMPDIR to a writable directory with room for {}",
                                 m_describe, std::strerror(errno), m_room));
  }
  ::unlink(name.c_str()); // gone with the process, however it ends
}

TempFile::~TempFile() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

void TempFile::append(const void* data, std::size_t size) {
  const auto* in = static_cast<const char*>(data);
  if (!transfer_all(size, [&](std::size_t done) {
        return ::pwrite(m_fd, in + done, size - done, static_cast<off_t>(m_size + done));
      })) {
    int error = errno;
    if (::ftruncate(m_fd, static_cast<off_t>(m_size)) != 0) {
      // what was written stays beyond the end we know, and is never read
    }
    throw UnreachableError(fmt::format("cannot write {}: {}; set TMPDIR to a directory with room for {}", m_describe,
                                       error != 0 ? std::strerror(error) : "nothing written", m_room));
  }
  m_size += size;
}

void TempFile::read(std::uint64_t at, void* out, std::size_t size) const {
  auto* to = static_cast<char*>(out);
  if (!transfer_all(size, [&](std::size_t done) {
        return ::pread(m_fd, to + done, size - done, static_cast<off_t>(at + done));
      })) {
    throw UnreachableError(
        fmt::format("cannot read back {}: {}", m_describe, errno != 0 ? std::strerror(errno) : "it was cut short"));
  }
}

} // namespace dedupctl::connectors::file
