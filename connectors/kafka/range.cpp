#include "connectors/kafka/client.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unistd.h>

// Range resolution: the brokers' facts (partitions, watermarks, committed offsets, timestamp
// lookups) for core::resolve_offset to decide on.
namespace dedupctl::connectors::kafka {

namespace {

// Timestamp lookups for one SPEC over all partitions; -1 for every partition the broker could
// not answer (the mock answers -1 always), so the reader falls back to skipping by time.
std::map<std::pair<std::string, std::int32_t>, std::int64_t>
time_lookups(rd_kafka_t* rk, const KafkaSettings& settings,
             const std::vector<std::pair<std::string, std::int32_t>>& all, std::int64_t timestamp) {
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> out;
  PartitionList list = make_list(all, timestamp);
  rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(rk, list.get(), timeout_of(settings));
  if (err && is_unreachable(err)) {
    unreachable(settings, "offsets for times", err);
  }
  for (const auto& key : all) {
    out[key] = err ? -1 : list_offset(list.get(), key.first, key.second).value_or(-1);
  }
  return out;
}

// The partitions of --topic (every one, or those named), each checked to exist; the topics go to
// `info` in request order.
std::vector<std::pair<std::string, std::int32_t>>
chosen_partitions(rd_kafka_t* rk, const KafkaSettings& settings, const RangeRequest& request, core::SourceInfo& info) {
  std::vector<std::pair<std::string, std::int32_t>> all;
  for (const auto& topic : request.topics) {
    info.topics.push_back(topic.topic);
    auto existing = topic_partitions(rk, settings, topic.topic);
    std::vector<std::int32_t> chosen = topic.partitions.empty() ? existing : topic.partitions;
    for (auto partition : chosen) {
      if (std::find(existing.begin(), existing.end(), partition) == existing.end()) {
        throw UsageError(fmt::format("topic '{}' has no partition {} (it has {}); check --topic", topic.topic,
                                     partition, existing.size()));
      }
      all.emplace_back(topic.topic, partition);
    }
  }
  return all;
}

// Each partition's watermarks and, with a group, its committed offset.
std::map<std::pair<std::string, std::int32_t>, core::PartitionFacts>
partition_facts(rd_kafka_t* rk, const KafkaSettings& settings, const RangeRequest& request,
                const std::vector<std::pair<std::string, std::int32_t>>& all) {
  std::map<std::pair<std::string, std::int32_t>, core::PartitionFacts> facts;
  auto marks = watermarks(rk, settings, all);
  for (std::size_t k = 0; k < all.size(); ++k) {
    facts[all[k]].log_start = marks[k].first;
    facts[all[k]].log_end = marks[k].second;
  }
  if (request.group && !all.empty()) {
    PartitionList list = make_list(all, RD_KAFKA_OFFSET_INVALID);
    rd_kafka_resp_err_t err = rd_kafka_committed(rk, list.get(), timeout_of(settings));
    if (err) {
      unreachable(settings, fmt::format("committed offsets of group '{}'", *request.group), err);
    }
    for (const auto& key : all) {
      auto offset = list_offset(list.get(), key.first, key.second);
      if (offset && *offset >= 0) {
        facts[key].committed = *offset;
      }
    }
  }
  return facts;
}

} // namespace

ResolvedRange resolve_range(const KafkaSettings& settings, const RangeRequest& request) {
  std::vector<std::pair<std::string, std::string>> defaults{{"enable.auto.commit", "false"},
                                                            {"allow.auto.create.topics", "false"}};
  // In a group only when its committed offsets are asked for: a consumer with a group.id finds and
  // connects to the group's coordinator, and destroying the handle while that connection was still
  // being made held the run for up to a second.
  if (request.group) {
    defaults.emplace_back("group.id", *request.group);
  }
  KafkaHandle rk = make_handle(RD_KAFKA_CONSUMER, settings, defaults);

  ResolvedRange out;
  out.info.kind = core::SourceKind::Kafka;
  out.info.bootstrap = settings.bootstrap;
  out.info.group = request.group;
  std::vector<std::pair<std::string, std::int32_t>> all = chosen_partitions(rk.get(), settings, request, out.info);
  auto facts = partition_facts(rk.get(), settings, request, all);
  bool uses_committed = request.seek || !request.seeks.empty() || request.from.kind == core::SpecKind::Committed ||
                        request.to.kind == core::SpecKind::Committed;
  if (request.group && uses_committed &&
      std::none_of(facts.begin(), facts.end(), [](const auto& f) { return f.second.committed.has_value(); })) {
    out.info.group_kind = non_consumer_group_kind(rk.get(), settings, *request.group);
  }

  auto lookups_for = [&](const core::OffsetSpec& spec) {
    std::map<std::pair<std::string, std::int32_t>, std::int64_t> lookups;
    if (auto ts = core::spec_timestamp(spec, request.now_ms); ts && !all.empty()) {
      lookups = time_lookups(rk.get(), settings, all, *ts);
    }
    return lookups;
  };
  auto from_lookups = lookups_for(request.from);
  auto to_lookups = lookups_for(request.to);
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> seek_lookups;
  if (request.seek) {
    seek_lookups = lookups_for(*request.seek);
  }
  std::vector<std::map<std::pair<std::string, std::int32_t>, std::int64_t>> more_seek_lookups;
  for (const auto& spec : request.seeks) {
    more_seek_lookups.push_back(lookups_for(spec));
  }
  out.seek_offsets.resize(request.seeks.size());

  auto with_lookup = [](core::PartitionFacts f, const auto& lookups, const auto& key) {
    if (auto it = lookups.find(key); it != lookups.end()) {
      f.time_lookup = it->second;
    }
    return f;
  };
  bool has_group = request.group.has_value();
  for (const auto& key : all) {
    const core::PartitionFacts& f = facts[key];
    auto from = core::resolve_offset(request.from, core::SpecRole::From, with_lookup(f, from_lookups, key), has_group,
                                     request.now_ms);
    auto to = core::resolve_offset(request.to, core::SpecRole::To, with_lookup(f, to_lookups, key), has_group,
                                   request.now_ms);
    core::PartitionPlan plan;
    plan.topic = key.first;
    plan.partition = key.second;
    plan.start = from.offset;
    plan.end = std::max(from.offset, to.offset);
    plan.skip_before_ts = from.timestamp_filter;
    plan.stop_at_ts = to.timestamp_filter;
    plan.rank = static_cast<std::uint32_t>(out.plans.size());
    plan.ranks = static_cast<std::uint32_t>(all.size());
    plan.order_base = plan.start;

    core::PartitionRange range;
    range.topic = key.first;
    range.partition = key.second;
    range.from = plan.start;
    range.to = plan.end;
    range.log_start = f.log_start;
    range.log_end = f.log_end;
    range.committed = f.committed;
    range.clamped = from.clamped;
    range.requested_from = from.requested;
    range.from_timestamp = from.timestamp_filter;
    if (request.seek) {
      auto seek = core::resolve_offset(*request.seek, core::SpecRole::Seek, with_lookup(f, seek_lookups, key),
                                       has_group, request.now_ms);
      range.seek = seek.offset;
      range.seek_timestamp = seek.timestamp_filter;
    }
    for (std::size_t k = 0; k < request.seeks.size(); ++k) {
      out.seek_offsets[k].push_back(core::resolve_offset(request.seeks[k], core::SpecRole::Seek,
                                                         with_lookup(f, more_seek_lookups[k], key), has_group,
                                                         request.now_ms)
                                        .offset);
    }
    out.plans.push_back(std::move(plan));
    out.info.partitions.push_back(std::move(range));
  }
  return out;
}

} // namespace dedupctl::connectors::kafka
