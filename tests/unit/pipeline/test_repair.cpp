// replay --repair-lost through replay's one code path: the RepairPlacement (core) over fakes of the
// records it releases and of the effects it reads.
#include "commands/pipeline/replay.hpp"
#include "core/replay/repair.hpp"
#include "tests/unit/fakes.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace dedupctl::commands {
namespace {

using testing::FakeEventSource;
using testing::FakeJournal;
using testing::FakeSink;
using testing::OwnedEvent;
using testing::summary;
using testing::with_header_id;

// Records as string values by key; `before_release` runs between a read and its release (the
// consumer writing meanwhile).
class FakeRecords final : public core::RecordRelease {
public:
  std::map<std::string, std::string> records;
  std::function<void()> before_release;
  std::set<std::string> released_keys;

  std::string kind() const override { return "fake"; }
  void read(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    m_keys = keys;
    m_seen.assign(keys.size(), std::string());
    out.assign(keys.size(), core::RecordState{});
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (auto it = records.find(keys[i]); it != records.end()) {
        m_seen[i] = it->second;
        out[i] = core::present_record(std::nullopt, m_seen[i]);
      }
    }
  }
  void release(const std::vector<std::uint8_t>& release, std::vector<std::uint8_t>& released) override {
    if (before_release) {
      before_release();
    }
    released.assign(m_keys.size(), 0);
    for (std::size_t i = 0; i < m_keys.size(); ++i) {
      auto it = records.find(m_keys[i]);
      if (release[i] != 0 && it != records.end() && it->second == m_seen[i]) {
        records.erase(it);
        released_keys.insert(m_keys[i]);
        released[i] = 1;
      }
    }
  }

private:
  std::vector<std::string> m_keys, m_seen;
};

class FakeEffects final : public core::EffectStore {
public:
  std::set<std::string> applied;
  std::vector<std::string> asked;
  void lookup(const std::vector<std::string>& keys, std::vector<std::uint8_t>& present) override {
    present.clear();
    for (const auto& key : keys) {
      asked.push_back(key);
      present.push_back(applied.count(key) ? 1 : 0);
    }
  }
};

// Ten events e-0 … e-9. Records: e-0 … e-5 done, e-6 in progress; effects: e-0 … e-2 and e-7.
// So e-3, e-4, e-5 are lost (done, no effect); e-6 is a claim (not processed); e-7 unguarded; e-8,
// e-9 never applied.
struct Planted {
  FakeRecords records;
  FakeEffects effects;
  Planted() {
    for (int i = 0; i <= 5; ++i) {
      records.records["dedup:e-" + std::to_string(i)] = "done";
    }
    records.records["dedup:e-6"] = "processing:consumer";
    for (const char* id : {"effect:e-0", "effect:e-1", "effect:e-2", "effect:e-7"}) {
      effects.applied.insert(id);
    }
  }
  core::RepairPlacement placement() {
    return core::RepairPlacement(
        records, effects, [](const core::RecordState& record) { return core::plan_claim(record, {"processing"}); });
  }
};

std::vector<OwnedEvent> events(int n) {
  std::vector<OwnedEvent> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(with_header_id(i % 2, i / 2, 1000 + i, "e-" + std::to_string(i), "{}"));
  }
  return out;
}

ReplayRequest repair_request(bool execute, FakeJournal& journal) {
  ReplayRequest r;
  r.execute = execute;
  r.run_id = "run-1";
  r.repair = true;
  r.key_template = core::KeyTemplate::parse("dedup:{event_id}");
  r.second_key_templates = {core::KeyTemplate::parse("effect:{event_id}")};
  r.batch_size = 4;
  r.journal = &journal;
  return r;
}

TEST(RepairPipeline, APlanNamesExactlyTheLostEventsAndChangesNothing) {
  Planted planted;
  auto placement = planted.placement();
  FakeJournal journal;
  std::map<std::string, std::string> decisions;
  journal.on_decide = [&](const core::DecisionRecord& d) {
    decisions[std::string(d.event_id)] = std::string(core::to_string(d.decision)) + ": " + std::string(d.reason);
  };
  FakeEventSource source(events(10), 3);
  auto report = run_replay(repair_request(false, journal), source, placement, nullptr, core::SourceInfo{}, 0);
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(summary(report, "would_replay"), 3);
  EXPECT_EQ(summary(report, "not_lost"), 7);
  EXPECT_EQ(summary(report, "would_skip"), 7);
  for (const char* id : {"e-3", "e-4", "e-5"}) {
    EXPECT_EQ(decisions[id].rfind("would-replay: lost", 0), 0u) << id << " " << decisions[id];
  }
  for (const char* id : {"e-0", "e-6", "e-7", "e-8"}) {
    EXPECT_EQ(decisions[id].rfind("would-skip: not lost", 0), 0u) << id << " " << decisions[id];
  }
  EXPECT_EQ(planted.records.records.size(), 7u) << "a plan releases nothing";
  // The effects were asked by their own keys, one per event.
  EXPECT_EQ(planted.effects.asked.size(), 10u);
  EXPECT_EQ(planted.effects.asked.front(), "effect:e-0");
}

// Effects keyed by something else (here under another prefix) match no processed event: the plan says
// effects-unmatched and is an error, and a proving pass stops asking once one effect is found.
TEST(RepairPipeline, EffectsThatMatchNoProcessedRecordAreUnmatchedAndAProofStopsAtTheFirstMatch) {
  Planted planted;
  planted.effects.applied = {"charge:e-0", "charge:e-1"}; // not what effect:{event_id} renders
  auto placement = planted.placement();
  placement.effects_source = "--effects fake (effect:{event_id})";
  FakeJournal journal;
  FakeEventSource source(events(10), 3);
  auto report = run_replay(repair_request(false, journal), source, placement, nullptr, core::SourceInfo{}, 0);
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_EQ(placement.processed(), 6) << "e-0 … e-5 are done";
  EXPECT_FALSE(placement.proven());
  auto unmatched = std::find_if(report.findings.begin(), report.findings.end(),
                                [](const core::Finding& f) { return f.id == "effects-unmatched"; });
  ASSERT_NE(unmatched, report.findings.end());
  EXPECT_EQ(unmatched->count, 6);
  EXPECT_NE(unmatched->title.find("--effects fake (effect:{event_id})"), std::string::npos) << unmatched->title;

  // The planted effects: e-0's is found in the first chunk, and nothing is asked after it.
  Planted matching;
  auto proving = matching.placement();
  proving.stop_when_proven = true;
  FakeJournal quiet;
  FakeEventSource again(events(10), 3);
  auto proof = run_replay(repair_request(false, quiet), again, proving, nullptr, core::SourceInfo{}, 0);
  EXPECT_TRUE(proving.proven());
  EXPECT_EQ(matching.effects.asked.size(), 3u) << "one chunk: the source's first batch of three";
  EXPECT_TRUE(std::none_of(proof.findings.begin(), proof.findings.end(),
                           [](const core::Finding& f) { return f.id == "effects-unmatched"; }));
}

TEST(RepairPipeline, ARunReleasesTheLostRecordsAndPublishesOnlyThoseEvents) {
  Planted planted;
  auto placement = planted.placement();
  FakeJournal journal;
  FakeSink sink;
  FakeEventSource source(events(10), 3);
  auto report = run_replay(repair_request(true, journal), source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(summary(report, "replayed"), 3);
  EXPECT_EQ(summary(report, "not_lost"), 7);
  EXPECT_EQ(summary(report, "records_released"), 3);
  EXPECT_EQ(summary(report, "released"), 0) << "no claim of the run's to release";
  EXPECT_EQ(sink.ids(), (std::multiset<std::string>{"e-3", "e-4", "e-5"}));
  EXPECT_EQ(planted.records.released_keys, (std::set<std::string>{"dedup:e-3", "dedup:e-4", "dedup:e-5"}));
  // Nothing is written for them: the consumer claims and records them when it applies them.
  EXPECT_FALSE(planted.records.records.count("dedup:e-3"));
  EXPECT_EQ(planted.records.records.at("dedup:e-6"), "processing:consumer");
  EXPECT_EQ(planted.records.records.at("dedup:e-0"), "done");
  // A second run finds nothing lost: the released events are no longer marked processed.
  FakeJournal again;
  FakeEventSource rerun(events(10), 3);
  auto second = run_replay(repair_request(true, again), rerun, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(summary(second, "replayed"), 0);
  EXPECT_EQ(sink.received.size(), 3u);
}

TEST(RepairPipeline, ARecordThatChangedSinceItWasReadIsLeftAloneAndSaid) {
  Planted planted;
  planted.records.before_release = [&] { planted.records.records["dedup:e-4"] = "done-again"; };
  auto placement = planted.placement();
  FakeJournal journal;
  FakeSink sink;
  FakeEventSource source(events(10), 10);
  auto r = repair_request(true, journal);
  r.batch_size = 10; // one read and one release
  auto report = run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(summary(report, "replayed"), 2);
  EXPECT_EQ(summary(report, "left_changed"), 1);
  EXPECT_EQ(sink.ids(), (std::multiset<std::string>{"e-3", "e-5"}));
  EXPECT_EQ(planted.records.records.at("dedup:e-4"), "done-again");
  auto it = std::find_if(report.findings.begin(), report.findings.end(),
                         [](const core::Finding& f) { return f.id == "repair-record-changed"; });
  ASSERT_NE(it, report.findings.end());
  EXPECT_EQ(it->count, 1);
  ASSERT_EQ(it->examples.size(), 1u);
  EXPECT_EQ(it->examples[0].event_id, "e-4");
}

TEST(RepairPipeline, AFailedDeliveryIsCountedAndItsRecordStaysReleased) {
  Planted planted;
  auto placement = planted.placement();
  FakeJournal journal;
  std::string reason;
  journal.on_decide = [&](const core::DecisionRecord& d) {
    if (d.event_id == "e-5") {
      reason = d.reason;
    }
  };
  FakeSink sink;
  sink.fail_ids = {"e-5"};
  FakeEventSource source(events(10), 10);
  auto report = run_replay(repair_request(true, journal), source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(summary(report, "replayed"), 2);
  EXPECT_EQ(summary(report, "failed"), 1);
  EXPECT_EQ(summary(report, "records_released"), 3) << "e-5's too, though it was not delivered";
  EXPECT_NE(reason.find("its stale record was released: a seek applies it"), std::string::npos) << reason;
}

// A run killed between releasing records and publishing them (here: the sink refuses from the first
// publish on) wrote the keys down before releasing them; the rerun, given them, publishes those
// events although no record marks them processed any more, and nothing else.
TEST(RepairPipeline, ARerunPublishesWhatAnInterruptedRunReleasedButNeverPublished) {
  Planted planted;
  std::vector<std::string> written_down;
  auto placement = planted.placement();
  placement.before_release = [&](const std::vector<std::string>& keys) {
    written_down.insert(written_down.end(), keys.begin(), keys.end());
  };
  FakeJournal journal;
  FakeSink refusing;
  refusing.refuse_from = 0;
  FakeEventSource source(events(10), 10);
  auto r = repair_request(true, journal);
  r.batch_size = 10;
  auto first = run_replay(r, source, placement, &refusing, core::SourceInfo{}, 0);
  EXPECT_FALSE(first.complete);
  EXPECT_TRUE(refusing.received.empty());
  EXPECT_EQ(written_down, (std::vector<std::string>{"dedup:e-3", "dedup:e-4", "dedup:e-5"}));
  EXPECT_FALSE(planted.records.records.count("dedup:e-4")) << "released before the publish failed";

  // Without what was written down, a rerun would find nothing lost.
  {
    auto blind = planted.placement();
    FakeJournal j;
    FakeSink sink;
    FakeEventSource again(events(10), 10);
    run_replay(repair_request(true, j), again, blind, &sink, core::SourceInfo{}, 0);
    EXPECT_TRUE(sink.received.empty());
  }
  auto resumed = planted.placement();
  resumed.released_before = {written_down.begin(), written_down.end()};
  FakeJournal j;
  std::vector<std::string> reasons;
  j.on_decide = [&](const core::DecisionRecord& d) {
    if (d.decision == core::Decision::Replayed) {
      reasons.push_back(std::string(d.reason));
    }
  };
  FakeSink sink;
  FakeEventSource again(events(10), 10);
  auto second = run_replay(repair_request(true, j), again, resumed, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(second.exit_code, 0);
  EXPECT_EQ(sink.ids(), (std::multiset<std::string>{"e-3", "e-4", "e-5"}));
  ASSERT_EQ(reasons.size(), 3u);
  EXPECT_NE(reasons[0].find("released by the interrupted run"), std::string::npos) << reasons[0];
  // One the consumer applied meanwhile is not published again.
  planted.effects.applied.insert("effect:e-4");
  FakeJournal k;
  FakeSink later;
  FakeEventSource third(events(10), 10);
  run_replay(repair_request(true, k), third, resumed, &later, core::SourceInfo{}, 0);
  EXPECT_EQ(later.ids(), (std::multiset<std::string>{"e-3", "e-5"}));
}

} // namespace
} // namespace dedupctl::commands
