#include "connectors/kafka/kafka.hpp"

#include "core/identity/identify.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

// --effects kafka:TOPIC: the consumer's effects as the records it produces to an output topic.
namespace dedupctl::connectors::kafka {

std::optional<std::int64_t> earliest_timestamp(const KafkaSettings& settings,
                                               const std::vector<core::PartitionPlan>& plans) {
  std::optional<std::int64_t> earliest;
  auto take = [&](std::int64_t ts) { earliest = earliest ? std::min(*earliest, ts) : ts; };
  std::vector<core::PartitionPlan> probes;
  for (const auto& plan : plans) {
    if (plan.start >= plan.end) {
      continue;
    }
    if (plan.skip_before_ts) { // a time-filtered start: nothing before it is read
      take(*plan.skip_before_ts);
      continue;
    }
    core::PartitionPlan probe = plan;
    probe.end = plan.start + 1;
    probe.stop_at_ts.reset();
    probes.push_back(probe);
  }
  if (!probes.empty()) {
    auto reader = open_reader(settings, std::move(probes));
    core::EventBatch batch;
    while (reader->next_batch(batch)) {
      for (const auto& event : batch.events) {
        if (event.timestamp_ms >= 0) {
          take(event.timestamp_ms);
        }
      }
    }
  }
  return earliest;
}

namespace {

class TopicEffects final : public core::EffectStore {
public:
  TopicEffects(const KafkaSettings& settings, std::string topic, std::int64_t from_ms, std::vector<core::FieldSpec> id)
      : m_settings(settings), m_topic(std::move(topic)), m_from_ms(from_ms), m_id(std::move(id)) {}

  void lookup(const std::vector<std::string>& keys, std::vector<std::uint8_t>& present) override {
    if (!m_loaded) {
      load();
    }
    present.assign(keys.size(), 0);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      present[i] = m_ids.count(keys[i]) != 0 ? 1 : 0;
    }
  }

private:
  // Every record from the first whose timestamp is >= from_ms to the end of the topic, as it is now.
  void load() {
    RangeRequest request;
    request.topics.push_back({m_topic, {}});
    request.from = core::OffsetSpec{core::SpecKind::Timestamp, m_from_ms, fmt::format("e@{}", m_from_ms)};
    request.to = core::OffsetSpec{core::SpecKind::Latest, 0, "latest"};
    ResolvedRange resolved;
    try {
      resolved = resolve_range(m_settings, request);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--effects kafka:{}: {}", m_topic, e.what()));
    }
    auto reader = open_reader(m_settings, std::move(resolved.plans));
    core::IdentifyOptions options = core::default_identify_options();
    options.id = m_id;
    core::Identifier identifier(options);
    core::EventBatch batch;
    std::vector<core::Identity> identities;
    while (reader->next_batch(batch)) {
      identifier.identify(batch, identities);
      for (const auto& identity : identities) {
        if (identity.has_id) {
          m_ids.emplace(identity.id);
        }
      }
    }
    m_loaded = true;
  }

  KafkaSettings m_settings;
  std::string m_topic;
  std::int64_t m_from_ms;
  std::vector<core::FieldSpec> m_id;
  bool m_loaded = false;
  std::unordered_set<std::string> m_ids;
};

} // namespace

std::unique_ptr<core::EffectStore> open_topic_effects(const KafkaSettings& settings, const std::string& topic,
                                                      std::int64_t from_ms, std::vector<core::FieldSpec> id) {
  return std::make_unique<TopicEffects>(settings, topic, from_ms, std::move(id));
}

} // namespace dedupctl::connectors::kafka
