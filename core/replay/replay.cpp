#include "core/replay/replay.hpp"

#include "core/util/encoding.hpp"
#include "core/util/fingerprint.hpp"
#include "core/util/json_text.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace dedupctl::core {

Claim plan_claim(const RecordState& record, const std::vector<std::string>& in_progress_values) {
  if (record.kind == RecordState::Kind::Absent) {
    return Claim::Claimed;
  }
  return is_in_progress(record.value, in_progress_values) ? Claim::HeldByOther : Claim::Done;
}

Claim claim_found(const RecordState& record, bool own_claim, std::int64_t now_ms) {
  if (record.kind == RecordState::Kind::Absent || past_own_expiry(record, now_ms)) {
    return Claim::Claimed;
  }
  if (record.fails) {
    return Claim::HeldByOther; // the library fails on it: what it holds is not the replay's to take over
  }
  if (record.unreadable) {
    return Claim::Claimed;
  }
  if (record.claim && own_claim) {
    return Claim::OwnStale;
  }
  if (record.claim) {
    return claim_lapsed(record, now_ms) ? Claim::Claimed : Claim::HeldByOther;
  }
  return Claim::Done;
}

Claim judge_record(const RecordLayout& layout, const RecordState& record,
                   const std::vector<std::string>& in_progress_values, std::int64_t now_ms) {
  return layout.value == RecordValue::Json ? claim_found(record, false, now_ms)
                                           : plan_claim(record, in_progress_values);
}

std::string_view to_string(Decision decision) {
  switch (decision) {
  case Decision::Replayed:
    return "replayed";
  case Decision::SkippedDuplicate:
    return "skipped-duplicate";
  case Decision::SkippedClaimed:
    return "skipped-claimed";
  case Decision::Failed:
    return "failed";
  case Decision::NoId:
    return "no-id";
  case Decision::IdUnfit:
    return "id-unfit";
  case Decision::WouldReplay:
    return "would-replay";
  case Decision::WouldSkip:
    return "would-skip";
  case Decision::SkippedNotLost:
    return "skipped-not-lost";
  case Decision::SkippedChanged:
    return "skipped-changed";
  }
  return "unknown";
}

std::string format_decision(const DecisionRecord& record) {
  std::string out = "{\"event_id\":";
  bool utf8 = is_utf8(record.event_id);
  append_json_string(out, utf8 ? record.event_id : replace_non_utf8(record.event_id));
  if (!utf8) { // its exact bytes beside the text, as report-v1's examples carry them
    out += ",\"event_id_base64\":\"";
    base64_encode(record.event_id, Base64::Standard, true, out);
    out += '"';
  }
  out += ",\"topic\":";
  append_json_string(out, replace_non_utf8(record.topic));
  out += fmt::format(",\"partition\":{},\"offset\":{},\"decision\":\"{}\",\"reason\":", record.partition, record.offset,
                     to_string(record.decision));
  append_json_string(out, replace_non_utf8(record.reason));
  out += '}';
  return out;
}

std::optional<std::int64_t> Checkpoint::next_offset(std::string_view topic, std::int32_t partition) const {
  for (const auto& p : partitions) {
    if (p.topic == topic && p.partition == partition) {
      return p.next_offset;
    }
  }
  return std::nullopt;
}

void Checkpoint::set(std::string_view topic, std::int32_t partition, std::int64_t next_offset) {
  for (auto& p : partitions) {
    if (p.topic == topic && p.partition == partition) {
      p.next_offset = next_offset;
      return;
    }
  }
  partitions.push_back({std::string(topic), partition, next_offset});
}

namespace {
constexpr std::string_view k_magic = "# dedupctl-replay-checkpoint v1";

} // namespace

// # dedupctl-replay-checkpoint v1
// run	<id>
// sink	<description>	<position>
// <topic>	<partition>	<next offset>
std::string format_checkpoint(const Checkpoint& checkpoint) {
  std::string out =
      fmt::format("{}\nrun\t{}\nsink\t{}\t{}\n", k_magic, checkpoint.run_id, checkpoint.sink, checkpoint.sink_position);
  for (const auto& p : checkpoint.partitions) {
    out += fmt::format("{}\t{}\t{}\n", p.topic, p.partition, p.next_offset);
  }
  return out;
}

bool parse_checkpoint(std::string_view text, Checkpoint& checkpoint, std::string& error) {
  checkpoint = Checkpoint{};
  std::size_t pos = 0;
  int number = 0;
  bool has_run = false;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    ++number;
    if (number == 1) {
      if (line != k_magic) {
        error = fmt::format("line 1: not a dedupctl replay checkpoint (expected \"{}\")", k_magic);
        return false;
      }
      continue;
    }
    if (line.empty()) {
      continue;
    }
    std::vector<std::string_view> fields;
    for (std::size_t start = 0;;) {
      auto tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
      if (tab == std::string_view::npos) {
        break;
      }
      start = tab + 1;
    }
    if (fields[0] == "run" && fields.size() == 2 && !fields[1].empty()) {
      checkpoint.run_id = std::string(fields[1]);
      has_run = true;
    } else if (fields[0] == "sink" && fields.size() == 3) {
      checkpoint.sink = std::string(fields[1]);
      checkpoint.sink_position = std::string(fields[2]);
    } else if (fields.size() == 3) {
      std::int32_t partition = 0;
      std::int64_t offset = 0;
      if (fields[0].empty() || !parse_whole(fields[1], partition) || !parse_whole(fields[2], offset) || partition < 0 ||
          offset < 0) {
        error = fmt::format("line {}: expected TOPIC<tab>PARTITION<tab>NEXT-OFFSET", number);
        return false;
      }
      checkpoint.set(fields[0], partition, offset);
    } else {
      error = fmt::format("line {}: expected run, sink or TOPIC<tab>PARTITION<tab>NEXT-OFFSET", number);
      return false;
    }
  }
  if (number == 0) {
    error = "the file is empty";
    return false;
  }
  if (!has_run) {
    error = "no run line";
    return false;
  }
  return true;
}

MemoryWindow::MemoryWindow(std::size_t capacity, std::size_t bloom_bits)
    : m_capacity(capacity ? capacity : 1), m_bits((bloom_bits + 63) / 64 ? (bloom_bits + 63) / 64 : 1, 0) {}

bool MemoryWindow::bloom_has(std::uint64_t hash) const {
  auto h1 = static_cast<std::uint32_t>(hash);
  auto h2 = static_cast<std::uint32_t>(hash >> 32) | 1U;
  std::size_t bits = m_bits.size() * 64;
  for (int i = 0; i < k_hashes; ++i) {
    std::size_t bit = (h1 + static_cast<std::uint64_t>(i) * h2) % bits;
    if (!(m_bits[bit / 64] & (1ULL << (bit % 64)))) {
      return false;
    }
  }
  return true;
}

void MemoryWindow::bloom_add(std::uint64_t hash) {
  auto h1 = static_cast<std::uint32_t>(hash);
  auto h2 = static_cast<std::uint32_t>(hash >> 32) | 1U;
  std::size_t bits = m_bits.size() * 64;
  for (int i = 0; i < k_hashes; ++i) {
    std::size_t bit = (h1 + static_cast<std::uint64_t>(i) * h2) % bits;
    m_bits[bit / 64] |= 1ULL << (bit % 64);
  }
  ++m_bloom_keys;
}

bool MemoryWindow::seen_or_add(std::string_view key) {
  auto it = m_index.find(key);
  if (it != m_index.end()) {
    m_order.splice(m_order.begin(), m_order, it->second); // recently seen again
    return true;
  }
  if (m_bloom_keys > 0 && bloom_has(hash64(key, 0x5eed))) {
    return true;
  }
  m_order.emplace_front(key);
  m_index.emplace(m_order.front(), m_order.begin());
  if (m_order.size() > m_capacity) {
    const std::string& oldest = m_order.back();
    bloom_add(hash64(oldest, 0x5eed));
    m_index.erase(oldest);
    m_order.pop_back();
  }
  return false;
}

void MemoryWindow::forget(std::string_view key) {
  auto it = m_index.find(key);
  if (it == m_index.end()) {
    return;
  }
  auto node = it->second;
  m_index.erase(it);
  m_order.erase(node);
}

double MemoryWindow::false_positive_rate() const {
  double bits = static_cast<double>(m_bits.size() * 64);
  double n = static_cast<double>(m_bloom_keys);
  return std::pow(1.0 - std::exp(-k_hashes * n / bits), k_hashes);
}

void MemoryPlacement::plan(const std::vector<std::string>& keys, std::vector<Claim>& out) { claim(keys, "", out); }

void MemoryPlacement::claim(const std::vector<std::string>& keys, const std::string&, std::vector<Claim>& out) {
  out.clear();
  for (const auto& key : keys) {
    out.push_back(m_window.seen_or_add(key) ? Claim::Done : Claim::Claimed);
  }
}

void MemoryPlacement::settle(const std::vector<std::string>& keys, const std::vector<Claim>& claims,
                             const std::vector<bool>& delivered) {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (claims[i] == Claim::Claimed && !delivered[i]) {
      m_window.forget(keys[i]);
    }
  }
}

std::vector<Finding> replay_findings(const ReplayRun& run, std::string_view unfit_keys, const FindingBuilder& failed,
                                     const FindingBuilder& unfit, const FindingBuilder& claimed) {
  std::vector<Finding> findings;
  if (auto f = failed.build(
          "replay-failed", Severity::Error,
          fmt::format("{} events could not be delivered to {}; their claims were released", run.failed, run.sink),
          "Rerun with the same --checkpoint: it resumes at the first failed offset of each partition and publishes "
          "the failed events then; events delivered meanwhile are skipped as duplicates.")) {
    findings.push_back(std::move(*f));
  }
  if (auto f = unfit.build(
          "replay-id-unfit", Severity::Warning,
          fmt::format("{} events have ids the placement cannot hold ({}); they were not published", run.id_unfit,
                      unfit_keys),
          "The consumer could not record these ids either: find what produces them. Replay them with --no-dedup "
          "only after checking them by hand.")) {
    findings.push_back(std::move(*f));
  }
  if (auto f = claimed.build(
          "replay-skipped-claimed", Severity::Warning,
          fmt::format("{} events were skipped because another run or the consumer holds their claim",
                      run.skipped_claimed),
          "If that claim is stale (its process died), it stays until its lease expires; rerun after the lease, or "
          "check the consumer.")) {
    findings.push_back(std::move(*f));
  }
  return findings;
}

Finding no_dedup_finding() {
  Finding f;
  f.id = "replay-without-dedup";
  f.severity = Severity::Warning;
  f.title = "--no-dedup: every event of the range is published, duplicates included";
  f.count = 1;
  f.advice = "Consumers downstream see each event as often as the log holds it. Route the replay through the "
             "consumer's placement with --via unless every consumer is idempotent by design.";
  return f;
}

Finding memory_placement_finding(std::size_t capacity, std::size_t bloom_bits) {
  Finding f;
  f.id = "memory-placement";
  f.severity = Severity::Info;
  f.title = fmt::format("the memory: placement remembers the last {} keys exactly and older ones in a {} MiB Bloom "
                        "filter",
                        capacity, bloom_bits / 8 / 1024 / 1024);
  f.count = 1;
  f.advice = "An event the filter wrongly thinks it saw is skipped (rare), and nothing is remembered across runs or "
             "shared with the consumer: a rerun may publish again. Use it for high-volume streams whose consumers "
             "accept rare duplicates; use the consumer's own placement otherwise.";
  return f;
}

} // namespace dedupctl::core
