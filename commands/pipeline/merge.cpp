#include "commands/pipeline/merge.hpp"

#include "commands/pipeline/audit.hpp"
#include "commands/pipeline/common.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::commands {

namespace {

// The first "; "-separated part where two keys differ, for a message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::size_t start = 0;
  while (true) {
    auto end_a = a.find("; ", start);
    auto end_b = b.find("; ", start);
    std::string part_a = a.substr(start, end_a == std::string::npos ? std::string::npos : end_a - start);
    std::string part_b = b.substr(start, end_b == std::string::npos ? std::string::npos : end_b - start);
    if (part_a != part_b || end_a == std::string::npos || end_b == std::string::npos) {
      return fmt::format("'{}' against '{}'", part_a, part_b);
    }
    start = end_a + 2;
  }
}

std::string shard_name(const ShardInput& shard) {
  return fmt::format("{} (shard {}/{})", shard.name, shard.header.shard.index, shard.header.shard.count);
}

void check_shards(const std::vector<ShardInput>& shards) {
  if (shards.empty()) {
    throw UsageError("merge needs the digests of all N shards (dedupctl merge shard-0.digest … shard-N-1.digest)");
  }
  const ShardInput& first = shards.front();
  std::uint32_t n = first.header.shard.count;
  std::vector<const ShardInput*> by_index(n, nullptr);
  const ShardInput* reference = nullptr; // the first complete shard: the others are compared with it
  for (const auto& shard : shards) {
    const auto& h = shard.header;
    if (h.command != first.header.command) {
      throw UsageError(fmt::format("{} is a digest of dedupctl {} and {} of dedupctl {}: merge the shards of one run",
                                   shard.name, h.command, first.name, first.header.command));
    }
    if (h.shard.count != n) {
      throw UsageError(fmt::format("{} is one of {} shards and {} one of {}: merge the shards of one run",
                                   shard_name(shard), h.shard.count, shard_name(first), n));
    }
    if (const ShardInput* other = by_index[h.shard.index]) {
      throw UsageError(fmt::format("shard {}/{} is given twice: {} and {}", h.shard.index, n, other->name, shard.name));
    }
    by_index[h.shard.index] = &shard;
    if (!h.complete) {
      continue;
    }
    if (!reference) {
      reference = &shard;
      continue;
    }
    if (h.settings_key != reference->header.settings_key) {
      throw UsageError(fmt::format("{} and {} were run with different settings ({}): run every shard with the same "
                                   "options",
                                   shard_name(*reference), shard_name(shard),
                                   first_difference(reference->header.settings_key, h.settings_key)));
    }
    if (h.range_key != reference->header.range_key) {
      throw UsageError(fmt::format("{} and {} read different ranges ({}): give every shard the same --from/--to as "
                                   "offsets or times, not latest, so that they resolve alike",
                                   shard_name(*reference), shard_name(shard),
                                   first_difference(reference->header.range_key, h.range_key)));
    }
  }
  std::string missing;
  for (std::uint32_t k = 0; k < n; ++k) {
    if (!by_index[k]) {
      missing += fmt::format("{}{}/{}", missing.empty() ? "" : ", ", k, n);
    }
  }
  if (!missing.empty()) {
    throw UsageError(fmt::format("shard {} is missing: give the digests of all {} shards", missing, n));
  }
}

// Classifies every shard's events again, in the canonical order (a k-way merge by seq), as one
// AuditAnalyzer over the whole range would have; key collisions come from the merge of the keys.
void classify_again(std::vector<ShardInput>& shards, core::AuditAnalyzer& audit) {
  std::vector<core::DigestEvents*> streams;
  for (auto& shard : shards) {
    streams.push_back(shard.replay.get());
  }
  auto by_seq = [](const core::DigestEvent& a, const core::DigestEvent& b) { return a.seq < b.seq; };
  core::kway_merge<core::DigestEvent>(streams, by_seq, [&](const core::DigestEvent& e) {
    core::Event event = core::event_at(e.topic, e.partition, e.offset, e.timestamp_ms, e.seq);
    core::Identity identity;
    identity.has_id = e.has_id;
    identity.id = e.event_id;
    identity.type = e.type;
    core::RecordState record;
    record.kind = e.present ? core::RecordState::Kind::Present : core::RecordState::Kind::Absent;
    record.pttl_ms = e.pttl_ms;
    record.value = e.value;
    record.processed_at_ms = e.processed_at_ms;
    audit.observe(event, identity, e.dedup_key, record);
  });
}

// The rules that span partitions (log duplicates, reuse, semantic duplicates, key collisions),
// decided over every shard's digest records; their counts and examples go to `tally`.
core::CrossPartitionTally merge_across_partitions(std::vector<ShardInput>& shards, const core::DigestHeader& ref,
                                                  core::LogTally& tally) {
  std::vector<core::DigestRecords*> by_id;
  std::vector<core::DigestRecords*> by_semantic;
  std::vector<core::DigestRecords*> by_key;
  std::vector<core::DigestEvents*> events;
  for (auto& shard : shards) {
    by_id.push_back(shard.by_id.get());
    by_semantic.push_back(shard.by_semantic.get());
    if (ref.check_keys) {
      by_key.push_back(shard.by_key.get());
    }
    events.push_back(shard.events.get());
  }
  core::CrossPartitionTally cross = core::merge_cross_partition(by_id, by_semantic, by_key, events, ref.log_options);
  tally.log_duplicate = cross.log_duplicate;
  tally.id_reuse = cross.id_reuse;
  tally.semantic_duplicate = cross.semantic_duplicate;
  tally.counters.log_duplicates = cross.log_duplicate.count();
  tally.counters.id_reuse = cross.id_reuse.count();
  tally.counters.semantic_duplicates = cross.semantic_duplicate.count();
  return cross;
}

} // namespace

reports::Report merge_shards(std::vector<ShardInput>& shards) {
  check_shards(shards);
  std::sort(shards.begin(), shards.end(),
            [](const ShardInput& a, const ShardInput& b) { return a.header.shard.index < b.header.shard.index; });
  const ShardInput* reference = &shards.front();
  for (const auto& shard : shards) {
    if (shard.header.complete) {
      reference = &shard;
      break;
    }
  }
  const core::DigestHeader& ref = reference->header;

  reports::Report report;
  report.command = ref.command;
  report.fail_on = ref.fail_on;
  report.settings = ref.settings;
  report.settings_origin = ref.settings_origin;

  // What each shard decided within its partitions adds up.
  core::SourceInfo source = ref.source;
  source.partitions.clear();
  source.repeated_records = 0;
  source.invalid_lines = 0;
  core::LogTally tally(ref.log_options.max_examples);
  for (const auto& shard : shards) {
    const auto& h = shard.header;
    report.generated_at_ms = std::max(report.generated_at_ms, h.generated_at_ms);
    if (!h.complete && report.complete) {
      report.complete = false;
      report.exit_code = k_exit_unreachable; // the merge is incomplete, whatever stopped the shard
      report.error = fmt::format("{} is incomplete: {}", shard_name(shard), h.error.value_or("its run did not finish"));
    }
    source.partitions.insert(source.partitions.end(), h.source.partitions.begin(), h.source.partitions.end());
    source.repeated_records += h.source.repeated_records;
    source.invalid_lines = std::max(source.invalid_lines, h.source.invalid_lines); // each shard reads every line
    tally.counters.events += h.log.counters.events;
    tally.counters.no_id += h.log.counters.no_id;
    tally.no_id_binary += h.log.no_id_binary;
    tally.missing_id.merge(h.log.missing_id);
  }
  std::sort(source.partitions.begin(), source.partitions.end(),
            [](const core::PartitionRange& a, const core::PartitionRange& b) {
              return a.topic != b.topic ? a.topic < b.topic : a.partition < b.partition;
            });
  if (source.kind == core::SourceKind::File) {
    source.topics.clear();
    for (const auto& range : source.partitions) {
      if (std::find(source.topics.begin(), source.topics.end(), range.topic) == source.topics.end()) {
        source.topics.push_back(range.topic);
      }
    }
  }

  // What spans partitions is decided over all shards' records.
  core::CrossPartitionTally cross = merge_across_partitions(shards, ref, tally);

  core::FailOn fail_on = core::parse_fail_on(report.fail_on);
  std::size_t max_examples = ref.log_options.max_examples;
  if (!ref.audit) {
    report.summary = scan_summary(tally.counters);
    finish_report(report, std::move(source), core::log_findings(tally, ref.log_options), {}, max_examples, fail_on, {});
    return report;
  }
  const core::AuditDigest& setup = *ref.audit;
  core::AuditOptions options = setup.options;
  options.check_collisions = false;
  core::AuditAnalyzer audit(options);
  for (const auto& shard : shards) {
    if (shard.header.audit) {
      for (const auto& w : shard.header.audit->windows) {
        audit.set_partition(w.topic, w.partition, w.committed, w.window);
      }
    }
  }
  classify_again(shards, audit);
  audit.add_key_collisions(cross.key_collision);
  reports::PlacementInfo placement;
  placement.kind = setup.kind;
  placement.store = setup.store;
  placement.key_template = options.key_template.text();
  placement.consumer = setup.consumer;
  placement.retention = setup.retention;
  finish_audit_report(report, std::move(source), audit, tally, ref.log_options, std::move(placement),
                      setup.placement_findings, max_examples, fail_on, {});
  return report;
}

} // namespace dedupctl::commands
