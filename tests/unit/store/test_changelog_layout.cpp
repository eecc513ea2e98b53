// The Kafka Streams layouts' options: how the dedup processor keys its store, how far around an event it
// looks and by which time, and which reading of the store the verdicts take.
#include "core/store/layout.hpp"
#include "core/util/errors.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace dedupctl::core;

namespace {

std::string refusal(RecordLayout layout, std::string_view option) {
  try {
    apply_layout_option(layout, option);
  } catch (const dedupctl::UsageError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(ChangelogLayout, AWindowStoresOptionsSayHowItsProcessorLooksUp) {
  RecordLayout layout = find_layout("kstreams-window");
  EXPECT_FALSE(layout.changelog.key_value);
  EXPECT_EQ(layout.changelog.serde, KeySerde::String);
  EXPECT_FALSE(layout.changelog.stream_time);
  EXPECT_FALSE(layout.changelog.kept_state);
  for (auto option : {"key-serde=uuid", "lookup-window=10m", "time=stream", "state=kept", "changelog-topic=x-y"}) {
    apply_layout_option(layout, option);
  }
  EXPECT_EQ(layout.changelog.serde, KeySerde::Uuid);
  EXPECT_EQ(layout.changelog.lookup_window_ms, 600'000);
  EXPECT_TRUE(layout.changelog.stream_time);
  EXPECT_TRUE(layout.changelog.kept_state);
  EXPECT_EQ(layout.changelog.changelog_topic, "x-y");
  EXPECT_NO_THROW(check_changelog_options(layout));
}

TEST(ChangelogLayout, AWindowStoreNeedsItsLookupWindowAndBadOptionsAreNamed) {
  RecordLayout layout = find_layout("kstreams-window");
  try {
    check_changelog_options(layout);
    FAIL() << "no throw";
  } catch (const dedupctl::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("needs --layout-option lookup-window=DURATION"), std::string::npos)
        << e.what();
  }
  EXPECT_NE(refusal(layout, "lookup-window=0s").find("a duration above 0"), std::string::npos);
  EXPECT_NE(refusal(layout, "lookup-window=soon").find("lookup-window"), std::string::npos);
  EXPECT_NE(refusal(layout, "time=wall")
                .find("--layout-option time=wall: --layout kstreams-window takes "
                      "key-serde=string|bytes|long|uuid|json, lookup-window=DURATION"),
            std::string::npos);
  EXPECT_NE(refusal(layout, "state=warm").find("state=restored|kept"), std::string::npos);
  EXPECT_NE(refusal(layout, "key-serde=avro").find("key-serde=avro: not a key serde"), std::string::npos);
  EXPECT_NE(refusal(layout, "changelog-topic=").find("changelog-topic=TOPIC"), std::string::npos);
}

TEST(ChangelogLayout, AKeyValueStoreHasNoWindowTimeOrSegments) {
  RecordLayout layout = find_layout("kstreams-kv");
  EXPECT_TRUE(layout.changelog.key_value);
  EXPECT_TRUE(layout.never_expires);
  EXPECT_NO_THROW(check_changelog_options(layout));
  apply_layout_option(layout, "key-serde=long");
  EXPECT_EQ(layout.changelog.serde, KeySerde::Long);
  for (auto option : {"lookup-window=10m", "time=stream", "state=kept"}) {
    EXPECT_NE(refusal(layout, option)
                  .find("--layout kstreams-kv takes key-serde=string|bytes|long|uuid|json, "
                        "changelog-topic=TOPIC"),
              std::string::npos)
        << option;
  }
}
