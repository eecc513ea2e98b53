// A Kafka Streams store's changelog, read whole beside the log and folded into the store a restored
// task holds (core/store/kstreams_window).
#include "connectors/kafka/kafka.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

namespace dedupctl::connectors::kafka {

ChangelogReader::ChangelogReader(const KafkaSettings& settings, const std::string& topic, std::int64_t retention_ms,
                                 bool key_value)
    : m_topic(topic), m_fold(retention_ms, key_value) {
  RangeRequest request;
  request.topics.push_back(TopicRequest{topic, {}});
  request.from = core::parse_offset_spec("earliest", "--store");
  request.to = core::parse_offset_spec("end", "--store");
  ResolvedRange range;
  try {
    range = resolve_range(settings, request);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("the store's changelog: {} (Kafka Streams names it APPLICATION_ID-STORE-changelog; "
                                 "a named topology's is given with --layout-option changelog-topic=TOPIC)",
                                 e.what()));
  }
  m_partitions = range.plans.size();
  m_read = std::async(std::launch::async, [this, settings, plans = std::move(range.plans)]() mutable {
    auto reader = open_reader(settings, std::move(plans));
    core::EventBatch batch;
    while (reader->next_batch(batch)) {
      m_fold.restore(batch.events);
    }
  });
}

ChangelogReader::~ChangelogReader() {
  if (m_read.valid()) {
    m_read.wait();
  }
}

core::WindowStoreChangelog& ChangelogReader::fold() {
  if (!m_waited) {
    m_waited = true;
    m_read.get(); // rethrows the read's error, once; a second call finds the fold as the first left it
  }
  return m_fold;
}

} // namespace dedupctl::connectors::kafka
