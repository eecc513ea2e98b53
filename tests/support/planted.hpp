#pragma once

// Ten planted events on topic "pay" (one partition) for the audit tests, one per coverage state
// once the matching records are written: see each test for the records.

#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <ranges>
#include <string>
#include <vector>

namespace dedupctl::testing {

inline constexpr long long k_minute = 60'000;
inline constexpr long long k_hour = 60 * k_minute;

inline long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline std::string envelope(long long offset, long long ts, const std::string& id, const std::string& type) {
  OwnedEvent e{.topic = "pay", .offset = offset, .timestamp_ms = ts};
  if (!id.empty()) {
    e.headers.emplace_back("event_id", id);
  }
  e.headers.emplace_back("type", type);
  e.key = fmt::format("k{}", offset);
  e.payload = fmt::format(R"({{"n":{}}})", offset);
  return kcat_line(e);
}

// Ten events, one partition, group "billing" committed at 8; TTL 1h, retention 7d. `now` is the
// audit's now; `edge` is the timestamp of event 1 (missing while within the TTL).
inline std::string planted(long long now, long long edge) {
  return envelope(0, now - 48 * k_hour, "e-0", "PaymentCharged") +   // absent, past TTL: expired
         envelope(1, edge, "e-1", "PaymentCharged") +                // absent, within TTL: missing
         envelope(2, now - 30 * k_minute, "e-2", "PaymentCharged") + // pttl 30m: expiring
         envelope(3, now - 30 * k_minute, "e-3", "PaymentCharged") + // no expiry: covered, no_expiry
         envelope(4, now - 2 * k_hour, "e-4", "PaymentCharged") +    // processing, below committed: orphaned
         envelope(5, now - 10 * k_minute, "", "EmailSent") +         // no id
         envelope(6, now - 10 * k_minute, "e-6", "PaymentCharged") + // pttl 8d: covered
         envelope(7, now - 40 * k_minute, "e-7", "PaymentCharged") + // absent, within TTL: missing
         envelope(8, now - 1 * k_minute, "e-8", "PaymentCharged") +  // processing, at committed: in progress
         envelope(9, now - 1 * k_minute, "e-9", "PaymentCharged");   // absent at/after committed: pending
}

// The planted events on topic "pay" of `broker`, event 1 at the TTL's edge 30 minutes back, and
// group billing committed at 8.
inline void plant_pay(MockBroker& broker, long long now) {
  broker.seed("pay", planted(now, now - 30 * k_minute));
  broker.commit("billing", "pay", "0=8");
}

// The records of the Redis placement the audit tests use (key dedup:pay:{event_id}, TTL 1h), as
// the commands that write them.
inline std::vector<std::string> planted_record_commands() {
  return {fmt::format("SET dedup:pay:e-2 done PX {}", 30 * k_minute),
          "SET dedup:pay:e-3 done",
          fmt::format("SET dedup:pay:e-4 processing PX {}", k_minute),
          fmt::format("SET dedup:pay:e-6 done PX {}", 8 * 24 * k_hour),
          fmt::format("SET dedup:pay:e-8 processing:run-1 PX {}", k_minute),
          "SET unrelated:key x"};
}

// docs/version-guards.md's projection in Redis over examples/versions.ndjson, restored from a backup:
// every order at its latest version but o-1017 (at 1) and o-1018 (not there yet), as the commands
// that write it.
inline std::vector<std::string> guide_projection_commands() {
  std::vector<std::string> out;
  for (int i = 1000; i <= 1019; ++i) {
    out.push_back(fmt::format("SET order:o-{} {}", i, i == 1017 ? 1 : 3));
  }
  out.erase(out.begin() + 18); // o-1018
  out.insert(out.end(), {"SET order:o-1042 3", "SET order:o-1043 2"});
  return out;
}

template <class Redis> // RedisServer, TlsRedisServer
void plant_guide_projection(const Redis& redis) {
  for (const auto& command : guide_projection_commands()) {
    ASSERT_EQ(redis.command(command), "+OK\r\n") << command;
  }
}

inline void plant_records(const RedisServer& redis) {
  for (const auto& command : planted_record_commands()) {
    ASSERT_EQ(redis.command(command), "+OK\r\n") << command;
  }
}

// The same records in a Redis Cluster, each written by redis-cli -c (which follows MOVED).
inline void plant_records(const RedisCluster& cluster) {
  for (const auto& command : planted_record_commands()) {
    std::vector<std::string> args;
    for (auto word : std::views::split(command, ' ')) {
      args.emplace_back(word.begin(), word.end());
    }
    auto result = cluster.cli(args);
    ASSERT_EQ(result.out, "OK\n") << command << result.err;
  }
}

// An audit of the planted events in `topic` at seek 2 for group billing against `store` (TTL 1h,
// retention 7d).
inline std::vector<std::string> audit_args(const std::string& bootstrap, const std::string& store,
                                           std::vector<std::string> extra = {}, const std::string& format = "json",
                                           const std::string& topic = "pay") {
  std::vector<std::string> args{"audit",
                                "-b",
                                bootstrap,
                                "--topic",
                                topic,
                                "--group",
                                "billing",
                                "--seek",
                                "2",
                                "--store",
                                store,
                                "--key-template",
                                "dedup:pay:{event_id}",
                                "--ttl",
                                "1h",
                                "--retention",
                                "7d",
                                "--side-effects",
                                "EmailSent=idempotent",
                                "-o",
                                format};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// A watch of the planted events with audit_args' placement (the binary first): the audit's
// arguments as a watch on 127.0.0.1:port, a tick every 250 ms, a refresh every 3 s. `extra` flags
// replace those of the same name ("--seek", "" drops it).
inline std::vector<std::string> watch_args(const std::string& bootstrap, const std::string& topic,
                                           const std::string& store, int port,
                                           const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = audit_args(bootstrap, store, {}, "json", topic);
  args.resize(args.size() - 2); // -o json
  args.front() = "watch";
  args.insert(args.begin(), DEDUPCTL_BINARY);
  args.insert(args.end(), {"--listen", fmt::format("127.0.0.1:{}", port), "--interval", "250ms", "--refresh", "3s"});
  for (std::size_t i = 0; i + 1 < extra.size(); i += 2) {
    auto at = std::find(args.begin(), args.end(), extra[i]);
    if (at != args.end()) {
      at = args.erase(at, at + 2);
    }
    if (!extra[i + 1].empty()) {
      args.insert(at, {extra[i], extra[i + 1]});
    }
  }
  return args;
}

// Runs `args` (the binary first) as a watch whose stderr goes to `err`, with `env` added.
inline std::unique_ptr<Process> spawn_watch(const std::vector<std::string>& args, const std::string& err,
                                            std::map<std::string, std::string> env = {}) {
  SpawnOptions options;
  options.stderr_file = err;
  options.silence = true;
  options.env = std::move(env);
  return std::make_unique<Process>(args, options);
}

inline std::map<std::string, long long> finding_counts(const nlohmann::json& doc) {
  std::map<std::string, long long> out;
  for (const auto& f : doc.at("findings")) {
    out[f.at("id")] = f.at("count");
  }
  return out;
}

// What the audit of the planted events says, on any broker: every state and finding counted exactly.
inline void expect_planted(const nlohmann::json& doc) {
  const auto& s = doc.at("summary");
  EXPECT_EQ(s.at("events"), 10);
  EXPECT_EQ(s.at("expired"), 1);
  EXPECT_EQ(s.at("missing"), 2);
  EXPECT_EQ(s.at("expiring"), 1);
  EXPECT_EQ(s.at("covered"), 2);
  EXPECT_EQ(s.at("no_expiry"), 1);
  EXPECT_EQ(s.at("orphaned"), 1);
  EXPECT_EQ(s.at("in_progress"), 1);
  EXPECT_EQ(s.at("pending"), 1);
  EXPECT_EQ(s.at("no_id"), 1);
  long long sum = 0;
  for (const char* state :
       {"no_id", "covered", "expiring", "expired", "missing", "pending", "in_progress", "orphaned"}) {
    sum += s.at(state).get<long long>();
  }
  EXPECT_EQ(sum, 10) << "every event in exactly one state";
  EXPECT_EQ(finding_counts(doc), (std::map<std::string, long long>{{"ttl-shorter-than-retention", 1},
                                                                   {"ttl-gap", 1},
                                                                   {"missing-record", 2},
                                                                   {"expiring-before-retention", 1},
                                                                   {"orphaned-claim", 1},
                                                                   {"no-expiry", 1},
                                                                   {"missing-event-id", 1},
                                                                   {"replay-risk", 2}}));
  const auto& replay = doc.at("replay");
  EXPECT_EQ(replay.at("window"), "[seek, committed)");
  EXPECT_EQ(replay.at("events"), 6); // offsets 2..7
  EXPECT_EQ(replay.at("would_skip"), 3);
  EXPECT_EQ(replay.at("would_reapply"), 2);
  EXPECT_EQ(replay.at("would_skip_unfinished"), 1);
  EXPECT_EQ(replay.at("by_type").at("PaymentCharged").at("would_reapply"), 1);
  EXPECT_EQ(replay.at("by_type").at("PaymentCharged").at("side_effects"), "external");
  EXPECT_EQ(replay.at("by_type").at("EmailSent").at("side_effects"), "idempotent");
  ASSERT_EQ(replay.at("safe_from").size(), 1u);
  EXPECT_EQ(replay.at("safe_from")[0].at("offset"), 8);
  EXPECT_EQ(doc.at("placement").at("ttl_ms"), k_hour);
  EXPECT_EQ(doc.at("placement").at("retention_ms"), 7 * 24 * k_hour);
  EXPECT_EQ(doc.at("source").at("partitions")[0].at("committed"), 8);
  EXPECT_EQ(doc.at("source").at("partitions")[0].at("seek"), 2);
  EXPECT_EQ(doc.at("exit_code"), 1);
}

// audit_args over a kcat -J dump of the planted events and a committed-offsets file instead of a
// broker.
inline std::vector<std::string> audit_args_on_dump(const std::string& dump, const std::string& committed,
                                                   const std::string& store, std::vector<std::string> extra = {}) {
  auto args = audit_args("", store, std::move(extra));
  args.erase(args.begin() + 1, args.begin() + 5); // -b B --topic T
  args.insert(args.end(), {"--input", dump, "--committed", committed});
  return args;
}

} // namespace dedupctl::testing
