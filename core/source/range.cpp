#include "core/source/range.hpp"

#include "core/source/offset_spec.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

std::uint64_t canonical_seq(const PartitionPlan& plan, std::int64_t offset) {
  auto relative = static_cast<std::uint64_t>(std::max<std::int64_t>(0, offset - plan.order_base));
  auto block = static_cast<std::uint64_t>(order_block(plan.ranks));
  return (relative / block) * plan.ranks * block + plan.rank * block + relative % block;
}

PartitionPlan plan_without_broker(const OffsetSpec& from, const OffsetSpec& to, std::int64_t now_ms) {
  auto refuse = [](const OffsetSpec& spec, std::string_view flag) {
    throw UsageError(fmt::format("{} '{}' needs a broker to resolve; with --input use earliest, latest, N, "
                                 "@TIME or -DURATION",
                                 flag, spec.text));
  };
  PartitionPlan plan;
  switch (from.kind) {
  case SpecKind::Earliest:
    break;
  case SpecKind::Latest:
    plan.start = k_offset_max;
    break;
  case SpecKind::Absolute:
    plan.start = from.value;
    break;
  case SpecKind::Timestamp:
  case SpecKind::Ago:
    plan.skip_before_ts = spec_timestamp(from, now_ms);
    break;
  default:
    refuse(from, "--from");
  }
  switch (to.kind) {
  case SpecKind::Latest:
    break;
  case SpecKind::Earliest:
    plan.end = 0;
    break;
  case SpecKind::Absolute:
    plan.end = to.value;
    break;
  case SpecKind::Timestamp:
  case SpecKind::Ago:
    plan.stop_at_ts = spec_timestamp(to, now_ms);
    break;
  default:
    refuse(to, "--to");
  }
  return plan;
}

} // namespace dedupctl::core
