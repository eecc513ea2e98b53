#include "core/merge/digest.hpp"

#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace dedupctl::core {

ShardSpec parse_shard(std::string_view text) {
  auto bad = [&]() -> ShardSpec {
    throw UsageError(fmt::format("invalid --shard '{}': expected K/N with 0 <= K < N <= {}, e.g. 0/4 for the first of "
                                 "four shards (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX is K)",
                                 text, k_max_shards));
  };
  auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return bad();
  }
  ShardSpec out;
  auto parse = [&](std::string_view part, std::uint32_t& value) {
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    return ec == std::errc{} && end == part.data() + part.size() && !part.empty();
  };
  if (!parse(text.substr(0, slash), out.index) || !parse(text.substr(slash + 1), out.count) || out.count == 0 ||
      out.index >= out.count || out.count > k_max_shards) {
    return bad();
  }
  return out;
}

void DigestRecorder::observe(const Event& event, const Identity& identity, std::string_view dedup_key,
                             const RecordState* record) {
  m_sink.add_event(event, identity, dedup_key, record);
  if (!identity.has_id) {
    return; // decided within its partition (missing-event-id)
  }
  DigestRecord digest;
  digest.id_hash = identity.id_hash;
  digest.semantic_hash = identity.semantic_hash;
  if (m_check_keys && key_may_collide(m_injectivity, identity.id)) {
    digest.key_hash = dedup_key_hash(dedup_key);
    digest.key_hash = digest.key_hash == 0 ? 1 : digest.key_hash; // as digest_key reads it
  }
  digest.seq = event.seq;
  digest.timestamp_ms = event.timestamp_ms;
  digest.payload = static_cast<std::uint32_t>(identity.payload_fingerprint);
  digest.partition = event.partition;
  m_sink.add_record(digest);
}

namespace {

// Calls `on_group` with each key's records across all streams, in canonical order.
template <typename OnGroup>
void for_each_group(const std::vector<DigestRecords*>& streams, DigestOrder order, OnGroup&& on_group) {
  std::vector<DigestRecord> group;
  kway_merge<DigestRecord>(
      streams, [order](const DigestRecord& a, const DigestRecord& b) { return digest_before(a, b, order); },
      [&](const DigestRecord& record) {
        if (!group.empty() && digest_key(group.front(), order) != digest_key(record, order)) {
          on_group(group);
          group.clear();
        }
        group.push_back(record);
      });
  if (!group.empty()) {
    on_group(group);
  }
}

// An example waiting for its event's details: the seq and note are known.
Example placeholder(const DigestRecord& record, std::string note) {
  Example ex;
  ex.seq = record.seq;
  ex.partition = record.partition;
  ex.note = std::move(note);
  return ex;
}

// The examples' details (id, topic, offset, time, key), from the events of their seqs.
void fill_examples(CrossPartitionTally& out, const std::vector<DigestEvents*>& events, std::size_t max_examples) {
  std::unordered_map<std::uint64_t, DigestEvent> wanted;
  FindingBuilder* builders[] = {&out.log_duplicate, &out.id_reuse, &out.semantic_duplicate, &out.key_collision};
  for (auto* builder : builders) {
    for (const auto& ex : builder->examples()) {
      wanted.emplace(ex.seq, DigestEvent{});
    }
  }
  if (!wanted.empty()) {
    DigestEvent event;
    for (auto* stream : events) {
      while (stream->next(event)) {
        if (auto it = wanted.find(event.seq); it != wanted.end()) {
          it->second = event;
        }
      }
    }
  }
  for (auto* builder : builders) {
    std::vector<Example> filled = builder->examples();
    for (auto& ex : filled) {
      const DigestEvent& event = wanted[ex.seq];
      ex.event_id = event.event_id;
      ex.topic = event.topic;
      ex.partition = event.partition;
      ex.offset = event.offset;
      ex.timestamp_ms = event.timestamp_ms;
      if (builder == &out.key_collision) {
        ex.dedup_key = event.dedup_key;
      }
    }
    *builder = FindingBuilder::restore(max_examples, builder->count(), builder->partitions(), std::move(filled));
  }
}

} // namespace

CrossPartitionTally merge_cross_partition(const std::vector<DigestRecords*>& by_id,
                                          const std::vector<DigestRecords*>& by_semantic,
                                          const std::vector<DigestRecords*>& by_key,
                                          const std::vector<DigestEvents*>& events, const LogAnalyzerOptions& options) {
  CrossPartitionTally out(options.max_examples);

  // Ids: the first occurrence in canonical order is the original; a later one repeats it when its
  // payload matches the first's or an earlier reuse's (LogAnalyzer::observe).
  std::vector<std::uint64_t> repeated; // seqs of events that are not their id's first occurrence
  std::optional<std::uint64_t> base_seq;
  std::int64_t base_ts = 0;
  std::vector<std::uint32_t> payloads;
  for_each_group(by_id, DigestOrder::Id, [&](const std::vector<DigestRecord>& group) {
    const DigestRecord& first = group.front();
    if (!base_seq || first.seq < *base_seq) {
      base_seq = first.seq;
      base_ts = first.timestamp_ms;
    }
    payloads.assign(1, first.payload);
    for (std::size_t i = 1; i < group.size(); ++i) {
      const DigestRecord& r = group[i];
      repeated.push_back(r.seq);
      if (std::find(payloads.begin(), payloads.end(), r.payload) != payloads.end()) {
        out.log_duplicate.add_at(r.partition, r.seq, [&] { return placeholder(r, {}); });
      } else {
        payloads.push_back(r.payload);
        out.id_reuse.add_at(r.partition, r.seq, [&] { return placeholder(r, reuse_note(r.payload, first.payload)); });
      }
    }
  });
  std::sort(repeated.begin(), repeated.end());

  // Semantic keys, over first occurrences only: a duplicate matches the latest earlier event of
  // its key under another id within the window.
  for_each_group(by_semantic, DigestOrder::Semantic, [&](const std::vector<DigestRecord>& group) {
    bool have = false;
    std::int64_t previous = 0;
    std::uint64_t previous_tag = 0;
    for (const auto& r : group) {
      if (std::binary_search(repeated.begin(), repeated.end(), r.seq)) {
        continue;
      }
      std::int64_t relative = SemanticStamp::relative(r.timestamp_ms, base_ts);
      std::uint64_t tag = r.id_hash & SemanticStamp::k_id_mask;
      if (have && previous_tag != tag) {
        std::int64_t gap = relative - previous;
        if (std::max(gap, -gap) <= options.semantic_window_ms) {
          out.semantic_duplicate.add_at(r.partition, r.seq, [&] { return placeholder(r, semantic_note(gap)); });
        }
      }
      have = true;
      previous = relative;
      previous_tag = tag;
    }
  });

  // Dedup keys: the first event id rendered to a key owns it (AuditAnalyzer::observe).
  for_each_group(by_key, DigestOrder::Key, [&](const std::vector<DigestRecord>& group) {
    std::uint64_t owner = group.front().id_hash;
    for (const auto& r : group) {
      if (r.id_hash != owner) {
        out.key_collision.add_at(r.partition, r.seq,
                                 [&] { return placeholder(r, "another event id already took this key"); });
      }
    }
  });

  fill_examples(out, events, options.max_examples);
  return out;
}

} // namespace dedupctl::core
