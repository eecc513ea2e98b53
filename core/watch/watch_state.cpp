#include "core/watch/watch_state.hpp"

#include <algorithm>
#include <limits>

namespace dedupctl::core {

TrackedRecord track(const RecordState& record, std::int64_t looked_up_at_ms, const CoveragePolicy& policy) {
  using Kind = TrackedRecord::Kind;
  TrackedRecord tracked;
  if (record.kind == RecordState::Kind::Absent) {
    return tracked;
  }
  bool claim = is_claim(record, policy.in_progress_values);
  if (claim && record.claim_until_ms && !record.processed_at_ms) {
    tracked.kind = Kind::LeasedClaim;
    tracked.lapses_at_ms = *record.claim_until_ms;
    return tracked;
  }
  if (record.processed_at_ms) {
    tracked.kind = claim ? Kind::RowClaim : Kind::Row;
    tracked.lapses_at_ms = *record.processed_at_ms;
    return tracked;
  }
  tracked.kind = claim ? Kind::Claim : Kind::Present;
  if (record.pttl_ms) {
    tracked.lapses_at_ms = looked_up_at_ms + *record.pttl_ms;
  }
  if (record.expires_at_ms) {
    tracked.lapses_at_ms = std::min(tracked.lapses_at_ms, *record.expires_at_ms);
  }
  return tracked;
}

bool keyspace_lost_records(const KeyspaceProbe& before, const KeyspaceProbe& after) {
  if (before.incarnation != after.incarnation) {
    return true;
  }
  std::int64_t gone = before.keys - after.keys;
  std::int64_t explained = std::max<std::int64_t>(0, after.expired - before.expired) +
                           std::max<std::int64_t>(0, after.evicted - before.evicted);
  return gone > explained;
}

namespace {

// A tracked record in one byte: its kind in the low nibble, its effect in the high one.
std::uint8_t packed(const TrackedRecord& record) {
  return static_cast<std::uint8_t>(static_cast<unsigned>(record.kind) | (static_cast<unsigned>(record.effect) << 4U));
}
TrackedRecord::Kind kind_of(std::uint8_t packed) { return static_cast<TrackedRecord::Kind>(packed & 0x0fU); }
Effect effect_of(std::uint8_t packed) { return static_cast<Effect>(packed >> 4U); }

} // namespace

WatchState::WatchState(WatchPolicy policy) : m_policy(std::move(policy)) {}

WatchState::Partition& WatchState::partition_of(const std::string& topic, std::int32_t partition) {
  return m_partitions[{topic, partition}];
}

const WatchState::Partition* WatchState::find(const std::string& topic, std::int32_t partition) const {
  auto it = m_partitions.find({topic, partition});
  return it == m_partitions.end() ? nullptr : &it->second;
}

void WatchState::drop_before(Partition& p, std::int64_t log_start) {
  while (!p.blocks.empty()) {
    Block& front = p.blocks.front();
    while (p.dropped < front.size() && front.offset(p.dropped) < log_start) {
      ++p.dropped;
    }
    if (p.dropped < front.size()) {
      return;
    }
    p.blocks.pop_front();
    p.dropped = 0;
  }
}

void WatchState::set_partition(const std::string& topic, std::int32_t partition, std::optional<std::int64_t> committed,
                               std::int64_t log_start) {
  Partition& p = partition_of(topic, partition);
  p.committed = committed;
  p.log_start = std::max(p.log_start, log_start);
  drop_before(p, p.log_start);
}

void WatchState::set_complete(const std::string& topic, std::int32_t partition) {
  partition_of(topic, partition).complete = true;
}

std::uint16_t WatchState::type_index(std::string_view type) {
  auto it = m_type_index.find(type);
  if (it != m_type_index.end()) {
    return it->second;
  }
  if (m_types.size() >= std::numeric_limits<std::uint16_t>::max()) {
    return std::numeric_limits<std::uint16_t>::max(); // an unknown type: external
  }
  auto index = static_cast<std::uint16_t>(m_types.size());
  m_types.emplace_back(type);
  auto effect = m_policy.side_effects.find(std::string(type));
  m_type_effect.push_back(
      static_cast<std::uint8_t>(effect == m_policy.side_effects.end() ? SideEffect::External : effect->second));
  m_type_index.emplace(std::string(type), index);
  return index;
}

void WatchState::append(const std::string& topic, std::int32_t partition, std::int64_t offset,
                        std::int64_t timestamp_ms, std::string_view type, const TrackedRecord& record) {
  Partition& p = partition_of(topic, partition);
  if (offset < p.log_start) {
    return;
  }
  if (p.blocks.empty() || p.blocks.back().size() == k_block ||
      offset - p.blocks.back().base_offset > std::numeric_limits<std::uint32_t>::max()) {
    Block& block = p.blocks.emplace_back();
    block.base_offset = offset;
    block.offset_delta.reserve(k_block);
    block.timestamp.reserve(k_block);
    block.lapses_at.reserve(k_block);
    block.type.reserve(k_block);
    block.kind.reserve(k_block);
  }
  Block& block = p.blocks.back();
  block.offset_delta.push_back(static_cast<std::uint32_t>(offset - block.base_offset));
  block.timestamp.push_back(timestamp_ms);
  block.lapses_at.push_back(record.lapses_at_ms);
  block.type.push_back(type_index(type));
  block.kind.push_back(packed(record));
}

bool WatchState::update(const std::string& topic, std::int32_t partition, std::int64_t offset,
                        const TrackedRecord& record) {
  auto it = m_partitions.find({topic, partition});
  if (it == m_partitions.end()) {
    return false;
  }
  auto& blocks = it->second.blocks;
  // The last block whose base is at or before the offset.
  auto block = std::upper_bound(blocks.begin(), blocks.end(), offset,
                                [](std::int64_t o, const Block& b) { return o < b.base_offset; });
  if (block == blocks.begin()) {
    return false;
  }
  --block;
  auto delta = static_cast<std::uint32_t>(offset - block->base_offset);
  auto at = std::lower_bound(block->offset_delta.begin(), block->offset_delta.end(), delta);
  if (at == block->offset_delta.end() || *at != delta) {
    return false;
  }
  auto i = static_cast<std::size_t>(at - block->offset_delta.begin());
  if (kind_of(block->kind[i]) == TrackedRecord::Kind::NoId) {
    return true;
  }
  block->kind[i] = packed(record);
  block->lapses_at[i] = record.lapses_at_ms;
  return true;
}

void WatchState::observe_ttl(std::int64_t pttl_ms, std::int64_t timestamp_ms, std::int64_t looked_up_at_ms) {
  m_estimator.observe(pttl_ms, timestamp_ms, looked_up_at_ms);
}

std::optional<std::int64_t> WatchState::next_offset(const std::string& topic, std::int32_t partition) const {
  const Partition* p = find(topic, partition);
  if (!p) {
    return std::nullopt;
  }
  if (p->blocks.empty() || p->blocks.back().size() == 0) {
    return p->log_start;
  }
  const Block& last = p->blocks.back();
  return std::max(p->log_start, last.offset(last.size() - 1) + 1);
}

WatchGauges WatchState::evaluate(std::int64_t now_ms, const std::vector<WatchSeek>& seeks) const {
  WatchGauges gauges;
  CoveragePolicy policy = m_policy.policy;
  policy.now_ms = now_ms;
  if (!m_policy.ttl_declared) {
    gauges.ttl_estimate_high_ms = m_estimator.high();
    policy.ttl = m_estimator.high() ? Span::finite(*m_estimator.high()) : Span::unknown();
  }
  std::string marker = policy.in_progress_values.empty() ? std::string() : policy.in_progress_values.front();
  constexpr double k_inf = std::numeric_limits<double>::infinity();
  for (const auto& [where, p] : m_partitions) {
    const auto& [topic, number] = where;
    if (!p.complete) {
      continue;
    }
    PartitionGauge gauge{topic, number, {}};
    double& gap = gauges.seconds_until_ttl_gap.try_emplace(topic, k_inf).first->second;
    // This partition's window per seek: [seek, committed).
    std::vector<std::pair<std::int64_t, std::int64_t>> windows;
    for (const auto& seek : seeks) {
      auto at = seek.offsets.find(where);
      if (at == seek.offsets.end() || !p.committed) {
        windows.emplace_back(0, 0);
      } else {
        windows.emplace_back(at->second, *p.committed);
      }
      for (auto effect : {SideEffect::External, SideEffect::Internal, SideEffect::Idempotent}) {
        gauges.would_reapply.try_emplace({topic, seek.name, std::string(to_string(effect))}, 0);
      }
    }
    for (std::size_t b = 0; b < p.blocks.size(); ++b) {
      const Block& block = p.blocks[b];
      for (std::size_t i = b == 0 ? p.dropped : 0; i < block.size(); ++i) {
        auto kind = kind_of(block.kind[i]);
        std::int64_t offset = block.offset(i);
        Coverage state = Coverage::NoId;
        if (kind != TrackedRecord::Kind::NoId) {
          using Kind = TrackedRecord::Kind;
          RecordState record;
          std::int64_t lapses = block.lapses_at[i];
          bool row = kind == Kind::Row || kind == Kind::RowClaim;
          if (row) {
            record = inbox_row(lapses == k_never_ms ? std::nullopt : std::optional<std::int64_t>(lapses),
                               kind == Kind::RowClaim ? std::string_view(marker) : std::string_view("done"));
          } else if (kind == Kind::LeasedClaim) {
            record = present_record(std::nullopt, "");
            record.claim = true;
            record.claim_until_ms = lapses;
          } else if (kind != Kind::Absent && lapses > now_ms) {
            record.kind = RecordState::Kind::Present;
            if (lapses != k_never_ms) {
              record.pttl_ms = lapses - now_ms;
            }
            if (kind == Kind::Claim) {
              record.value = marker;
            }
          }
          Verdict verdict = classify(record, EventFacts{block.timestamp[i], offset, p.committed}, policy);
          state = verdict.state;
          if (state == Coverage::Expired) {
            gap = 0;
          } else if (state == Coverage::Expiring) {
            gap = std::min(gap, static_cast<double>(remaining_ms(record, policy).value_or(0)) / 1000.0);
          }
        }
        ++gauge.states[static_cast<std::size_t>(state)];
        if (m_policy.effects) {
          count_effect(state, effect_of(block.kind[i]), gauges.effects[topic]);
        }
        if (!reapplied_on_seek(state, policy)) {
          continue;
        }
        for (std::size_t s = 0; s < seeks.size(); ++s) {
          if (offset >= windows[s].first && offset < windows[s].second) {
            std::uint16_t type = block.type[i];
            auto effect =
                type < m_type_effect.size() ? static_cast<SideEffect>(m_type_effect[type]) : SideEffect::External;
            ++gauges.would_reapply[{topic, seeks[s].name, std::string(to_string(effect))}];
          }
        }
      }
    }
    gauges.partitions.push_back(gauge);
  }
  return gauges;
}

std::int64_t WatchState::events() const {
  std::int64_t n = 0;
  for (const auto& [where, p] : m_partitions) {
    for (const auto& block : p.blocks) {
      n += static_cast<std::int64_t>(block.size());
    }
    n -= static_cast<std::int64_t>(p.dropped);
  }
  return n;
}

std::size_t WatchState::bytes() const {
  std::size_t n = 0;
  for (const auto& [where, p] : m_partitions) {
    for (const auto& block : p.blocks) {
      n += sizeof(Block) + block.offset_delta.capacity() * 4 + block.timestamp.capacity() * 8 +
           block.lapses_at.capacity() * 8 + block.type.capacity() * 2 + block.kind.capacity();
    }
  }
  return n;
}

} // namespace dedupctl::core
