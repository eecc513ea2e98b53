#include "connectors/kafka/kafka.hpp"

#include "core/identity/identify.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
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
  TopicEffects(const KafkaSettings& settings, std::string topic, std::int64_t from_ms, std::vector<core::FieldSpec> id,
               bool follow)
      : m_settings(settings), m_topic(std::move(topic)), m_from_ms(from_ms), m_id(std::move(id)), m_follow(follow) {
    core::IdentifyOptions options = core::default_identify_options();
    options.id = m_id;
    m_identifier = std::make_unique<core::Identifier>(options);
  }

  void lookup(const std::vector<std::string>& keys, std::vector<std::uint8_t>& present) override {
    if (!m_loaded) {
      load();
    } else if (m_follow) {
      catch_up();
    }
    present.assign(keys.size(), 0);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      present[i] = m_ids.count(keys[i]) != 0 ? 1 : 0;
    }
  }

private:
  ResolvedRange resolve(core::OffsetSpec from) {
    RangeRequest request;
    request.topics.push_back({m_topic, {}});
    request.from = std::move(from);
    request.to = core::OffsetSpec{core::SpecKind::Latest, 0, "latest"};
    try {
      return resolve_range(m_settings, request);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--effects kafka:{}: {}", m_topic, e.what()));
    }
  }

  // Every record from the first whose timestamp is >= from_ms to the end of the topic, as it is now.
  void load() {
    auto resolved = resolve(core::OffsetSpec{core::SpecKind::Timestamp, m_from_ms, fmt::format("e@{}", m_from_ms)});
    read(std::move(resolved.plans));
    m_loaded = true;
  }

  // What was produced since (watch): each partition from where the last read ended, a partition new
  // since then from its log start.
  void catch_up() {
    auto resolved = resolve(core::OffsetSpec{core::SpecKind::Latest, 0, "latest"});
    std::vector<core::PartitionPlan> plans;
    for (std::size_t i = 0; i < resolved.plans.size(); ++i) {
      auto plan = resolved.plans[i];
      auto next = m_next.find(plan.partition);
      std::int64_t start = next != m_next.end() ? next->second : resolved.info.partitions[i].log_start.value_or(0);
      if (start < plan.end) {
        plan.start = start;
        plan.skip_before_ts.reset();
        plans.push_back(plan);
      }
    }
    if (!plans.empty()) {
      read(std::move(plans));
    }
  }

  void read(std::vector<core::PartitionPlan> plans) {
    for (const auto& plan : plans) {
      m_next[plan.partition] = plan.end;
    }
    if (plans.empty()) {
      return;
    }
    auto reader = open_reader(m_settings, std::move(plans));
    core::EventBatch batch;
    while (reader->next_batch(batch)) {
      m_identifier->identify(batch, m_identities);
      for (const auto& identity : m_identities) {
        if (identity.has_id) {
          m_ids.emplace(identity.id);
        }
      }
    }
  }

  KafkaSettings m_settings;
  std::string m_topic;
  std::int64_t m_from_ms;
  std::vector<core::FieldSpec> m_id;
  bool m_follow;
  bool m_loaded = false;
  std::unique_ptr<core::Identifier> m_identifier;
  std::vector<core::Identity> m_identities;
  std::map<std::int32_t, std::int64_t> m_next; // per partition, where the next read starts
  std::unordered_set<std::string> m_ids;
};

} // namespace

std::unique_ptr<core::EffectStore> open_topic_effects(const KafkaSettings& settings, const std::string& topic,
                                                      std::int64_t from_ms, std::vector<core::FieldSpec> id,
                                                      bool follow) {
  return std::make_unique<TopicEffects>(settings, topic, from_ms, std::move(id), follow);
}

} // namespace dedupctl::connectors::kafka
