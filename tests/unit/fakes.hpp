#pragma once

// In-memory fakes of our own interfaces (core/), for unit tests of the pipeline (never of a client
// library): one place for every fake, each named for the interface it stands in for.

#include "commands/pipeline/replay.hpp"
#include "core/audit/retention.hpp"
#include "core/check/check_rules.hpp"
#include "core/event.hpp"
#include "core/replay/replay.hpp"
#include "core/source/range.hpp"
#include "core/store/dedup_store.hpp"
#include "core/util/errors.hpp"
#include "tests/support/events.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace dedupctl::testing {

inline OwnedEvent with_header_id(std::int32_t partition, std::int64_t offset, std::int64_t ts, std::string id,
                                 std::string payload) {
  OwnedEvent e;
  e.partition = partition;
  e.offset = offset;
  e.timestamp_ms = ts;
  e.payload = std::move(payload);
  e.headers.emplace_back("event_id", std::move(id));
  return e;
}

// Serves events in batches of `batch_size`; can fail after `fail_after_batches` batches, the way a
// broker that goes away does. Records how many batches were asked for.
class FakeEventSource final : public core::EventSource {
public:
  explicit FakeEventSource(std::vector<OwnedEvent> events, std::size_t batch_size = 2)
      : m_events(std::move(events)), m_batch_size(batch_size) {}

  std::optional<std::size_t> fail_after_batches;
  bool fail_with_interrupt = false;
  std::atomic<int> batches_served{0}; // read by other threads in some tests

  bool next_batch(core::EventBatch& batch) override {
    batch.clear();
    if (fail_after_batches && static_cast<std::size_t>(batches_served) >= *fail_after_batches) {
      if (fail_with_interrupt) {
        throw InterruptedError("interrupted");
      }
      throw UnreachableError("cannot reach Kafka at fake:9092 (broker went away)");
    }
    if (m_next >= m_events.size()) {
      return false;
    }
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    while (m_next < m_events.size() && batch.events.size() < m_batch_size) {
      const auto& owned = m_events[m_next++];
      std::vector<core::Header> scratch;
      core::Event e = view(owned, scratch);
      std::size_t first = batch.headers.size();
      batch.headers.insert(batch.headers.end(), scratch.begin(), scratch.end());
      ranges.emplace_back(first, scratch.size());
      auto& cursor = cursor_for(owned);
      if (cursor.admit(e.offset, e.timestamp_ms)) {
        batch.events.push_back(e);
      } else {
        ranges.pop_back();
      }
    }
    for (std::size_t i = 0; i < batch.events.size(); ++i) {
      batch.events[i].headers = std::span<const core::Header>(batch.headers.data() + ranges[i].first, ranges[i].second);
    }
    ++batches_served;
    return !batch.events.empty() || m_next < m_events.size();
  }

  std::vector<core::PartitionPosition> positions() const override {
    std::vector<core::PartitionPosition> out;
    for (const auto& [key, cursor] : m_cursors) {
      out.push_back(cursor.position());
    }
    return out;
  }

private:
  core::PartitionCursor& cursor_for(const OwnedEvent& e) {
    auto key = std::make_pair(e.topic, e.partition);
    auto it = m_cursors.find(key);
    if (it == m_cursors.end()) {
      core::PartitionPlan plan;
      plan.topic = e.topic;
      plan.partition = e.partition;
      it = m_cursors.emplace(key, core::PartitionCursor(plan)).first;
    }
    return it->second;
  }

  std::vector<OwnedEvent> m_events;
  std::size_t m_batch_size;
  std::size_t m_next = 0;
  std::map<std::pair<std::string, std::int32_t>, core::PartitionCursor> m_cursors;
};

// The admin path's fake: answers what the test says, and records what was asked.
class FakeTopicConfigs final : public core::TopicConfigs {
public:
  std::optional<core::TopicRetention> answer;
  std::vector<std::string> asked;
  std::optional<core::TopicRetention> retention(const std::string& topic) override {
    asked.push_back(topic);
    return answer;
  }
};

// A dedup store in memory that records the batches it was asked, and can fail on the Nth.
// An inbox whose oldest row is `oldest_age_ms` old; records the times it was asked.
class FakeInboxStore final : public core::InboxStore {
public:
  std::optional<std::int64_t> oldest_age_ms;
  std::vector<std::int64_t> asked_at;

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    out.assign(keys.size(), core::RecordState{});
  }
  std::string kind() const override { return "fake inbox"; }
  std::optional<std::int64_t> oldest_row_age_ms(std::int64_t now_ms) override {
    asked_at.push_back(now_ms);
    return oldest_age_ms;
  }
  std::optional<bool> has_unique_constraint() override { return true; }
  std::int64_t ids_under_several_consumers() override { return 0; }
  std::string lookup_method() const override { return "fake"; }
};

class FakeDedupStore final : public core::DedupStore {
public:
  std::map<std::string, std::pair<std::optional<std::int64_t>, std::string>> records;
  std::vector<std::size_t> batch_sizes;
  std::optional<std::size_t> fail_on_batch;

  // As the real stores do, the values point into storage kept until the next call, which this one
  // overwrites first: a caller that kept them longer reads '#'s.
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    if (fail_on_batch && batch_sizes.size() == *fail_on_batch) {
      throw UnreachableError("cannot reach Redis at fake:6379 during a lookup (the server closed the connection)");
    }
    batch_sizes.push_back(keys.size());
    for (auto& value : m_values) {
      std::fill(value.begin(), value.end(), '#');
    }
    if (m_values.size() < keys.size()) {
      m_values.resize(keys.size());
    }
    out.assign(keys.size(), core::RecordState{});
    for (std::size_t i = 0; i < keys.size(); ++i) {
      auto it = records.find(keys[i]);
      if (it != records.end()) {
        m_values[i] = it->second.second;
        out[i] = core::present_record(it->second.first, m_values[i]);
      }
    }
  }
  std::string kind() const override { return "fake"; }

private:
  std::vector<std::string> m_values;
};

class FakeInspector final : public core::LiveInspector {
public:
  std::optional<core::TopicRetention> retention_answer;
  bool topic_unreachable = false;
  Redis redis_answer;
  bool redis_unreachable = false;
  Inbox inbox_answer;
  bool inbox_unreachable = false;
  Dynamo dynamo_answer;
  std::vector<std::string> asked;

  std::optional<core::TopicRetention> topic_retention(const std::string& topic) override {
    asked.push_back("topic " + topic);
    if (topic_unreachable) {
      throw UnreachableError("cannot reach Kafka at fake:9092");
    }
    return retention_answer;
  }
  Redis redis(const core::ConsumerDeclaration& consumer) override {
    asked.push_back("redis " + consumer.name);
    if (redis_unreachable) {
      throw UnreachableError("cannot reach Redis at fake:6379");
    }
    return redis_answer;
  }
  Dynamo dynamodb(const core::ConsumerDeclaration& consumer) override {
    asked.push_back("dynamodb " + consumer.name);
    return dynamo_answer;
  }
  Inbox inbox(const core::ConsumerDeclaration& consumer) override {
    asked.push_back("inbox " + consumer.name);
    if (inbox_unreachable) {
      throw UnreachableError("cannot reach PostgreSQL at fake");
    }
    return inbox_answer;
  }
};

// A placement as a map key → value: "processing:<run>" while claimed, "done" after delivery.
class FakePlacement final : public core::ReplayPlacement {
public:
  std::map<std::string, std::string> records;
  int claims = 0;
  std::optional<int> fail_settle_at; // the settle call that throws (an unreachable store)
  int settles = 0;                   // settle calls, each one's keys in settled
  std::vector<std::vector<std::string>> settled;

  std::string unfit; // keys containing it cannot be held (as a uuid column cannot hold "order-7")

  std::string kind() const override { return "fake"; }
  std::string unfit_keys() const override { return unfit.empty() ? "" : "no key with " + unfit; }
  bool is_unfit(const std::string& key) const { return !unfit.empty() && key.find(unfit) != std::string::npos; }
  void plan(const std::vector<std::string>& keys, std::vector<core::Claim>& out) override {
    out.clear();
    for (const auto& key : keys) {
      if (is_unfit(key)) {
        out.push_back(core::Claim::Unfit);
        continue;
      }
      auto it = records.find(key);
      core::RecordState state;
      if (it != records.end()) {
        state.kind = core::RecordState::Kind::Present;
        state.value = it->second;
      }
      out.push_back(core::plan_claim(state, {"processing"}));
    }
  }
  std::optional<int> interrupt_claim_at; // the claim call that sees SIGINT
  int claim_calls = 0;

  void claim(const std::vector<std::string>& keys, const std::string& run, std::vector<core::Claim>& out) override {
    if (interrupt_claim_at && claim_calls++ == *interrupt_claim_at) {
      throw InterruptedError("interrupted");
    }
    out.clear();
    for (const auto& key : keys) {
      if (is_unfit(key)) {
        out.push_back(core::Claim::Unfit);
        continue;
      }
      ++claims;
      auto [it, inserted] = records.try_emplace(key, "processing:" + run);
      out.push_back(inserted                               ? core::Claim::Claimed
                    : it->second == "processing:" + run    ? core::Claim::OwnStale
                    : it->second.starts_with("processing") ? core::Claim::HeldByOther
                                                           : core::Claim::Done);
    }
  }
  void settle(const std::vector<std::string>& keys, const std::vector<core::Claim>& claims_,
              const std::vector<bool>& delivered) override {
    if (fail_settle_at && settles == *fail_settle_at) {
      ++settles;
      throw UnreachableError("cannot reach the fake store");
    }
    ++settles;
    settled.push_back(keys);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (claims_[i] != core::Claim::Claimed && claims_[i] != core::Claim::OwnStale) {
        continue;
      }
      if (delivered[i]) {
        records[keys[i]] = "done";
      } else {
        records.erase(keys[i]);
      }
    }
  }
};

// A sink that keeps what it received; `fail_ids` are refused (a delivery report with an error).
// A sink that refuses every record from some point on (a principal without WRITE): from the
// `refuse_from`th publish on, publish throws; `refused_ids` come back as delivery reports that
// say the sink refuses.
class FakeSink final : public core::ReplaySink {
public:
  std::vector<OwnedEvent> received;
  std::set<std::string> fail_ids;
  std::optional<int> refuse_from;
  std::set<std::string> refused_ids;

  std::string describe() const override { return "file:fake"; }
  void publish(const core::Event& event, std::uint64_t tag) override {
    std::string id;
    for (const auto& h : event.headers) {
      if (h.name == "event_id" && h.value) {
        id = std::string(*h.value);
      }
    }
    if (refuse_from && published >= *refuse_from) {
      throw UnreachableError("the fake sink refuses");
    }
    ++published;
    if (refused_ids.contains(id)) {
      m_reports.push_back(core::Delivery{tag, false, true, "the fake sink refuses"});
      return;
    }
    if (fail_ids.contains(id)) {
      m_reports.push_back(core::Delivery{tag, false, false, "Broker: Not enough in-sync replicas"});
      return;
    }
    received.push_back(with_header_id(event.partition, event.offset, event.timestamp_ms, id, ""));
    m_reports.push_back(core::Delivery{tag, true, false, ""});
  }
  // Reports arrive only to a caller that waits, so that chunks really are in flight together.
  void poll(std::vector<core::Delivery>& out, int timeout_ms) override {
    ++polls;
    if (timeout_ms == 0) {
      return;
    }
    for (auto& d : m_reports) {
      out.push_back(d);
    }
    m_reports.clear();
  }
  int published = 0;
  int polls = 0;
  std::string position() override { return std::to_string(received.size()); }
  std::unique_ptr<core::EventSource> read_after(const std::string& position) override {
    std::vector<OwnedEvent> tail(received.begin() + std::stoll(position), received.end());
    return std::make_unique<FakeEventSource>(tail, 100);
  }
  std::multiset<std::string> ids() const {
    std::multiset<std::string> out;
    for (const auto& e : received) {
      out.insert(*e.headers[0].second);
    }
    return out;
  }

private:
  std::vector<core::Delivery> m_reports;
};

// A replay's journal in memory: every decision (formatted as the decisions file has it), how often
// they were flushed, and every checkpoint when `keep_checkpoints`. `on_decide` lets a test act at a
// decision (a sink that recovers, a placement that goes away).
class FakeJournal final : public commands::ReplayJournal {
public:
  bool keep_checkpoints = false;
  std::vector<std::string> decisions;
  std::vector<core::Checkpoint> checkpoints;
  std::optional<core::Checkpoint>* last_checkpoint = nullptr; // the latest checkpoint, also kept here
  int flushes = 0;
  std::function<void(const core::DecisionRecord&)> on_decide;

  void decide(const core::DecisionRecord& record) override {
    decisions.push_back(core::format_decision(record));
    if (on_decide) {
      on_decide(record);
    }
  }
  void flush_decisions() override { ++flushes; }
  bool keeps_checkpoints() const override { return keep_checkpoints; }
  void checkpoint(const core::Checkpoint& checkpoint) override {
    checkpoints.push_back(checkpoint);
    if (last_checkpoint) {
      *last_checkpoint = checkpoint;
    }
  }
};

} // namespace dedupctl::testing
