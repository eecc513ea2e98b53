#include "core/source/offset_spec.hpp"

#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace dedupctl::core {

namespace {

std::optional<std::int64_t> parse_count(std::string_view text) {
  std::int64_t value = 0;
  if (!parse_whole(text, value) || value < 0) {
    return std::nullopt;
  }
  return value;
}

} // namespace

OffsetSpec parse_offset_spec(std::string_view text, std::string_view what) {
  OffsetSpec spec;
  spec.text = std::string(text);
  auto bad = [&]() -> OffsetSpec {
    throw UsageError(fmt::format("invalid {} '{}': expected earliest, latest, committed, N, -N, @TIME, "
                                 "-DURATION, s@MS or e@MS (see dedupctl(1), OFFSET SPECS)",
                                 what, text));
  };
  if (text == "earliest" || text == "beginning") {
    spec.kind = SpecKind::Earliest;
  } else if (text == "latest" || text == "end") {
    spec.kind = SpecKind::Latest;
  } else if (text == "committed" || text == "stored") {
    spec.kind = SpecKind::Committed;
  } else if (text.starts_with("s@") || text.starts_with("e@")) {
    auto ms = parse_count(text.substr(2));
    if (!ms) {
      return bad();
    }
    spec.kind = SpecKind::Timestamp;
    spec.value = *ms;
  } else if (text.starts_with("@")) {
    spec.kind = SpecKind::Timestamp;
    try {
      spec.value = parse_time(text.substr(1), what);
    } catch (const UsageError&) {
      // The message quotes the SPEC as typed, @ included.
      throw UsageError(fmt::format("invalid {} '{}': @ takes an RFC 3339 time such as @2026-11-20T08:00:00Z or "
                                   "@2026-11-20T09:00:00+01:00 (a real date and time)",
                                   what, text));
    }
  } else if (text.starts_with("-")) {
    if (auto count = parse_count(text.substr(1))) {
      spec.kind = SpecKind::Relative;
      spec.value = *count;
    } else {
      try {
        spec.value = parse_duration(text.substr(1), what);
      } catch (const UsageError&) {
        return bad();
      }
      spec.kind = SpecKind::Ago;
    }
  } else if (auto offset = parse_count(text)) {
    spec.kind = SpecKind::Absolute;
    spec.value = *offset;
  } else if (text.starts_with("P")) {
    // kafka-consumer-groups --by-duration PnDTnHnM: that long before now, as -DURATION.
    try {
      spec.value = parse_duration(text, what);
    } catch (const UsageError&) {
      return bad();
    }
    spec.kind = SpecKind::Ago;
  } else if (text.size() >= 10 && text[4] == '-' && text[7] == '-' &&
             std::all_of(text.begin(), text.begin() + 4, [](char c) { return c >= '0' && c <= '9'; })) {
    // kafka-consumer-groups --to-datetime spells a time without the @.
    bool zoned = text.back() == 'Z' || text.find('+', 10) != std::string_view::npos ||
                 text.find('-', 10) != std::string_view::npos;
    if (!zoned) {
      throw UsageError(fmt::format("invalid {} '{}': give the time zone (…Z or …+01:00); kafka-consumer-groups "
                                   "reads a time without one in its JVM's zone, which dedupctl will not guess",
                                   what, text));
    }
    spec.kind = SpecKind::Timestamp;
    try {
      spec.value = parse_time(text, what);
    } catch (const UsageError&) {
      return bad();
    }
  } else {
    return bad();
  }
  return spec;
}

std::optional<std::int64_t> spec_timestamp(const OffsetSpec& spec, std::int64_t now_ms) {
  if (spec.kind == SpecKind::Timestamp) {
    return spec.value;
  }
  if (spec.kind == SpecKind::Ago) {
    return now_ms - spec.value;
  }
  return std::nullopt;
}

ResolvedOffset resolve_offset(const OffsetSpec& spec, SpecRole role, const PartitionFacts& facts, bool has_group,
                              std::int64_t now_ms) {
  ResolvedOffset out;
  auto committed_or_start = [&]() {
    if (facts.committed) {
      return *facts.committed;
    }
    out.no_committed = true;
    return facts.log_start;
  };
  auto place = [&](std::int64_t requested) {
    out.requested = requested;
    if (requested < facts.log_start) {
      // Only a start can be "clamped" in the finding's sense; an end before the log start simply
      // makes the range empty.
      out.clamped = role != SpecRole::To;
      out.offset = facts.log_start;
    } else {
      out.offset = std::min(requested, facts.log_end);
    }
  };
  switch (spec.kind) {
  case SpecKind::Earliest:
    place(facts.log_start);
    break;
  case SpecKind::Latest:
    place(facts.log_end);
    break;
  case SpecKind::Committed:
    if (!has_group) {
      throw UsageError(fmt::format("'{}' needs --group: the committed offset belongs to a consumer group", spec.text));
    }
    place(committed_or_start());
    break;
  case SpecKind::Absolute:
    place(spec.value);
    break;
  case SpecKind::Relative: {
    std::int64_t base = facts.log_end;
    if (role == SpecRole::Seek) {
      if (!has_group) {
        throw UsageError(fmt::format("--seek '{}' counts back from the committed offset: it needs --group", spec.text));
      }
      base = committed_or_start();
    }
    place(base - spec.value);
    break;
  }
  case SpecKind::Timestamp:
  case SpecKind::Ago: {
    auto ts = *spec_timestamp(spec, now_ms);
    if (facts.time_lookup && *facts.time_lookup >= 0) {
      place(*facts.time_lookup);
    } else if (facts.log_start < facts.log_end) {
      // The broker answered -1 (or could not answer) although the partition holds data: read from
      // the log start and let the reader skip older events. Slower, still exact.
      out.requested = facts.log_start;
      out.offset = role == SpecRole::To ? facts.log_end : facts.log_start;
      out.timestamp_filter = ts;
    } else {
      place(facts.log_end);
    }
    break;
  }
  }
  return out;
}

std::optional<std::string> inverted_range(const OffsetSpec& from, const OffsetSpec& to, std::int64_t now_ms) {
  bool inverted = false;
  if (from.kind == SpecKind::Absolute && to.kind == SpecKind::Absolute) {
    inverted = from.value > to.value;
  } else if (from.kind == SpecKind::Relative && to.kind == SpecKind::Relative) {
    inverted = from.value < to.value; // -10 is after -50
  } else if (auto a = spec_timestamp(from, now_ms), b = spec_timestamp(to, now_ms); a && b) {
    inverted = *a > *b;
  }
  if (!inverted) {
    return std::nullopt;
  }
  return fmt::format("--from {} comes after --to {}: the range is empty and nothing would be read; swap them",
                     from.text, to.text);
}

} // namespace dedupctl::core
