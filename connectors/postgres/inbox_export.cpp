#include "connectors/postgres/inbox_store.hpp"

#include "connectors/postgres/session.hpp"
#include "core/store/inbox_snapshot.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>

// The inbox's rows as a snapshot takes them (export_inbox): one COPY, streamed line by line.
namespace dedupctl::connectors::postgres {

using detail::InboxSession;

std::int64_t export_inbox(const InboxSettings& settings, const std::function<void(const std::string&)>& line) {
  InboxSession session(settings); // an export streams the rows once: nothing to load
  std::int64_t started = 0;
  bool infinite = false;
  session.guard([&] {
    started = session.copy_rows(session.connection(), session.copy_query(), [&](const std::string& raw) {
      // The time is the third of the four columns, as COPY writes it: a snapshot no audit can read
      // is not written.
      std::string_view fields[4];
      if (core::split_copy_fields(raw, fields, 4) && (fields[2] == "infinity" || fields[2] == "-infinity")) {
        infinite = true;
      }
      line(raw);
    });
  });
  if (infinite) {
    throw UsageError(session.infinite_times().value_or(fmt::format(
        "the inbox table {} has rows whose {} is infinite: set it to when the event was processed (NULL for "
        "a row kept forever)",
        settings.schema.table, settings.schema.time_column)));
  }
  return started;
}

} // namespace dedupctl::connectors::postgres
