#include "core/store/record_state.hpp"

namespace dedupctl::core {

RecordState present_record(std::optional<std::int64_t> pttl_ms, std::string_view value) {
  RecordState state;
  state.kind = RecordState::Kind::Present;
  state.pttl_ms = pttl_ms;
  state.value = value;
  return state;
}

RecordState inbox_row(std::optional<std::int64_t> processed_at_ms, std::string_view status) {
  RecordState state = present_record(std::nullopt, status);
  state.processed_at_ms = processed_at_ms;
  return state;
}

} // namespace dedupctl::core
