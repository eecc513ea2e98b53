#include "connectors/file/replay_sink.hpp"

#include "connectors/file/kcat_file.hpp"
#include "core/source/kcat_line.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dedupctl::connectors::file {

namespace {

class FileSink final : public core::ReplaySink {
public:
  explicit FileSink(std::string path) : m_path(std::move(path)) {
    m_fd = ::open(m_path.c_str(), O_RDWR | O_CREAT, 0644);
    if (m_fd < 0) {
      throw UsageError(fmt::format("cannot open --sink file:{}: {}; check the path", m_path, std::strerror(errno)));
    }
    // Cut a line the previous run left half-written.
    off_t size = ::lseek(m_fd, 0, SEEK_END);
    off_t keep = size;
    char c = 0;
    while (keep > 0 && ::pread(m_fd, &c, 1, keep - 1) == 1 && c != '\n') {
      --keep;
    }
    if (keep != size && ::ftruncate(m_fd, keep) != 0) {
      fail("truncate a partial last line");
    }
    ::lseek(m_fd, 0, SEEK_END);
    m_end = keep;
    m_file = ::fdopen(m_fd, "a");
    if (!m_file) {
      fail("open");
    }
  }

  ~FileSink() override {
    if (m_file) {
      std::fclose(m_file);
    }
  }

  std::string describe() const override { return "file:" + m_path; }

  void publish(const core::Event& event, std::uint64_t tag) override {
    std::string line = core::format_kcat_line(event);
    line += '\n';
    if (std::fwrite(line.data(), 1, line.size(), m_file) != line.size()) {
      fail("write");
    }
    m_end += static_cast<off_t>(line.size());
    m_pending.push_back(tag);
  }

  // A line is delivered once it is on disk: one fsync for everything written since the last, when
  // the caller is ready to wait or a good amount is pending.
  void poll(std::vector<core::Delivery>& out, int timeout_ms) override {
    if (m_pending.empty() || (timeout_ms == 0 && m_pending.size() < k_sync_every)) {
      return;
    }
    if (std::fflush(m_file) != 0 || ::fsync(::fileno(m_file)) != 0) {
      fail("flush");
    }
    for (auto tag : m_pending) {
      out.push_back(core::Delivery{tag, true, false, ""});
    }
    m_pending.clear();
  }

  // The end of the last whole line handed to the file, never the file's size: stdio writes its
  // buffer out in blocks, so the size may end inside a line, and a resume reading back from there
  // would start mid-line.
  std::string position() override { return std::to_string(m_end); }

  std::unique_ptr<core::EventSource> read_after(const std::string& position) override {
    long start = 0;
    try {
      start = std::stol(position);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("the checkpoint's sink position {} is not a byte offset of {}", position, m_path));
    }
    if (std::fflush(m_file) != 0) {
      fail("flush");
    }
    // Killed before its buffer reached the file, the interrupted run left less than its position
    // says: what was lost was never delivered, so there is nothing to read back past the end.
    struct stat st {};
    if (::fstat(::fileno(m_file), &st) != 0) {
      fail("stat");
    }
    start = std::min<long>(start, static_cast<long>(st.st_size));
    core::PartitionPlan everything;
    return std::make_unique<KcatFileSource>(m_path, everything, false, nullptr, start);
  }

private:
  [[noreturn]] void fail(const char* what) {
    throw UnreachableError(fmt::format("cannot {} the sink {}: {}", what, m_path, std::strerror(errno)));
  }

  static constexpr std::size_t k_sync_every = 50'000;
  std::string m_path;
  std::vector<std::uint64_t> m_pending;
  int m_fd = -1;
  off_t m_end = 0; // the end of the last whole line written
  std::FILE* m_file = nullptr;
};

} // namespace

std::unique_ptr<core::ReplaySink> open_sink(const std::string& path) { return std::make_unique<FileSink>(path); }

} // namespace dedupctl::connectors::file
