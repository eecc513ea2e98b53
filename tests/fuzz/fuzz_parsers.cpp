// libFuzzer targets for the parsers that read user input: offset/time SPECs, durations, id specs,
// kcat -J lines (and identification over what they yield), the --config file and the snapshot and
// checkpoint files a run reads back. Build with clang and
// -DDEDUPCTL_FUZZ=ON; run e.g. build-fuzz/tests/fuzz/fuzz_kcat_line -max_total_time=60.
#include "core/check/config_check.hpp"
#include "core/identity/field_spec.hpp"
#include "core/identity/identify.hpp"
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
