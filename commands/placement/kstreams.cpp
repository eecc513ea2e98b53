// The kstreams family: kstreams://APPLICATION_ID/STORE, a Kafka Streams state store the application's
// dedup processor keeps, read from its changelog topic on the audited cluster with the same connection
// and security flags (connectors/kafka's ChangelogReader, beside the log). The audit runs the guides'
// processor over the store the changelog folds to (core::WindowStoreReplay); the store's retention is
// the TTL: --ttl, else the changelog's retention.ms less Kafka Streams' additional retention.
#include "commands/placement/family.hpp"

#include "commands/settings.hpp"
#include "connectors/kafka/kafka.hpp"
#include "core/audit/retention.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dedupctl::commands {

namespace {

// windowstore.changelog.additional.retention.ms: what Kafka Streams adds to a window store's retention
// for its changelog's retention.ms, unless the application sets it.
constexpr std::int64_t k_additional_retention_ms = 24 * 60 * 60 * 1000;

// The store as the audit's DedupStore: it is never looked up key by key (its verdicts are the processor's
// over the fold, core::WindowStoreReplay); ready() surfaces a changelog record that is no window key.
class ChangelogStore : public core::DedupStore {
public:
  explicit ChangelogStore(std::shared_ptr<connectors::kafka::ChangelogReader> reader) : m_reader(std::move(reader)) {}
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    out.assign(keys.size(), core::RecordState{});
  }
  std::string kind() const override { return "kstreams"; }

private:
  std::shared_ptr<connectors::kafka::ChangelogReader> m_reader;
};

std::string changelog_topic(const PlacementOptions& options) {
  const auto& named = options.layout.changelog.changelog_topic;
  return named.empty() ? options.uri.changelog_topic() : named;
}

void check_layout(const PlacementOptions& options) {
  core::check_changelog_options(options.layout);
  if (options.flag != "--store") {
    return; // refused by the row
  }
  const auto& ttl = options.audit.ttl;
  if (ttl.source == core::TtlSource::Flag && options.layout.changelog.key_value) {
    throw UsageError(fmt::format("--ttl {}: --layout kstreams-kv is a key-value store, whose records never lapse (its "
                                 "changelog is compacted); drop --ttl",
                                 core::to_text(ttl.span)));
  }
  if (ttl.source == core::TtlSource::Flag && !ttl.span.is_finite()) {
    throw UsageError(fmt::format("--ttl {}: a window store's retention is a duration (Stores.persistentWindowStore's "
                                 "retentionPeriod); give it, or drop --ttl to read it from the changelog",
                                 core::to_text(ttl.span)));
  }
}

// The store's retention, for a window store without --ttl: the changelog's retention.ms less the
// additional retention (its default: an application that sets another is told to pass --ttl).
core::TtlDecision store_retention(const PlacementOptions& options, const std::string& topic, Context& context,
                                  std::vector<std::pair<std::string, std::string>>& settings) {
  if (options.layout.changelog.key_value) {
    core::TtlDecision kv;
    kv.span = core::Span::infinite();
    kv.source = core::TtlSource::Estimated;
    settings.emplace_back("store retention", "none: a key-value store keeps every key its changelog compacts to");
    return kv;
  }
  if (options.audit.ttl.source == core::TtlSource::Flag) {
    settings.emplace_back("store retention", core::to_text(options.audit.ttl.span) + " (--ttl)");
    return options.audit.ttl;
  }
  std::string why;
  auto settings_of = kafka_settings(context);
  auto configs = connectors::kafka::describe_retention(settings_of, topic, settings_of.timeout_ms, &why);
  std::int64_t retention = 0;
  const std::string* text = configs && configs->retention_ms ? &*configs->retention_ms : nullptr;
  auto [end, ec] = text ? std::from_chars(text->data(), text->data() + text->size(), retention)
                        : std::from_chars_result{nullptr, std::errc::invalid_argument};
  if (!text || ec != std::errc() || end != text->data() + text->size() || retention <= k_additional_retention_ms) {
    throw UsageError(fmt::format(
        "--store {}: give --ttl, the window store's retention: {}", options.uri.redacted(),
        !text ? fmt::format("the changelog's retention.ms could not be read ({})", why.empty() ? "not described" : why)
              : fmt::format("the changelog's retention.ms is {}, which is no retention plus "
                            "the default additional day",
                            *text)));
  }
  core::TtlDecision out;
  out.span = core::Span::finite(retention - k_additional_retention_ms);
  out.source = core::TtlSource::Estimated;
  settings.emplace_back("store retention",
                        fmt::format("{} (estimated: the changelog's retention.ms {} less "
                                    "windowstore.changelog.additional.retention.ms at its default, {}; pass --ttl if "
                                    "the application sets another)",
                                    core::format_duration(retention - k_additional_retention_ms),
                                    core::format_duration(retention),
                                    core::format_duration(k_additional_retention_ms)));
  return out;
}

// How the application reads its store, from the layout's options and the store's retention; its words for
// the report's settings.
core::WindowStoreReading reading_of(const core::ChangelogSpec& spec, std::int64_t retention_ms,
                                    std::vector<std::pair<std::string, std::string>>& settings) {
  core::WindowStoreReading reading;
  reading.serde = spec.serde;
  reading.key_value = spec.key_value;
  settings.emplace_back("key serde", std::string(core::to_string(spec.serde)));
  if (spec.key_value) {
    settings.emplace_back("lookup", "get(id): any record of the id suppresses it");
    return reading;
  }
  reading.processor = core::processor_for_window(*spec.lookup_window_ms);
  reading.stream_time = spec.stream_time;
  reading.kept_state = spec.kept_state;
  reading.segment_interval_ms = core::default_segment_interval(retention_ms);
  settings.emplace_back("lookup", fmt::format("fetch(id, t - {}, t + {}), t the {}",
                                              core::format_duration(reading.processor.left_ms),
                                              core::format_duration(reading.processor.right_ms),
                                              spec.stream_time ? "task's stream time" : "record's timestamp"));
  settings.emplace_back(
      "store state",
      spec.kept_state
          ? fmt::format("kept: the instance restarts on its own local state (a persistent window store shut down "
                        "cleanly, segments of {}): its stream time starts again at -1, so every record of a live "
                        "segment suppresses",
                        core::format_duration(reading.segment_interval_ms))
          : "restored: the verdicts assume an instance that restores the store from its changelog (a new pod, "
            "wiped state); state=kept reads a restart on local state");
  return reading;
}

OpenedStore open_store(const PlacementOptions& options, Context& context, std::optional<std::int64_t>) {
  OpenedStore out;
  std::string topic = changelog_topic(options);
  out.ttl = store_retention(options, topic, context, out.settings);
  std::int64_t retention = out.ttl->span.finite_ms().value_or(0);
  auto reader = std::make_shared<connectors::kafka::ChangelogReader>(kafka_settings(context), topic, retention,
                                                                     options.layout.changelog.key_value);
  out.changelog = [reader]() -> core::WindowStoreChangelog& { return reader->fold(); };
  out.reading = reading_of(options.layout.changelog, retention, out.settings);
  out.store = std::make_unique<ChangelogStore>(reader);
  out.settings.emplace_back("changelog",
                            fmt::format("{} ({} partitions, read_committed)", topic, reader->partitions()));
  return out;
}

} // namespace

StoreFamily kstreams_family() {
  StoreFamily family;
  family.row = &placement::family_row(core::StoreUri::Kind::Kstreams);
  family.default_layout = "kstreams-window";
  family.check_layout = check_layout;
  family.open_store = open_store;
  return family;
}

} // namespace dedupctl::commands
