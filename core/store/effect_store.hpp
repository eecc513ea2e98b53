#pragma once

#include "core/store/dedup_store.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// Where the consumer's effect can be looked up by event id (--effects): a row of a PostgreSQL table,
// a Redis key, a record of an output topic (connectors/kafka/effects). Abstract so that audit, trace,
// watch and a repair read every kind the same way; in unit tests fakes of their own stand in.
namespace dedupctl::core {

class EffectStore {
public:
  virtual ~EffectStore() = default;
  // Whether each key's effect exists (1) or not (0), in order, with one round trip per call. Throws
  // UnreachableError when the store fails: no verdict is given over effects not seen.
  virtual void lookup(const std::vector<std::string>& keys, std::vector<std::uint8_t>& present) = 0;
};

// An effect that is a record of a store the connectors already read (a table's row by its id
// column, a Redis key of any type): present when the store has anything under the key.
class RecordEffects final : public EffectStore {
public:
  explicit RecordEffects(std::unique_ptr<DedupStore> store) : m_store(std::move(store)) {}
  void lookup(const std::vector<std::string>& keys, std::vector<std::uint8_t>& present) override {
    m_store->lookup(keys, m_states);
    present.assign(keys.size(), 0);
    for (std::size_t i = 0; i < keys.size() && i < m_states.size(); ++i) {
      present[i] = m_states[i].kind == RecordState::Kind::Present ? 1 : 0;
    }
  }

private:
  std::unique_ptr<DedupStore> m_store;
  std::vector<RecordState> m_states;
};

} // namespace dedupctl::core
