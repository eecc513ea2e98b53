#include "connectors/file/record_runs.hpp"

#include <algorithm>

namespace dedupctl::connectors::file {

namespace {

constexpr std::size_t k_order_count = 3;
// What the merge of a spilled shard's runs reads ahead, all runs together.
constexpr std::size_t k_merge_buffer_bytes = std::size_t{8} << 20;

std::size_t order_index(core::DigestOrder order) { return static_cast<std::size_t>(order); }

// Sorts `records` in `order` and hands them to `write`: in the key order only those with a key.
template <typename Write>
void write_order(std::vector<core::DigestRecord>& records, core::DigestOrder order, Write&& write) {
  std::sort(records.begin(), records.end(), [order](const core::DigestRecord& a, const core::DigestRecord& b) {
    return core::digest_before(a, b, order);
  });
  if (order != core::DigestOrder::Key) {
    write(records.data(), records.size() * sizeof(core::DigestRecord));
    return;
  }
  for (const auto& record : records) {
    if (record.key_hash != 0) {
      write(&record, sizeof record);
    }
  }
}

// One run of one order, read a buffer at a time.
class RunReader {
public:
  RunReader(const TempFile& file, std::uint64_t at, std::uint64_t count, std::size_t buffer_records)
      : m_file(file), m_at(at), m_left(count), m_buffer(std::max<std::size_t>(buffer_records, 1)) {}
  bool next(core::DigestRecord& record) {
    if (m_pos == m_filled) {
      if (m_left == 0) {
        return false;
      }
      refill();
    }
    record = m_buffer[m_pos++];
    return true;
  }

private:
  void refill() {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(m_left, m_buffer.size()));
    std::size_t bytes = want * sizeof(core::DigestRecord);
    m_file.read(m_at, m_buffer.data(), bytes);
    m_at += bytes;
    m_left -= want;
    m_pos = 0;
    m_filled = want;
  }

  const TempFile& m_file;
  std::uint64_t m_at;
  std::uint64_t m_left;
  std::vector<core::DigestRecord> m_buffer;
  std::size_t m_pos = 0;
  std::size_t m_filled = 0;
};

} // namespace

RecordRuns::RecordRuns(std::size_t run_records)
    : m_run_records(std::max<std::size_t>(run_records, 1)),
      m_file("dedupctl-digest", "the digest's temporary sort file", "144 bytes an event the shard reads") {
  m_buffer.reserve(std::min<std::size_t>(m_run_records, std::size_t{4} << 10));
}

void RecordRuns::add(const core::DigestRecord& record) {
  if (m_buffer.size() == m_run_records) {
    spill();
  }
  m_buffer.push_back(record);
  ++m_count;
  m_keyed += record.key_hash != 0 ? 1 : 0;
}

void RecordRuns::spill() {
  if (m_buffer.empty()) {
    return;
  }
  Run run;
  run.count = m_buffer.size();
  run.keyed = static_cast<std::uint64_t>(
      std::count_if(m_buffer.begin(), m_buffer.end(), [](const core::DigestRecord& r) { return r.key_hash != 0; }));
  for (std::size_t o = 0; o < k_order_count; ++o) {
    auto order = static_cast<core::DigestOrder>(o);
    run.at[o] = m_file.size();
    if (order == core::DigestOrder::Key && run.keyed == 0) {
      continue; // dedup keys are not compared
    }
    write_order(m_buffer, order, [this](const void* data, std::size_t size) { m_file.append(data, size); });
  }
  m_runs.push_back(run);
  m_buffer.clear();
}

void RecordRuns::write_sorted(core::DigestOrder order, const std::function<void(const void*, std::size_t)>& write) {
  if (m_runs.empty()) { // all in memory
    write_order(m_buffer, order, write);
    return;
  }
  if (!m_buffer.empty()) {
    spill();
    m_buffer = {};
  }
  std::size_t buffer_records = std::clamp<std::size_t>(
      k_merge_buffer_bytes / sizeof(core::DigestRecord) / m_runs.size(), 64, std::size_t{16} << 10);
  std::vector<RunReader> readers;
  readers.reserve(m_runs.size());
  for (const auto& run : m_runs) {
    readers.emplace_back(m_file, run.at[order_index(order)], order == core::DigestOrder::Key ? run.keyed : run.count,
                         buffer_records);
  }
  std::vector<RunReader*> streams;
  for (auto& reader : readers) {
    streams.push_back(&reader);
  }
  std::vector<core::DigestRecord> out;
  out.reserve(buffer_records);
  core::kway_merge<core::DigestRecord>(
      streams,
      [order](const core::DigestRecord& a, const core::DigestRecord& b) { return core::digest_before(a, b, order); },
      [&](const core::DigestRecord& record) {
        out.push_back(record);
        if (out.size() == out.capacity()) {
          write(out.data(), out.size() * sizeof(core::DigestRecord));
          out.clear();
        }
      });
  write(out.data(), out.size() * sizeof(core::DigestRecord));
}

} // namespace dedupctl::connectors::file
