// libFuzzer targets for the parsers that read user input: offset/time SPECs, durations, id specs and
// key templates (rendered too), kcat -J lines (and identification over what they yield), the --config
// file, check's TOML declarations, and the snapshot and checkpoint files a run reads back.
// scripts/fuzz builds them with clang into build-fuzz/ and runs each over its corpus
// (tests/fuzz/corpus/TARGET) for a bounded time; scripts/test runs it.
#include "core/check/config_check.hpp"
#include "core/check/declarations.hpp"
#include "core/identity/field_spec.hpp"
#include "core/identity/identify.hpp"
#include "core/identity/key_template.hpp"
#include "core/replay/replay.hpp"
#include "core/source/kcat_line.hpp"
#include "core/source/offset_spec.hpp"
#include "core/store/snapshot_line.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace dedupctl;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
#if defined(DEDUPCTL_FUZZ_SPECS)
  try {
    auto spec = core::parse_offset_spec(text, "--from");
    core::PartitionFacts facts;
    facts.log_start = 10;
    facts.log_end = 100;
    facts.time_lookup = -1;
    core::resolve_offset(spec, core::SpecRole::From, facts, true, 1'000'000);
  } catch (const UsageError&) {
  }
  try {
    core::format_duration(core::parse_duration(text));
  } catch (const UsageError&) {
  }
  try {
    core::format_time(core::parse_time(text));
  } catch (const UsageError&) {
  }
  try {
    core::parse_field_specs(text, "--id");
  } catch (const UsageError&) {
  }
  try {
    auto tmpl = core::KeyTemplate::parse(text);
    std::vector<std::string_view> fields(tmpl.fields().size(), text);
    core::KeyValues values{text, "type", "entity", "topic", 3, 42, text, "consumer", fields.data()};
    std::string key;
    core::render_key(tmpl, values, key);
  } catch (const UsageError&) {
  }
#elif defined(DEDUPCTL_FUZZ_KCAT_LINE)
  static core::KcatLineParser parser;
  static core::Identifier identifier(core::default_identify_options());
  core::EventBatch batch;
  std::string error;
  if (parser.parse(text, batch, error)) {
    parser.seal(batch);
    std::vector<core::Identity> identities;
    identifier.identify(batch, identities);
  }
#elif defined(DEDUPCTL_FUZZ_FILES)
  static const std::map<std::string, std::set<std::string>> known{{"", {"fail-on", "timeout"}}, {"audit", {"ttl"}}};
  core::check_config(text, known);
  try {
    core::parse_declarations(text, "fuzz.toml");
  } catch (const UsageError&) {
  }
  core::SnapshotHeader header;
  core::SnapshotEntry entry;
  std::string error;
  if (core::parse_snapshot_entry(text, entry, error)) {
    core::format_snapshot_entry(entry);
  }
  core::parse_snapshot_header(text, header, error);
  core::Checkpoint checkpoint;
  if (core::parse_checkpoint(text, checkpoint, error)) {
    core::format_checkpoint(checkpoint);
  }
#endif
  return 0;
}
