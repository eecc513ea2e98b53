// The replay's middle steps: a chunk's claims (or a plan's look), its publishing, the sink's
// deliveries, and moving the queue of chunks on to settling.
#include "commands/pipeline/replay_runner.hpp"
#include "core/replay/repair.hpp"
#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::commands::replay_detail {

// A plan looks at the chunk's keys and finishes it at once. A key an earlier event of the range
// would take first is that event's.
void ReplayRunner::plan(Chunk& chunk) {
  {
    auto timer = stage(&ReplayStageTimes::claim);
    give_second_keys(chunk);
    m_placement.plan(chunk.asked_all ? chunk.keys : chunk.asked, chunk.answers);
    take_answers(chunk);
    for (std::size_t k = 0; k < chunk.keys.size(); ++k) {
      if (chunk.claims[k] == core::Claim::Claimed || chunk.claims[k] == core::Claim::OwnStale) {
        bool first_time = false;
        m_planned.find_or_insert(core::hash64(chunk.keys[k], 0x91), first_time);
        if (!first_time) {
          chunk.claims[k] = core::Claim::Done;
        }
      }
    }
    chunk.batch.reset();
  }
  finish_front();
}

// The second keys of what the chunk asks, for a placement that wants them.
void ReplayRunner::give_second_keys(const Chunk& chunk) {
  if (m_placement.wants_second_keys()) {
    m_placement.second_keys(chunk.asked_all ? chunk.second_keys : chunk.asked_second);
  }
}

// A run sends the chunk's claims to the placement's worker.
void ReplayRunner::claim(Chunk& chunk) {
  chunk.claim_done = placement_call(
      [this, &chunk] {
        give_second_keys(chunk);
        m_placement.claim(chunk.asked_all ? chunk.keys : chunk.asked, m_request.run_id, chunk.answers);
      },
      true);
  chunk.stage = Chunk::Stage::Claiming;
}

std::future<void> ReplayRunner::placement_call(std::function<void()> call, bool is_claim) {
  SerialWorker& lane = !is_claim && m_settles_apart ? m_settle_worker : m_worker;
  return lane.submit([this, call = std::move(call), is_claim] {
    {
      std::lock_guard lock(m_failure_mutex);
      if (m_placement_failure) {
        std::rethrow_exception(m_placement_failure); // whichever future is read first says why
      }
    }
    if (is_claim && m_claims_interrupted) {
      throw InterruptedError("interrupted");
    }
    try {
      call();
    } catch (const InterruptedError&) {
      m_claims_interrupted = m_claims_interrupted || is_claim;
      throw;
    } catch (...) {
      std::lock_guard lock(m_failure_mutex);
      if (!m_placement_failure) {
        m_placement_failure = std::current_exception();
      }
      throw;
    }
  });
}

// The placement's answers, in the order asked, as the claims of the chunk's keys.
void ReplayRunner::take_answers(Chunk& chunk) {
  for (std::size_t c = 0; c < chunk.answers.size(); ++c) {
    chunk.claims[chunk.asked_all ? c : chunk.asked_of[c]] = chunk.answers[c];
  }
}

// Whether this run holds the key's claim: it claimed it now, or an interrupted run of it did.
bool ReplayRunner::ours(const Chunk& chunk, std::size_t k) const {
  return (chunk.claims[k] == core::Claim::Claimed || chunk.claims[k] == core::Claim::OwnStale) &&
         !chunk.in_flight_elsewhere[k];
}

// A chunk whose claims are back: publish what was claimed (the key's first event of the chunk),
// unless an interrupted run already did.
void ReplayRunner::publish(Chunk& chunk) {
  auto timer = stage(&ReplayStageTimes::publish);
  std::size_t n = chunk.keys.size();
  take_answers(chunk);
  chunk.start_position = m_sink->position();
  chunk.published.assign(n, false);
  chunk.delivered.assign(n, false);
  chunk.found_in_sink.assign(n, false);
  for (std::size_t j = 0; j < chunk.rows.size(); ++j) {
    const Chunk::Row& row = chunk.rows[j];
    if (row.key == SIZE_MAX || !row.first || !ours(chunk, row.key)) {
      continue;
    }
    std::size_t k = row.key;
    chunk.delivered[k] = true;
    if (m_in_sink.contains(row.id)) {
      chunk.found_in_sink[k] = true; // settled without publishing again
      continue;
    }
    if (!m_sink_refusal) {
      if (m_request.pace) {
        m_request.pace(++m_published_total);
      }
      try {
        m_sink->publish(chunk.batch->events[chunk.begin + j], (chunk.seq << 32) | k);
        chunk.published[k] = true;
        ++chunk.outstanding;
        continue;
      } catch (const UnreachableError& e) {
        m_sink_refusal = e.what();
      }
    }
    // Not published: its claim is released when the chunk settles.
    chunk.delivered[k] = false;
    if (chunk.first_error.empty()) {
      chunk.first_error = *m_sink_refusal;
    }
  }
  chunk.batch.reset(); // its events are in the sink's hands now
  chunk.stage = Chunk::Stage::Published;
}

// Takes delivery reports in, waiting up to `timeout_ms` for the first.
void ReplayRunner::take_deliveries(int timeout_ms) {
  m_deliveries.clear();
  {
    auto timer = stage(timeout_ms > 0 ? &ReplayStageTimes::wait : &ReplayStageTimes::publish);
    m_sink->poll(m_deliveries, timeout_ms);
  }
  for (const auto& d : m_deliveries) {
    std::uint64_t seq = d.tag >> 32;
    auto k = static_cast<std::size_t>(d.tag & 0xffffffffULL);
    if (m_chunks.empty() || seq < m_chunks.front().seq || seq - m_chunks.front().seq >= m_chunks.size()) {
      continue; // not ours (cannot happen)
    }
    Chunk& chunk = m_chunks[seq - m_chunks.front().seq];
    --chunk.outstanding;
    if (!d.ok) {
      chunk.delivered[k] = false;
      if (chunk.first_error.empty()) {
        chunk.first_error = d.error;
      }
      if (d.refuses_all && !m_sink_refusal) {
        m_sink_refusal = d.error;
      }
    }
  }
}

// Moves every chunk as far as it can go without waiting: claims back → published (in order),
// deliveries in, fully delivered → settle sent (in order), settled front → finished.
void ReplayRunner::advance() {
  for (auto& chunk : m_chunks) {
    if (chunk.stage != Chunk::Stage::Claiming) {
      continue;
    }
    if (!is_ready(chunk.claim_done)) {
      break;
    }
    try {
      chunk.claim_done.get(); // rethrows what the claim threw
    } catch (const InterruptedError&) {
      chunk.claimed_nothing = true;
      throw;
    }
    publish(chunk);
  }
  take_deliveries(0);
  for (auto& chunk : m_chunks) {
    if (chunk.stage == Chunk::Stage::Settling) {
      continue;
    }
    if (chunk.stage != Chunk::Stage::Published || chunk.outstanding > 0) {
      break;
    }
    chunk.settle_done =
        placement_call([this, &chunk] { m_placement.settle(chunk.keys, chunk.claims, chunk.delivered); }, false);
    chunk.stage = Chunk::Stage::Settling;
  }
  while (!m_chunks.empty() && m_chunks.front().stage == Chunk::Stage::Settling &&
         is_ready(m_chunks.front().settle_done)) {
    m_chunks.front().settle_done.get(); // rethrows what settling threw
    finish_front();
  }
}

// Blocks until the front chunk can move on: its claims, its deliveries, or its settling.
void ReplayRunner::wait_for_front() {
  Chunk& front = m_chunks.front();
  if (front.stage == Chunk::Stage::Claiming) {
    auto timer = stage(&ReplayStageTimes::claim);
    front.claim_done.wait();
  } else if (front.stage == Chunk::Stage::Settling) {
    auto timer = stage(&ReplayStageTimes::settle);
    front.settle_done.wait();
  } else if (front.outstanding > 0) {
    take_deliveries(100);
  }
}

// Interrupted: the claims still out are waited for. A chunk whose claim went through is published
// and settled like any; one whose claim was interrupted claimed nothing and is dropped with its
// events (they stay beyond the checkpoint), as is a chunk still being built.
void ReplayRunner::resolve_claims() {
  for (auto& chunk : m_chunks) {
    if (chunk.stage != Chunk::Stage::Claiming || chunk.claimed_nothing) {
      continue;
    }
    try {
      chunk.claim_done.get();
      publish(chunk);
    } catch (const InterruptedError&) {
      chunk.claimed_nothing = true;
    }
  }
  while (!m_chunks.empty() && (m_chunks.back().stage == Chunk::Stage::Building || m_chunks.back().claimed_nothing)) {
    m_in_flight.drop_newest(m_chunks.back().seq);
    m_chunks.pop_back();
  }
}

// Every chunk in flight delivered, settled and checkpointed.
void ReplayRunner::finish_in_flight() {
  while (m_publishing && !m_chunks.empty()) {
    advance();
    if (!m_chunks.empty()) {
      wait_for_front();
    }
  }
}

} // namespace dedupctl::commands::replay_detail
