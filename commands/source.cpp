#include "commands/source.hpp"

#include "commands/settings.hpp"
#include "connectors/file/text.hpp"
#include "core/source/committed_offsets.hpp"
#include "core/source/offset_spec.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dedupctl::commands {

connectors::kafka::KafkaSettings reader_settings(bool read_uncommitted, const Context& context) {
  auto settings = kafka_settings(context);
  // Transactions: what a consumer sees (read_committed, librdkafka's default too) unless asked; a
  // -X isolation.level of the user's wins, as every -X does.
  std::string isolation = read_uncommitted ? "read_uncommitted" : "read_committed";
  bool isolation_given = false;
  for (const auto& [name, value] : settings.properties) {
    if (name == "isolation.level") {
      isolation = value;
      isolation_given = true;
    }
  }
  if (!isolation_given) {
    settings.properties.insert(settings.properties.begin(), {"isolation.level", isolation});
    settings.property_sources.insert(settings.property_sources.begin(), "--read-uncommitted");
  }
  return settings;
}

std::optional<core::TopicRetention> BrokerTopicConfigs::retention(const std::string& topic) {
  constexpr std::int64_t k_describe_timeout_ms = 3000;
  if (!m_answers.contains(topic)) {
    std::vector<std::string> asked{topic};
    for (const auto& other : m_topics) {
      if (!m_answers.contains(other)) {
        asked.push_back(other);
      }
    }
    m_answers.merge(connectors::kafka::describe_retentions(m_settings, asked, k_describe_timeout_ms));
  }
  return m_answers.at(topic).configs;
}

std::string BrokerTopicConfigs::why(const std::string& topic) const {
  auto at = m_answers.find(topic);
  if (at == m_answers.end()) {
    return "the broker was not asked";
  }
  if (!at->second.configs) {
    return at->second.why;
  }
  return core::no_retention_in_configs(topic);
}

connectors::kafka::TopicRequest parse_topic(const std::string& text) {
  connectors::kafka::TopicRequest request;
  auto colon = text.find(':');
  request.topic = text.substr(0, colon);
  if (request.topic.empty()) {
    throw UsageError(fmt::format("invalid --topic '{}': expected T or T:0,1,5", text));
  }
  if (colon == std::string::npos) {
    return request;
  }
  std::string_view rest(text);
  rest.remove_prefix(colon + 1);
  while (true) {
    auto comma = rest.find(',');
    auto item = rest.substr(0, comma);
    std::int32_t partition = 0;
    if (!core::parse_whole(item, partition) || partition < 0) {
      throw UsageError(fmt::format("invalid --topic '{}': '{}' is not a partition number", text, item));
    }
    request.partitions.push_back(partition);
    if (comma == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(comma + 1);
  }
  return request;
}

namespace {

// Keeps the shard's partitions of a resolved range, and notes the whole range for the merge.
void shard_range(const core::ShardSpec& shard, connectors::kafka::ResolvedRange& resolved, OpenedSource& opened) {
  std::string key =
      fmt::format("kafka isolation {} group {}", resolved.info.isolation, resolved.info.group.value_or("-"));
  for (const auto& r : resolved.info.partitions) {
    key += fmt::format("; {}[{}] {}..{} committed {} seek {} seek_ts {} from_ts {}", r.topic, r.partition, r.from, r.to,
                       r.committed.value_or(-1), r.seek.value_or(-1), r.seek_timestamp.value_or(-1),
                       r.from_timestamp.value_or(-1));
    opened.range_order.push_back(fmt::format("{}[{}]", r.topic, r.partition));
  }
  for (const auto& plan : resolved.plans) {
    key += fmt::format("; plan {}[{}] {}..{} skip {} stop {}", plan.topic, plan.partition, plan.start, plan.end,
                       plan.skip_before_ts.value_or(-1), plan.stop_at_ts.value_or(-1));
  }
  opened.range_key = std::move(key);
  std::erase_if(resolved.plans, [&](const core::PartitionPlan& plan) { return !shard.owns(plan.partition); });
  std::erase_if(resolved.info.partitions, [&](const core::PartitionRange& r) { return !shard.owns(r.partition); });
}

} // namespace

namespace {

// A kcat -J dump (--input): its range selected by --from/--to as it is read; with --seek, the
// group's offsets from --committed FILE.
OpenedSource open_dump(const SourceFlags& options, const Context& context, const std::optional<std::string>& seek,
                       const std::string& committed, const core::OffsetSpec& from, const core::OffsetSpec& to,
                       std::int64_t now) {
  OpenedSource opened;
  if (!options.topics.empty()) {
    throw UsageError("--input and --topic exclude each other: read a kcat dump or a topic, not both");
  }
  if (seek && committed.empty()) {
    throw UsageError(fmt::format(
        "--seek needs the group's committed offsets, which a kcat dump does not have: give them with --committed "
        "FILE, as kafka-consumer-groups --bootstrap-server B --group {} --all-topics --reset-offsets --to-current "
        "--dry-run --export prints them, or read the topic with --topic and -b instead of --input",
        options.group));
  }
  if (!committed.empty() && !seek) {
    context.note("--committed " + committed + " is only read for a --seek: not used");
  }
  if (!context.global.bootstrap.empty()) {
    context.note("--input reads the dump: --bootstrap-server is not used");
  }
  if (options.read_uncommitted) {
    context.note("--input reads the dump as kcat wrote it: --read-uncommitted is not used");
  }
  auto plan = core::plan_without_broker(from, to, now);
  auto file =
      std::make_unique<connectors::file::KcatFileSource>(options.input, plan, options.skip_invalid, &context.stop);
  if (options.shard) {
    file->set_shard(*options.shard);
    // The dump's bytes are compared once read (content_hash); what selects from it, here.
    opened.range_key = fmt::format("dump from {} to {}", options.from, options.to);
  }
  opened.file = file.get();
  opened.source = std::move(file);
  opened.info.kind = core::SourceKind::File;
  opened.info.path = options.input == "-" ? "<stdin>" : options.input;
  if (!options.group.empty()) {
    opened.info.group = options.group;
  }
  if (seek && !committed.empty()) {
    auto offsets =
        core::parse_committed_csv(connectors::file::read_text_file(committed, "--committed"), committed, options.group);
    opened.info.partitions = core::dump_seek_ranges(offsets, core::parse_offset_spec(*seek, "--seek"), now);
    if (options.shard) {
      std::erase_if(opened.info.partitions,
                    [&](const core::PartitionRange& r) { return !options.shard->owns(r.partition); });
    }
  }
  return opened;
}

// A Kafka range: resolved against the brokers (watermarks, times, the group's offsets), resumed from
// a replay's checkpoint, then read. A broker that cannot be reached leaves `failure` set.
OpenedSource open_topics(const SourceFlags& options, const Context& context, const std::optional<std::string>& seek,
                         const core::Checkpoint* resume, const std::string& committed, const core::OffsetSpec& from,
                         const core::OffsetSpec& to, std::int64_t now) {
  OpenedSource opened;
  if (options.topics.empty()) {
    throw UsageError("no events to read: give --topic T (with --bootstrap-server) or --input FILE");
  }
  if (!committed.empty()) {
    context.note("--committed " + committed + " is for a kcat dump: the group's offsets are read from the broker");
  }
  auto settings = reader_settings(options.read_uncommitted, context);
  std::string isolation;
  for (const auto& [name, value] : settings.properties) {
    if (name == "isolation.level") {
      isolation = value; // the last one wins, as in librdkafka
    }
  }
  connectors::kafka::RangeRequest request;
  for (const auto& topic : options.topics) {
    request.topics.push_back(parse_topic(topic));
  }
  request.from = from;
  request.to = to;
  if (!options.group.empty()) {
    request.group = options.group;
  }
  if (seek) {
    request.seek = core::parse_offset_spec(*seek, "--seek");
  }
  request.now_ms = now;
  if (!request.group) {
    // Refuse `committed` before contacting anyone.
    for (const auto* spec : {&request.from, &request.to}) {
      if (spec->kind == core::SpecKind::Committed) {
        throw UsageError(
            fmt::format("'{}' needs --group: the committed offset belongs to a consumer group", spec->text));
      }
    }
  }
  try {
    auto resolved = connectors::kafka::resolve_range(settings, request);
    resolved.info.isolation = isolation;
    if (auto why = core::committed_offsets_missing(resolved.info, request.seek ? &*request.seek : nullptr,
                                                   {&request.from, &request.to})) {
      throw UsageError(*why);
    }
    if (options.shard) {
      shard_range(*options.shard, resolved, opened);
    }
    opened.info = resolved.info;
    if (resume) {
      for (auto& plan : resolved.plans) {
        if (auto next = resume->next_offset(plan.topic, plan.partition); next && *next > plan.start) {
          plan.start = std::min(*next, plan.end);
        }
      }
    }
    opened.plans = resolved.plans;
    opened.source = connectors::kafka::open_reader(settings, std::move(resolved.plans));
  } catch (const UnreachableError& e) {
    opened.failure = e.what();
    opened.info.kind = core::SourceKind::Kafka;
    opened.info.bootstrap = settings.bootstrap;
    opened.info.group = request.group;
    opened.info.isolation = isolation;
    for (const auto& topic : request.topics) {
      opened.info.topics.push_back(topic.topic);
    }
  }
  return opened;
}

} // namespace

OpenedSource open_source(const SourceFlags& options, const Context& context, const std::optional<std::string>& seek,
                         const core::Checkpoint* resume, const std::string& committed) {
  auto from = core::parse_offset_spec(options.from, "--from");
  auto to = core::parse_offset_spec(options.to, "--to");
  std::int64_t now = context.now_ms();
  if (auto why = core::inverted_range(from, to, now)) {
    throw UsageError(*why);
  }
  if (!options.input.empty()) {
    return open_dump(options, context, seek, committed, from, to, now);
  }
  return open_topics(options, context, seek, resume, committed, from, to, now);
}

void note_ranges(const core::SourceInfo& info, const Context& context) {
  if (context.global.quiet > 0 || info.kind != core::SourceKind::Kafka) {
    return;
  }
  for (const auto& range : info.partitions) {
    std::string extra;
    if (range.from_timestamp) {
      extra = fmt::format(", from the first event at or after {}", core::format_time(*range.from_timestamp));
    }
    if (range.committed) {
      extra += fmt::format(", committed {}", *range.committed);
    }
    context.note(fmt::format("{}[{}] {}..{} (log {}..{}{})", range.topic, range.partition, range.from, range.to,
                             range.log_start.value_or(0), range.log_end.value_or(0), extra));
  }
}

} // namespace dedupctl::commands
