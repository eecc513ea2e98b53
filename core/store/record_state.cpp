#include "core/store/record_state.hpp"

namespace dedupctl::core {

RecordState inbox_row(std::optional<std::int64_t> processed_at_ms, std::string_view status) {
  RecordState state;
  state.kind = RecordState::Kind::Present;
  state.value = status;
  state.processed_at_ms = processed_at_ms;
  return state;
}

} // namespace dedupctl::core
