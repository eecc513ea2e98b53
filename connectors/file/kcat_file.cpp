#include "connectors/file/kcat_file.hpp"

#include "connectors/file/text.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace dedupctl::connectors::file {

namespace {
constexpr std::size_t k_batch_events = 4096;
}

KcatFileSource::KcatFileSource(std::string path, core::PartitionPlan plan, bool skip_invalid,
                               const std::atomic<bool>* stop, long start_byte)
    : m_path(std::move(path)), m_plan(std::move(plan)), m_skip_invalid(skip_invalid), m_stop(stop) {
  XXH3_64bits_reset(m_hash.get());
  if (m_path == "-") {
    m_file = stdin;
  } else {
    refuse_directory(m_path, "--input");
    // Opening a FIFO blocks until a writer comes: a signal breaks the wait (EINTR); SIGINT or SIGTERM
    // raise the stop flag and end the run as interrupted, any other signal retries.
    while (!(m_file = std::fopen(m_path.c_str(), "rb")) && errno == EINTR) {
      if (m_stop && m_stop->load()) {
        throw InterruptedError("interrupted while waiting for a writer on --input " + m_path);
      }
    }
    if (!m_file) {
      throw UsageError(fmt::format("cannot read --input {}: {}; check the path", m_path, std::strerror(errno)));
    }
    m_owns_file = true;
    if (start_byte > 0 && std::fseek(m_file, start_byte, SEEK_SET) != 0) {
      throw UsageError(fmt::format("cannot seek in {} to byte {}: {}", m_path, start_byte, std::strerror(errno)));
    }
  }
}

KcatFileSource::~KcatFileSource() {
  if (m_owns_file) {
    std::fclose(m_file);
  }
  std::free(m_line);
}

bool KcatFileSource::next_batch(core::EventBatch& batch) {
  batch.clear();
  while (batch.events.size() < k_batch_events) {
    if (m_stop && m_stop->load()) {
      throw InterruptedError("interrupted");
    }
    errno = 0;
    ssize_t length = ::getline(&m_line, &m_line_capacity, m_file);
    if (length < 0) {
      if (m_stop && m_stop->load()) {
        throw InterruptedError("interrupted"); // the signal broke the blocking read
      }
      if (std::ferror(m_file)) {
        throw UsageError(
            fmt::format("cannot read --input {} after line {}: {}", m_path, m_line_number, std::strerror(errno)));
      }
      break;
    }
    ++m_line_number;
    std::string_view line(m_line, static_cast<std::size_t>(length));
    XXH3_64bits_update(m_hash.get(), line.data(), line.size());
    if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      continue;
    }
    std::string error;
    std::size_t before = batch.events.size();
    if (!m_parser.parse(line, batch, error)) {
      if (m_skip_invalid) {
        ++m_invalid_lines;
        continue;
      }
      throw UsageError(fmt::format("{}:{}: {}; fix or remove the line, or pass --skip-invalid to count it and go on",
                                   m_path == "-" ? "<stdin>" : m_path, m_line_number, error));
    }
    core::Event& event = batch.events.back();
    event.seq = static_cast<std::uint64_t>(m_line_number);
    if (m_shard && !m_shard->owns(event.partition)) {
      batch.events.resize(before); // another shard's partition
      continue;
    }
    auto key = std::make_pair(std::string(event.topic), event.partition);
    auto it = m_partitions.find(key);
    if (it == m_partitions.end()) {
      core::PartitionPlan plan = m_plan;
      plan.topic = key.first;
      plan.partition = key.second;
      it = m_partitions.emplace(key, Partition{core::PartitionCursor(plan), {}}).first;
    }
    Partition& partition = it->second;
    if (partition.delivered.contains(event.offset)) {
      ++m_repeated_records;
      batch.events.resize(before); // the parser's header bookkeeping is re-synced on the next parse
    } else if (partition.cursor.admit(event.offset, event.timestamp_ms)) {
      partition.delivered.insert(event.offset);
    } else {
      batch.events.resize(before);
    }
  }
  m_parser.seal(batch);
  return !batch.events.empty();
}

std::uint64_t KcatFileSource::content_hash() const { return XXH3_64bits_digest(m_hash.get()); }

std::vector<core::PartitionPosition> KcatFileSource::positions() const {
  std::vector<core::PartitionPosition> out;
  for (const auto& [key, partition] : m_partitions) {
    out.push_back(partition.cursor.position());
  }
  return out;
}

} // namespace dedupctl::connectors::file
