#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;

TEST(Duration, ShortForms) {
  EXPECT_EQ(parse_duration("90s"), 90'000);
  EXPECT_EQ(parse_duration("15m"), 15 * 60'000);
  EXPECT_EQ(parse_duration("6h"), 6 * 3'600'000);
  EXPECT_EQ(parse_duration("7d"), 7 * 86'400'000LL);
  EXPECT_EQ(parse_duration("1d12h"), 36 * 3'600'000LL);
  EXPECT_EQ(parse_duration("250ms"), 250);
  EXPECT_EQ(parse_duration("1m30s"), 90'000);
  EXPECT_EQ(parse_duration("2w"), 14 * 86'400'000LL);
  EXPECT_EQ(parse_duration("0s"), 0);
}

TEST(Duration, Iso8601) {
  EXPECT_EQ(parse_duration("PT6H"), 6 * 3'600'000);
  EXPECT_EQ(parse_duration("P7D"), 7 * 86'400'000LL);
  EXPECT_EQ(parse_duration("P1DT2H30M"), 86'400'000LL + 2 * 3'600'000 + 30 * 60'000);
  EXPECT_EQ(parse_duration("PT1.5S"), 1500);
  EXPECT_EQ(parse_duration("P1W"), 7 * 86'400'000LL);
}

TEST(Duration, RejectsWhatIsNotADurationNamingTheFlag) {
  for (const char* bad : {"", "7", "d", "7x", "-5m", "P", "PT", "P1M", "P1Y", "PT5D", "1h-", "99999999999999999999d"}) {
    try {
      parse_duration(bad, "--ttl");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--ttl"), std::string::npos) << e.what();
    }
  }
}

TEST(Time, Rfc3339) {
  EXPECT_EQ(parse_time("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_time("2026-11-20T08:00:00Z"), 1'795'161'600'000LL);
  EXPECT_EQ(parse_time("2026-11-20T09:00:00+01:00"), 1'795'161'600'000LL);
  EXPECT_EQ(parse_time("2026-11-20T03:00:00-05:00"), 1'795'161'600'000LL);
  EXPECT_EQ(parse_time("2026-11-20T08:00:00.250Z"), 1'795'161'600'250LL);
  EXPECT_EQ(parse_time("2026-11-20T08:00:00.25Z"), 1'795'161'600'250LL);
  EXPECT_EQ(parse_time("2026-11-20T08:00:00"), 1'795'161'600'000LL); // zoneless = UTC
  EXPECT_EQ(parse_time("2026-11-20T08:00"), 1'795'161'600'000LL);
  EXPECT_EQ(parse_time("2026-11-20"), 1'795'132'800'000LL);
  EXPECT_EQ(parse_time("1795161600000"), 1'795'161'600'000LL); // epoch ms
  EXPECT_EQ(parse_time("2024-02-29T00:00:00Z"), 1'709'164'800'000LL);
  // PostgreSQL's ISO output: a space, microseconds, and a two- or four-digit offset.
  EXPECT_EQ(parse_time("2026-11-20 08:00:00.250123+00"), 1'795'161'600'250LL);
  EXPECT_EQ(parse_time("2026-11-20 09:00:00+01"), 1'795'161'600'000LL);
  EXPECT_EQ(parse_time("2026-11-20 09:30:00+0130"), 1'795'161'600'000LL);
}

TEST(Time, RejectsBadTimes) {
  for (const char* bad :
       {"", "yesterday", "2026-13-01", "2026-02-30", "2025-02-29", "2026-11-20T25:00:00Z", "2026-11-20T08:00:00+1",
        "2026-11-20T08:00:00+01:0", "2026-11-20X08:00:00Z", "2026-11-20T08:00:00Zjunk"}) {
    EXPECT_THROW(parse_time(bad, "--from"), UsageError) << bad;
  }
}

TEST(Time, FormatsWithMillisecondsInUtc) {
  EXPECT_EQ(format_time(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_time(1'795'161'600'250LL), "2026-11-20T08:00:00.250Z");
  EXPECT_EQ(format_time(1'709'164'799'999LL), "2024-02-28T23:59:59.999Z");
  EXPECT_EQ(format_time(parse_time("2000-03-01T12:34:56.789Z")), "2000-03-01T12:34:56.789Z");
}

TEST(Duration, FormatsTheShortestExactForm) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(7 * 86'400'000LL), "7d");
  EXPECT_EQ(format_duration(36 * 3'600'000LL), "1d12h");
  EXPECT_EQ(format_duration(90'000), "1m30s");
  EXPECT_EQ(format_duration(250), "250ms");
  EXPECT_EQ(format_duration(-3'600'000), "-1h");
}

TEST(Time, CivilFromDaysInvertsDaysFromCivil) {
  for (std::int64_t days : {-719468, -1, 0, 1, 59, 60, 20418, 2932896}) {
    CivilDate date = civil_from_days(days);
    EXPECT_EQ(days_from_civil(date.year, date.month, date.day), days) << days;
  }
  CivilDate day = civil_from_days(20418);
  EXPECT_EQ(day.year, 2025);
  EXPECT_EQ(day.month, 11u);
  EXPECT_EQ(day.day, 26u);
  CivilDate before = civil_from_days(-1);
  EXPECT_EQ(before.year, 1969);
  EXPECT_EQ(before.month, 12u);
  EXPECT_EQ(before.day, 31u);
}
