#pragma once

// Ten planted events on topic "pay" (one partition) for the audit tests, one per coverage state
// once the matching records are written: see each test for the records.

#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace dedupctl::testing {

inline constexpr long long k_minute = 60'000;
inline constexpr long long k_hour = 60 * k_minute;

inline long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline std::string envelope(long long offset, long long ts, const std::string& id, const std::string& type) {
  std::string headers =
      id.empty() ? fmt::format(R"(["type","{}"])", type) : fmt::format(R"(["event_id","{}","type","{}"])", id, type);
  return fmt::format(
             R"({{"topic":"pay","partition":0,"offset":{},"ts":{},"headers":{},"key":"k{}","payload":"{{\"n\":{}}}"}})",
             offset, ts, headers, offset, offset) +
         "\n";
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

// The records of the Redis placement the audit tests use (key dedup:pay:{event_id}, TTL 1h).
inline void plant_records(const RedisServer& redis) {
  ASSERT_EQ(redis.command(fmt::format("SET dedup:pay:e-2 done PX {}", 30 * k_minute)), "+OK\r\n");
  ASSERT_EQ(redis.command("SET dedup:pay:e-3 done"), "+OK\r\n");
  ASSERT_EQ(redis.command(fmt::format("SET dedup:pay:e-4 processing PX {}", k_minute)), "+OK\r\n");
  ASSERT_EQ(redis.command(fmt::format("SET dedup:pay:e-6 done PX {}", 8 * 24 * k_hour)), "+OK\r\n");
  ASSERT_EQ(redis.command(fmt::format("SET dedup:pay:e-8 processing:run-1 PX {}", k_minute)), "+OK\r\n");
  ASSERT_EQ(redis.command("SET unrelated:key x"), "+OK\r\n");
}

// An audit of the planted events at seek 2 for group billing against `store` (TTL 1h, retention 7d).
inline std::vector<std::string> audit_args(const std::string& bootstrap, const std::string& store,
                                    std::vector<std::string> extra = {}, const std::string& format = "json") {
  std::vector<std::string> args{"audit",
                                "-b",
                                bootstrap,
                                "--topic",
                                "pay",
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

} // namespace dedupctl::testing
