// replay's one code path (plan and run) against in-memory fakes of the placement and the sink.
#include "commands/pipeline/replay.hpp"
#include "core/replay/decision.hpp"
#include "core/replay/guard.hpp"
#include "tests/unit/fakes.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace dedupctl::commands {
namespace {

using testing::FakeEventSource;
using testing::FakeJournal;
using testing::FakePlacement;
using testing::FakeSink;
using testing::OwnedEvent;
using testing::with_header_id;

std::vector<OwnedEvent> events(int n, int partitions = 2) {
  std::vector<OwnedEvent> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(with_header_id(i % partitions, i / partitions, 1000 + i, "e-" + std::to_string(i), "{}"));
  }
  return out;
}

using dedupctl::testing::summary;

// The journal a request writes to: a fresh one each, kept for the whole test program so that a
// request copied around still points at it.
FakeJournal& new_journal() {
  static std::deque<FakeJournal> journals;
  return journals.emplace_back();
}
FakeJournal& journal_of(const ReplayRequest& r) { return *static_cast<FakeJournal*>(r.journal); }

// A request with a journal of its own, which keeps checkpoints (the latest in `saved`) when given.
ReplayRequest request(bool execute, std::optional<core::Checkpoint>* saved = nullptr) {
  ReplayRequest r;
  r.execute = execute;
  r.run_id = "run-1";
  r.key_template = core::KeyTemplate::parse("dedup:{event_id}");
  FakeJournal& journal = new_journal();
  journal.keep_checkpoints = saved != nullptr;
  journal.last_checkpoint = saved;
  r.journal = &journal;
  return r;
}

// A rerun of `n` events (source batches of `batch_events`) resumed from the saved checkpoint.
reports::Report resume(std::optional<core::Checkpoint>& saved, int n, std::size_t batch_events,
                       FakePlacement& placement, FakeSink& sink) {
  FakeEventSource rerun(events(n), batch_events);
  auto again = request(true, &saved);
  again.checkpoint = saved;
  return run_replay(again, rerun, placement, &sink, core::SourceInfo{}, 0);
}

// The sink holds e-0 … e-(n-1), each exactly once.
void expect_each_id_once(const FakeSink& sink, int n) {
  auto ids = sink.ids();
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(ids.count("e-" + std::to_string(i)), 1u) << i;
  }
}

TEST(ReplayPipeline, APlanCountsWhatWouldBePublishedOrPassedOverAndChangesNothing) {
  auto log = events(6);
  log.push_back(with_header_id(0, 3, 2000, "e-0", "{}")); // e-0 again, later in the range
  OwnedEvent no_id;
  no_id.offset = 4;
  log.push_back(no_id);
  FakeEventSource source(log, 3);
  FakePlacement placement;
  placement.records["dedup:e-1"] = "done";
  placement.records["dedup:e-2"] = "processing:other";
  std::vector<std::string> decisions;
  auto r = request(false);
  journal_of(r).on_decide = [&](const core::DecisionRecord& d) {
    decisions.push_back(std::string(core::to_string(d.decision)));
  };
  auto report = run_replay(r, source, placement, nullptr, core::SourceInfo{}, 0);
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(summary(report, "would_replay"), 4); // e-0, e-3, e-4, e-5
  EXPECT_EQ(summary(report, "would_skip"), 3);   // e-1 done, e-2 claimed, e-0 again
  EXPECT_EQ(summary(report, "no_id"), 1);
  EXPECT_EQ(placement.claims, 0);
  EXPECT_EQ(placement.records.size(), 2u) << "a plan claims nothing";
  EXPECT_EQ(decisions.size(), 8u);
  EXPECT_EQ(decisions[0], "would-replay");
  ASSERT_TRUE(report.replay && report.replay->run);
  EXPECT_FALSE(report.replay->run->execute);
}

// --via a version guard: the walk's verdicts decide; only what the guard applies is published, nothing
// is claimed, and the decisions say the guard's words.
TEST(ReplayPipeline, AVersionGuardPublishesWhatItAppliesAndClaimsNothing) {
  for (bool execute : {false, true}) {
    core::GuardPlacement placement("postgres");
    placement.judge("orders/0/1", core::GuardVerdict::Applies);  // e-2
    placement.judge("orders/1/0", core::GuardVerdict::Applies);  // e-1
    placement.judge("orders/0/2", core::GuardVerdict::Unjudged); // e-4
    placement.judge("orders/1/2", core::GuardVerdict::Drops);    // e-5
    placement.walked("orders", 0, 3);                            // the walk read partition 0 to its end
    placement.walked("orders", 1, 3);                            // and partition 1 up to e-5
    auto log = events(6);
    log.push_back(with_header_id(1, 3, 2000, "e-7", "{}")); // appended after the walk
    log.push_back(with_header_id(2, 0, 2001, "e-8", "{}")); // in a partition the topic gained since
    FakeEventSource source(log, 4);
    FakeSink sink;
    auto r = request(execute);
    r.guard = true;
    r.key_template = core::guard_replay_key_template();
    std::map<std::string, std::string> reasons;
    journal_of(r).on_decide = [&](const core::DecisionRecord& d) {
      reasons[std::string(d.event_id)] = std::string(d.reason);
    };
    auto report = run_replay(r, source, placement, execute ? &sink : nullptr, core::SourceInfo{}, 0);
    ASSERT_TRUE(report.complete);
    EXPECT_EQ(summary(report, execute ? "replayed" : "would_replay"), 2) << execute;
    EXPECT_EQ(summary(report, execute ? "skipped_duplicate" : "would_skip"), 3) << execute; // e-0, e-3, e-5
    EXPECT_EQ(summary(report, "id_unfit"), 3) << "e-4, not judged, and e-7 and e-8, read after the walk";
    if (execute) {
      EXPECT_EQ(sink.ids(), (std::multiset<std::string>{"e-1", "e-2"}));
      EXPECT_EQ(summary(report, "released"), 0) << "nothing was claimed";
    }
    EXPECT_EQ(reasons["e-0"], core::reason_text(core::DecisionWhy::GuardDrops));
    EXPECT_EQ(reasons["e-1"], execute ? "published" : core::reason_text(core::DecisionWhy::GuardApplies));
    EXPECT_EQ(reasons["e-4"], placement.unfit_keys());
    EXPECT_EQ(reasons["e-7"], placement.unfit_keys());
    EXPECT_EQ(reasons["e-8"], placement.unfit_keys());
    bool said = false;
    for (const auto& f : report.findings) {
      if (f.id == "version-guard-replay") {
        said = true;
        EXPECT_EQ(f.count, 2);
        EXPECT_NE(f.title.find("applies 2 of the 4 events read"), std::string::npos) << f.title;
      }
    }
    EXPECT_TRUE(said);
  }
}

TEST(ReplayPipeline, ReplayingARangeTwicePublishesEveryEventOnce) {
  FakePlacement placement;
  FakeSink sink;
  for (int round = 0; round < 2; ++round) {
    FakeEventSource source(events(10), 3);
    auto report = run_replay(request(true), source, placement, &sink, core::SourceInfo{}, 0);
    EXPECT_EQ(report.exit_code, 0);
    EXPECT_EQ(summary(report, "replayed"), round == 0 ? 10 : 0);
    EXPECT_EQ(summary(report, "skipped_duplicate"), round == 0 ? 0 : 10);
  }
  EXPECT_EQ(sink.received.size(), 10u);
  EXPECT_EQ(placement.records.at("dedup:e-7"), "done");
}

TEST(ReplayPipeline, FailedDeliveriesReleaseTheirClaimsHoldTheCheckpointAndPublishOnTheRerun) {
  FakePlacement placement;
  FakeSink sink;
  sink.fail_ids = {"e-2", "e-5"}; // partition 0 offset 1, partition 1 offset 2
  std::optional<core::Checkpoint> saved;
  FakeEventSource first(events(10), 4);
  auto report = run_replay(request(true, &saved), first, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(report.exit_code, 1) << "replay-failed is an error";
  EXPECT_EQ(summary(report, "failed"), 2);
  EXPECT_EQ(summary(report, "released"), 2);
  EXPECT_EQ(summary(report, "replayed"), 8);
  EXPECT_FALSE(placement.records.contains("dedup:e-2")) << "released";
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->next_offset("orders", 0), 1) << "held at the first failed offset";
  EXPECT_EQ(saved->next_offset("orders", 1), 2);
  sink.fail_ids.clear();
  auto second = resume(saved, 10, 4, placement, sink);
  EXPECT_EQ(summary(second, "replayed"), 2);
  EXPECT_EQ(summary(second, "failed"), 0);
  expect_each_id_once(sink, 10);
}

// A run of `source` (chunks of 2 events) that ends incomplete: exit 3, the report's error `error`,
// and no claim left behind (the placement still answers). The checkpoint is left in `saved`.
reports::Report incomplete_run(FakeEventSource& source, FakePlacement& placement, FakeSink& sink,
                               std::optional<core::Checkpoint>& saved, const std::string& error) {
  auto r = request(true, &saved);
  r.batch_size = 2;
  auto report = run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_EQ(report.error, error);
  for (const auto& [key, value] : placement.records) {
    EXPECT_EQ(value, "done") << key << ": a claim left behind";
  }
  return report;
}

// A run of `n` events into a sink that refuses every record from some point on: it ends incomplete
// with the sink's reason; what was claimed and not delivered is released, and nothing is claimed
// after the refusal.
reports::Report refused_run(FakePlacement& placement, FakeSink& sink, std::optional<core::Checkpoint>& saved, int n) {
  FakeEventSource first(events(n), 4);
  auto report = incomplete_run(first, placement, sink, saved, "the fake sink refuses");
  EXPECT_GT(summary(report, "failed"), 0);
  EXPECT_EQ(summary(report, "released"), summary(report, "failed"));
  EXPECT_LT(placement.claims, n) << "no chunk is claimed once the sink refused";
  return report;
}

// The rerun once the sink takes records again: from the checkpoint, each event in the sink once.
void expect_rerun_publishes_the_rest(std::optional<core::Checkpoint>& saved, FakePlacement& placement, FakeSink& sink,
                                     int n, int replayed) {
  auto second = resume(saved, n, 4, placement, sink);
  EXPECT_TRUE(second.complete) << second.error.value_or("");
  EXPECT_EQ(summary(second, "replayed"), replayed);
  expect_each_id_once(sink, n);
}

// The refusal as publish throws it (the producer knows the topic refuses: the principal may not
// write); the checkpoint holds at the first event not delivered.
TEST(ReplayPipeline, ASinkThatRefusesPublishingEndsTheRunIncompleteAndReleasesEveryClaim) {
  FakePlacement placement;
  FakeSink sink;
  sink.refuse_from = 3;
  std::optional<core::Checkpoint> saved;
  auto report = refused_run(placement, sink, saved, 24);
  EXPECT_EQ(summary(report, "replayed"), 3);
  EXPECT_EQ(placement.records.size(), 3u);
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->next_offset("orders", 0), 2) << "e-0, e-2 and e-4 went out (e-3 was not): held at e-4's next";
  EXPECT_EQ(saved->next_offset("orders", 1), 1);
  sink.refuse_from.reset();
  expect_rerun_publishes_the_rest(saved, placement, sink, 24, 21);
}

// The same refusal when it comes back in a delivery report (the broker answered the produce).
TEST(ReplayPipeline, ADeliveryReportThatSaysTheSinkRefusesEndsTheRunTheSameWay) {
  FakePlacement placement;
  FakeSink sink;
  sink.refused_ids = {"e-0", "e-1", "e-2", "e-3", "e-4", "e-5", "e-6", "e-7"};
  std::optional<core::Checkpoint> saved;
  auto report = refused_run(placement, sink, saved, 40);
  sink.refused_ids.clear();
  expect_rerun_publishes_the_rest(saved, placement, sink, 40, 40 - static_cast<int>(summary(report, "replayed")));
}

// The source goes away mid-run (a broker down, a fetch refused): what was read and claimed is still
// published, settled and checkpointed, so no claim is left `processing`; the run ends incomplete
// with the source's reason, and the rerun publishes the rest, each event once.
TEST(ReplayPipeline, ASourceThatGoesAwayMidRunSettlesWhatIsInFlightAndEndsIncomplete) {
  FakePlacement placement;
  FakeSink sink;
  std::optional<core::Checkpoint> saved;
  FakeEventSource first(events(20), 4);
  first.fail_after_batches = 3;
  auto report = incomplete_run(first, placement, sink, saved, "cannot reach Kafka at fake:9092 (broker went away)");
  EXPECT_EQ(summary(report, "replayed"), 12) << "the three batches read are published";
  EXPECT_EQ(placement.records.size(), 12u);
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->next_offset("orders", 0), 6);
  EXPECT_EQ(saved->next_offset("orders", 1), 6);
  expect_rerun_publishes_the_rest(saved, placement, sink, 20, 8);
}

// A run killed after publishing but before settling leaves its claims `processing:<run>`; the rerun
// reads back what the sink got after the checkpoint and settles those without publishing again.
// Killed before its first batch settled, the run's first checkpoint (its id, the sink's start) does
// the same.
TEST(ReplayPipeline, ARunKilledBeforeItsFirstBatchSettledIsResumedByItsFirstCheckpoint) {
  FakePlacement placement;
  FakeSink sink;
  std::optional<core::Checkpoint> saved;
  placement.fail_settle_at = 0;
  FakeEventSource first(events(6), 3);
  auto report = run_replay(request(true, &saved), first, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_FALSE(report.complete);
  ASSERT_TRUE(saved);
  EXPECT_TRUE(saved->partitions.empty());
  EXPECT_EQ(saved->sink_position, "0");
  std::size_t published = sink.received.size();
  EXPECT_GE(published, 3u) << "the first chunk was published before its settle failed";
  placement.fail_settle_at.reset();
  auto second = resume(saved, 6, 3, placement, sink);
  EXPECT_EQ(second.replay->run->found_in_sink, static_cast<std::int64_t>(published));
  expect_each_id_once(sink, 6);
}

TEST(ReplayPipeline, AResumedRunDoesNotRepublishWhatTheInterruptedRunPublished) {
  FakePlacement placement;
  FakeSink sink;
  std::optional<core::Checkpoint> saved;
  placement.fail_settle_at = 1; // the second batch dies after its deliveries
  FakeEventSource first(events(12), 4);
  auto report = run_replay(request(true, &saved), first, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 3);
  std::size_t published = sink.received.size();
  EXPECT_GE(published, 8u) << "at least two batches published";
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->sink_position, "4") << "the checkpoint is the first batch's";
  EXPECT_EQ(placement.records.at("dedup:e-5"), "processing:run-1");
  placement.fail_settle_at.reset();
  auto second = resume(saved, 12, 4, placement, sink);
  EXPECT_TRUE(second.complete);
  EXPECT_EQ(second.replay->run->found_in_sink, static_cast<std::int64_t>(published) - 4)
      << "everything published after the checkpoint's position is settled without publishing again";
  expect_each_id_once(sink, 12);
  EXPECT_EQ(placement.records.at("dedup:e-5"), "done");
}

// Three runs over two partitions, as a kill loop meets them. Run 1 published e-1 and e-3 (partition
// 1) after its checkpoint and died. Run 2 resumes, finds them in the sink, settles partition 0 and
// dies before it reaches partition 1: its checkpoint must not move the read-back position past e-1
// and e-3, whose events it does not cover, or run 3 would publish them a second time.
TEST(ReplayPipeline, AResumedRunKeepsReadingBackWhatItFoundInTheSinkUntilItsEventsAreCheckpointed) {
  FakePlacement placement;
  FakeSink sink;
  std::vector<OwnedEvent> by_partition; // partition 0's events first, then partition 1's
  for (int p = 0; p < 2; ++p) {
    for (int i = p; i < 8; i += 2) {
      by_partition.push_back(with_header_id(p, i / 2, 1000 + i, "e-" + std::to_string(i), "{}"));
    }
  }
  sink.received = {by_partition[4], by_partition[5]}; // run 1's e-1 and e-3
  std::optional<core::Checkpoint> saved = core::Checkpoint{};
  saved->run_id = "run-1";
  saved->sink = "file:fake";
  saved->sink_position = "0";

  FakeEventSource second(by_partition, 4);
  second.fail_after_batches = 1; // partition 0 only, then the run dies
  auto killed = request(true, &saved);
  killed.batch_size = 4;
  killed.checkpoint = saved;
  auto report = run_replay(killed, second, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_FALSE(report.complete);
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->next_offset("orders", 0), 4) << "partition 0 settled";
  EXPECT_FALSE(saved->next_offset("orders", 1)) << "partition 1 not reached";
  EXPECT_EQ(saved->sink_position, "0") << "e-1 and e-3 lie after it, their events not checkpointed";

  auto third = resume(saved, 8, 4, placement, sink);
  EXPECT_TRUE(third.complete) << third.error.value_or("");
  expect_each_id_once(sink, 8);
}

// The same rule where the checkpoint is held at a failed delivery: a resumed run that found e-4 in the
// sink settles it, but e-0 before it failed, so its checkpoint stays at e-0 and covers neither e-4 nor
// what it published after: the read-back position must not move past them. (The placement forgets its
// records between the runs, as --no-dedup has none: only the read-back keeps each id once.)
TEST(ReplayPipeline, AFoundIdBehindAHeldCheckpointKeepsTheReadBackPosition) {
  FakePlacement placement;
  FakeSink sink;
  auto log = events(6, 1);  // e-0 … e-5 in one partition
  sink.received = {log[4]}; // an interrupted run's e-4, after its checkpoint
  std::optional<core::Checkpoint> saved = core::Checkpoint{};
  saved->run_id = "run-1";
  saved->sink = "file:fake";
  saved->sink_position = "0";
  sink.fail_ids = {"e-0"};
  FakeEventSource second(log, 6);
  auto resumed = request(true, &saved);
  resumed.batch_size = 6;
  resumed.checkpoint = saved;
  run_replay(resumed, second, placement, &sink, core::SourceInfo{}, 0);
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->next_offset("orders", 0), 0) << "held at e-0, whose delivery failed";
  EXPECT_EQ(saved->sink_position, "0");

  sink.fail_ids.clear();
  placement.records.clear();
  FakeEventSource third(log, 6);
  auto again = request(true, &saved);
  again.checkpoint = saved;
  auto report = run_replay(again, third, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_TRUE(report.complete) << report.error.value_or("");
  expect_each_id_once(sink, 6);
}

TEST(ReplayPipeline, OthersClaimsArePassedOverAndReported) {
  FakePlacement placement;
  FakeSink sink;
  placement.records["dedup:e-3"] = "processing:someone-else";
  FakeEventSource source(events(5), 5);
  auto report = run_replay(request(true), source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(summary(report, "skipped_claimed"), 1);
  EXPECT_EQ(summary(report, "replayed"), 4);
  bool found = false;
  for (const auto& f : report.findings) {
    found |= f.id == "replay-skipped-claimed" && f.count == 1;
  }
  EXPECT_TRUE(found);
}

} // namespace
} // namespace dedupctl::commands

namespace dedupctl::commands {
namespace {

TEST(ReplayPipeline, EachChunkOfBatchSizeEventsIsSettledAndCheckpointedOnItsOwn) {
  FakePlacement placement;
  FakeSink sink;
  std::vector<core::Checkpoint> saved;
  FakeEventSource source(events(10), 10); // one source batch
  auto r = request(true);
  r.batch_size = 4;
  journal_of(r).keep_checkpoints = true;
  auto report = run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
  saved = journal_of(r).checkpoints;
  EXPECT_EQ(summary(report, "replayed"), 10);
  ASSERT_EQ(saved.size(), 4u);
  EXPECT_TRUE(saved[0].partitions.empty()) << "a fresh run saves its id before it claims anything";
  EXPECT_EQ(saved[0].run_id, "run-1");
  EXPECT_EQ(saved[0].sink_position, "0");
  saved.erase(saved.begin());
  // Events 0..3 are offsets 0,0,1,1 of partitions 0 and 1: the first checkpoint says 2 and 2.
  EXPECT_EQ(saved[0].next_offset("orders", 0), 2);
  EXPECT_EQ(saved[0].next_offset("orders", 1), 2);
  EXPECT_EQ(saved[0].sink_position, "4");
  EXPECT_EQ(saved[2].next_offset("orders", 0), 5);
  EXPECT_EQ(saved[2].sink_position, "10");
}

} // namespace
} // namespace dedupctl::commands

namespace dedupctl::commands {
namespace {

// e-0 … e-3 in one partition, then e-1 again, in chunks of two: the second e-1 comes while the
// chunk with the first may still be in flight.
reports::Report replay_with_e1_again_in_a_later_chunk(FakePlacement& placement, FakeSink& sink) {
  auto log = events(4, 1);
  log.push_back(with_header_id(0, 4, 2000, "e-1", "{}"));
  FakeEventSource source(log, 5);
  auto r = request(true);
  r.batch_size = 2;
  return run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
}

// Chunks are claimed while earlier ones still wait for their deliveries: a key an unsettled chunk
// holds is a duplicate for the later chunk, not this run's own claim to publish again.
TEST(ReplayPipeline, AKeyStillInFlightInAnEarlierChunkIsNotPublishedAgain) {
  FakePlacement placement;
  FakeSink sink;
  auto report = replay_with_e1_again_in_a_later_chunk(placement, sink);
  EXPECT_EQ(summary(report, "replayed"), 4);
  EXPECT_EQ(summary(report, "skipped_duplicate"), 1);
  EXPECT_EQ(sink.ids().count("e-1"), 1u);
  EXPECT_GT(sink.polls, 0);
  EXPECT_EQ(placement.records.at("dedup:e-1"), "done");
}

} // namespace
} // namespace dedupctl::commands

namespace dedupctl::commands {
namespace {

// The run's index of keys in flight is built again once it holds 64k keys: the chunks still in
// flight stay in it. Each chunk's first event repeats the last id of the chunk two before, which is
// still in flight (the fake sink reports deliveries only to a caller that waits), also across the
// rebuild: every repeat is a duplicate, and every id is published once.
TEST(ReplayPipeline, KeysInFlightAreStillFoundAfterTheIndexIsBuiltAgain) {
  constexpr int k_chunk = 1000;
  constexpr int k_chunks = 80;
  std::vector<OwnedEvent> log;
  int offset = 0;
  for (int c = 0; c < k_chunks; ++c) {
    for (int j = 0; j < k_chunk; ++j) {
      int id = c >= 2 && j == 0 ? (c - 2) * k_chunk + k_chunk - 1 : c * k_chunk + j;
      log.push_back(with_header_id(0, offset++, 1000, "e-" + std::to_string(id), "{}"));
    }
  }
  FakePlacement placement;
  FakeSink sink;
  FakeEventSource source(log, k_chunk);
  auto r = request(true);
  r.batch_size = k_chunk;
  auto report = run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(summary(report, "skipped_duplicate"), k_chunks - 2);
  EXPECT_EQ(summary(report, "replayed"), k_chunks * k_chunk - (k_chunks - 2));
  std::map<std::string, int> published;
  for (const auto& e : sink.received) {
    ++published[*e.headers.front().second];
  }
  for (const auto& [id, times] : published) {
    ASSERT_EQ(times, 1) << id << " published again";
  }
}

// A placement that holds one batch in flight at a time.
class OneInFlight final : public core::ReplayPlacement {
public:
  FakePlacement inner;
  std::string kind() const override { return "one"; }
  std::size_t max_in_flight() const override { return 1; }
  void plan(const std::vector<std::string>& keys, std::vector<core::Claim>& out) override { inner.plan(keys, out); }
  void claim(const std::vector<std::string>& keys, const std::string& run, std::vector<core::Claim>& out) override {
    inner.claim(keys, run, out);
  }
  void settle(const std::vector<std::string>& keys, const std::vector<core::Claim>& claims,
              const std::vector<bool>& delivered) override {
    inner.settle(keys, claims, delivered);
  }
};

// A key whose earlier chunk has finished is asked again, not taken for one in flight: here its first
// delivery failed and was released, so its later event is claimed and published.
TEST(ReplayPipeline, AKeyWhoseEarlierChunkFinishedIsClaimedAgain) {
  OneInFlight placement;
  FakeSink sink;
  sink.fail_ids = {"e-1"};
  auto log = events(4, 1);
  log.push_back(with_header_id(0, 4, 2000, "e-1", "{}"));
  FakeEventSource source(log, 5);
  auto r = request(true);
  r.batch_size = 2;
  journal_of(r).on_decide = [&](const core::DecisionRecord& d) {
    if (d.offset == 3) {
      sink.fail_ids.clear(); // e-1's second event, at offset 4, is delivered
    }
  };
  auto report = run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(placement.inner.claims, 5) << "e-1 asked twice";
  EXPECT_EQ(summary(report, "failed"), 1);
  EXPECT_EQ(summary(report, "replayed"), 4);
  EXPECT_EQ(sink.ids().count("e-1"), 1u);
  EXPECT_EQ(placement.inner.records.at("dedup:e-1"), "done");
}

// SIGINT while the next chunk is being claimed: the chunks in flight are delivered and settled, the
// one being built is dropped, and the rerun publishes the rest, each event once.
TEST(ReplayPipeline, AnInterruptSettlesWhatIsInFlightAndDropsTheChunkBeingBuilt) {
  FakePlacement placement;
  FakeSink sink;
  std::optional<core::Checkpoint> saved;
  placement.interrupt_claim_at = 2;
  FakeEventSource first(events(10), 10);
  auto r = request(true, &saved);
  r.batch_size = 2;
  auto report = run_replay(r, first, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 130);
  EXPECT_EQ(summary(report, "replayed"), 4) << "the two chunks in flight were settled";
  for (const auto& [key, value] : placement.records) {
    EXPECT_EQ(value, "done") << key << " left in progress";
  }
  ASSERT_TRUE(saved);
  placement.interrupt_claim_at.reset();
  auto second = resume(saved, 10, 10, placement, sink);
  EXPECT_EQ(summary(second, "replayed"), 6);
  EXPECT_EQ(second.replay->run->found_in_sink, 0);
  expect_each_id_once(sink, 10);
}

} // namespace
} // namespace dedupctl::commands

namespace dedupctl::commands {
namespace {

// The placement works on a thread of its own: while it claims one batch, the next is read.
class SlowFirstClaim final : public core::ReplayPlacement {
public:
  explicit SlowFirstClaim(const FakeEventSource& source) : m_source(source) {}
  FakePlacement inner;
  std::atomic<bool> saw_next_batch{false};
  std::atomic<int> calls{0};

  std::string kind() const override { return "slow"; }
  void plan(const std::vector<std::string>& keys, std::vector<core::Claim>& out) override { inner.plan(keys, out); }
  void claim(const std::vector<std::string>& keys, const std::string& run, std::vector<core::Claim>& out) override {
    if (calls++ == 0) {
      auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (std::chrono::steady_clock::now() < give_up && !saw_next_batch) {
        saw_next_batch = m_source.batches_served >= 2;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    inner.claim(keys, run, out);
  }
  void settle(const std::vector<std::string>& keys, const std::vector<core::Claim>& claims,
              const std::vector<bool>& delivered) override {
    inner.settle(keys, claims, delivered);
  }

private:
  const FakeEventSource& m_source;
};

TEST(ReplayPipeline, TheNextBatchIsReadWhileThePlacementStillClaimsThePrevious) {
  FakeSink sink;
  FakeEventSource source(events(9), 3);
  SlowFirstClaim placement(source);
  auto report = run_replay(request(true), source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_TRUE(placement.saw_next_batch) << "the first claim held up the reading of the next batch";
  EXPECT_EQ(summary(report, "replayed"), 9);
  EXPECT_EQ(sink.ids().size(), 9u);
}

// A placement that settles apart from its claims (a connection for each): the first batch's
// settle is not queued behind the later batches' claims. Its second claim waits until the first
// settle has begun, which on one lane, behind it, never comes.
class SettlesApart final : public core::ReplayPlacement {
public:
  explicit SettlesApart(const FakeEventSource& source) : m_source(source) {}
  FakePlacement inner; // behind m_mutex: the two lanes call at once
  std::atomic<bool> settle_began{false};
  std::atomic<bool> second_claim_saw_the_settle{false};

  std::string kind() const override { return "apart"; }
  bool settles_apart() const override { return true; }
  void plan(const std::vector<std::string>& keys, std::vector<core::Claim>& out) override {
    std::lock_guard lock(m_mutex);
    inner.plan(keys, out);
  }
  void claim(const std::vector<std::string>& keys, const std::string& run, std::vector<core::Claim>& out) override {
    int call = m_claims++;
    // The first claim is still running when every batch has been read: the second and third are
    // queued before the first settle can be.
    wait_for([&] { return call != 0 || m_source.batches_served >= 3; });
    if (call == 1) {
      second_claim_saw_the_settle = wait_for([&] { return settle_began.load(); });
    }
    std::lock_guard lock(m_mutex);
    inner.claim(keys, run, out);
  }
  void settle(const std::vector<std::string>& keys, const std::vector<core::Claim>& claims,
              const std::vector<bool>& delivered) override {
    settle_began = true;
    std::lock_guard lock(m_mutex);
    inner.settle(keys, claims, delivered);
  }

private:
  template <typename Done> static bool wait_for(Done done) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (std::chrono::steady_clock::now() > give_up) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  const FakeEventSource& m_source;
  std::atomic<int> m_claims{0};
  std::mutex m_mutex;
};

TEST(ReplayPipeline, AFrontBatchSettlesWhileLaterBatchesAreStillClaimed) {
  FakeSink sink;
  FakeEventSource source(events(9), 3);
  SettlesApart placement(source);
  std::optional<core::Checkpoint> saved;
  auto report = run_replay(request(true, &saved), source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_TRUE(placement.second_claim_saw_the_settle) << "the first settle waited behind the later claims";
  EXPECT_EQ(summary(report, "replayed"), 9);
  expect_each_id_once(sink, 9);
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(placement.inner.records["dedup:e-" + std::to_string(i)], "done") << i;
  }
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->next_offset("orders", 0), 5);
  EXPECT_EQ(saved->next_offset("orders", 1), 4);
}

// A key another run holds, again in a later chunk while the first is still in flight: the first is
// passed over as claimed, the later one as a duplicate of it, as within one chunk; the store is
// asked once.
TEST(ReplayPipeline, AKeyAnEarlierChunkInFlightHasIsItsDuplicateWhateverItsClaimFound) {
  FakePlacement placement;
  FakeSink sink;
  placement.records["dedup:e-1"] = "processing:someone-else";
  auto report = replay_with_e1_again_in_a_later_chunk(placement, sink);
  EXPECT_EQ(summary(report, "replayed"), 3);
  EXPECT_EQ(summary(report, "skipped_claimed"), 1);
  EXPECT_EQ(summary(report, "skipped_duplicate"), 1);
  EXPECT_EQ(placement.claims, 4) << "e-1 asked once";
  EXPECT_EQ(sink.ids().count("e-1"), 0u);
}

} // namespace
} // namespace dedupctl::commands

namespace dedupctl::commands {
namespace {

// An id the placement cannot hold is never published nor settled, in a plan as in a run; it is
// counted, logged with its reason, and reported with an example; the rest of its chunk goes on.
TEST(ReplayPipeline, AnIdThePlacementCannotHoldIsNotPublishedAndIsReported) {
  for (bool execute : {false, true}) {
    FakePlacement placement;
    placement.unfit = "e-3";
    FakeSink sink;
    FakeEventSource source(events(5), 5);
    auto r = request(execute);
    auto report = run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
    const auto& decisions = journal_of(r).decisions;
    EXPECT_EQ(summary(report, "id_unfit"), 1) << execute;
    EXPECT_EQ(summary(report, execute ? "replayed" : "would_replay"), 4);
    EXPECT_EQ(sink.ids().count("e-3"), 0u);
    EXPECT_EQ(placement.records.count("dedup:e-3"), 0u) << "nothing claimed or settled for it";
    ASSERT_EQ(decisions.size(), 5u);
    EXPECT_NE(
        decisions[3].find(R"x("decision":"id-unfit","reason":"the placement cannot hold this id (no key with e-3)")x"),
        std::string::npos)
        << decisions[3];
    const core::Finding* finding = nullptr;
    for (const auto& f : report.findings) {
      finding = f.id == "replay-id-unfit" ? &f : finding;
    }
    ASSERT_NE(finding, nullptr);
    EXPECT_EQ(finding->severity, core::Severity::Warning);
    EXPECT_EQ(finding->count, 1);
    ASSERT_EQ(finding->examples.size(), 1u);
    EXPECT_EQ(finding->examples[0].event_id, "e-3");
  }
}

} // namespace
} // namespace dedupctl::commands

namespace dedupctl::commands {
namespace {

// A placement call that fails stops the calls queued behind it (they rethrow its failure, so whichever
// the run reads first, the report gives that cause), and their batches stay claimed for the rerun.
TEST(ReplayPipeline, AfterAPlacementFailureNothingElseRunsAndTheReportGivesTheFirstCause) {
  FakePlacement placement;
  FakeSink sink;
  placement.fail_settle_at = 0;
  FakeEventSource source(events(12), 12);
  auto r = request(true);
  r.batch_size = 2;
  auto report = run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_EQ(report.error, "cannot reach the fake store");
  EXPECT_EQ(placement.settles, 1) << "nothing is settled after the failure";
  for (const auto& [key, value] : placement.records) {
    EXPECT_EQ(value, "processing:run-1") << key << ": left for the rerun to find as this run's claim";
  }
}

} // namespace
} // namespace dedupctl::commands

namespace dedupctl::commands {
namespace {

// --max-rate paces what reaches the sink: asked before each publish (not once a batch, which would
// let a whole batch through at once), with the count that publish makes; skipped events cost nothing.
TEST(ReplayPipeline, PacingIsAskedBeforeEveryPublishNotOnceABatch) {
  FakePlacement placement;
  placement.records["dedup:e-2"] = "done";
  FakeSink sink;
  FakeEventSource source(events(10), 10);
  auto r = request(true);
  std::vector<std::pair<std::int64_t, int>> paced; // (count asked for, publishes before it)
  r.pace = [&](std::int64_t count) { paced.emplace_back(count, sink.published); };
  auto report = run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(summary(report, "replayed"), 9);
  ASSERT_EQ(paced.size(), 9u);
  for (std::size_t i = 0; i < paced.size(); ++i) {
    EXPECT_EQ(paced[i].first, static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(paced[i].second, static_cast<int>(i)) << "asked before the publish it paces";
  }
}

// The journal gets every decision, flushed before each checkpoint; a plan keeps no checkpoint, and
// neither does a run without one.
TEST(ReplayPipeline, TheJournalGetsEveryDecisionFlushedBeforeEachCheckpoint) {
  FakePlacement placement;
  FakeSink sink;
  FakeEventSource source(events(10), 10);
  std::optional<core::Checkpoint> saved;
  auto r = request(true, &saved);
  r.batch_size = 4;
  FakeJournal& journal = journal_of(r);
  run_replay(r, source, placement, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(journal.decisions.size(), 10u);
  EXPECT_EQ(journal.checkpoints.size(), 4u) << "one before the first claim, one a chunk of 4, 4 and 2";
  EXPECT_EQ(journal.flushes, 3) << "the decisions of each chunk are flushed before its checkpoint";
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->next_offset("orders", 0), 5);

  FakeEventSource again(events(10), 10);
  auto plan = request(false);
  run_replay(plan, again, placement, nullptr, core::SourceInfo{}, 0);
  EXPECT_EQ(journal_of(plan).decisions.size(), 10u);
  EXPECT_TRUE(journal_of(plan).checkpoints.empty());
}

} // namespace
} // namespace dedupctl::commands
