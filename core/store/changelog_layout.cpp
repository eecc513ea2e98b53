// The Kafka Streams layouts: a state store the application's dedup processor keeps, read from its
// changelog topic (kstreams://APPLICATION_ID/STORE). Their options say how the processor keys the store
// and looks it up, as its code does (docs/kafka-streams.md).
#include "core/store/layout.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

namespace {

constexpr std::string_view k_window_options =
    "key-serde=string|bytes|long|uuid|json, lookup-window=DURATION, time=record|stream, state=restored|kept, "
    "changelog-topic=TOPIC";
constexpr std::string_view k_kv_options = "key-serde=string|bytes|long|uuid|json, changelog-topic=TOPIC";

} // namespace

std::vector<RecordLayout> changelog_layouts() {
  RecordLayout window;
  window.name = "kstreams-window";
  window.home = LayoutHome::Changelog;
  window.library = "a Kafka Streams WindowStore the dedup processor fetches around each event (the Confluent "
                   "tutorial, kafka-streams-examples, kstreamplify), read from its changelog";
  RecordLayout kv = window;
  kv.name = "kstreams-kv";
  kv.library = "a Kafka Streams KeyValueStore of seen ids (get, then put), read from its compacted changelog";
  kv.changelog.key_value = true;
  kv.never_expires = true;
  return {window, kv};
}

void apply_changelog_option(RecordLayout& layout, std::string_view option) {
  auto eq = option.find('=');
  std::string_view name = eq == std::string_view::npos ? std::string_view() : option.substr(0, eq);
  std::string_view value = eq == std::string_view::npos ? std::string_view() : option.substr(eq + 1);
  ChangelogSpec& spec = layout.changelog;
  bool window = !spec.key_value;
  if (name == "key-serde") {
    spec.serde = parse_key_serde(value);
  } else if (name == "changelog-topic" && !value.empty()) {
    spec.changelog_topic = std::string(value);
  } else if (window && name == "lookup-window") {
    std::int64_t w = parse_duration(value, "--layout-option lookup-window");
    if (w <= 0) {
      throw UsageError(fmt::format("--layout-option {}: the lookup window is a duration above 0 (the processor's "
                                   "W: it fetches [t - W/2, t + W/2])",
                                   option));
    }
    spec.lookup_window_ms = w;
  } else if (window && name == "time" && (value == "record" || value == "stream")) {
    spec.stream_time = value == "stream";
  } else if (window && name == "state" && (value == "restored" || value == "kept")) {
    spec.kept_state = value == "kept";
  } else {
    throw UsageError(fmt::format("--layout-option {}: --layout {} takes {}", option, layout.name,
                                 window ? k_window_options : k_kv_options));
  }
}

void check_changelog_options(const RecordLayout& layout) {
  if (!layout.changelog.key_value && !layout.changelog.lookup_window_ms) {
    throw UsageError(fmt::format("--layout {} needs --layout-option lookup-window=DURATION: the processor's W, which "
                                 "fetches [t - W/2, t + W/2] around each event (the guides' maintainDuration, 10m in "
                                 "kafka-streams-examples)",
                                 layout.name));
  }
}

} // namespace dedupctl::core
