// The replay's file sink on a real file: the position a checkpoint records is always the end of
// a whole line, whatever stdio has written out so far, so a resumed run reads back from a line's
// start; and a line a killed run left half-written is cut on open.
#include "connectors/file/replay_sink.hpp"
#include "core/source/kcat_line.hpp"
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

using namespace dedupctl;
using namespace dedupctl::testing;

namespace {

std::string line_of(const core::Event& event) { return core::format_kcat_line(event) + "\n"; }

} // namespace

TEST(FileSink, ThePositionIsAlwaysTheEndOfAWholeLine) {
  TempDir dir;
  std::string path = dir.file("out.ndjson");
  auto sink = connectors::file::open_sink(path);
  std::string payload(300, 'x'); // lines of ~400 bytes: stdio's 4 KiB blocks end inside them
  std::size_t expected = 0;
  for (int i = 0; i < 50; ++i) {
    std::string id = fmt::format("e-{}", i);
    std::vector<core::Header> headers{{"event_id", id}};
    core::Event event;
    event.topic = "src";
    event.offset = i;
    event.timestamp_ms = 1'795'000'000'000LL + i;
    event.payload = payload;
    event.headers = headers;
    expected += line_of(event).size();
    sink->publish(event, static_cast<std::uint64_t>(i));
    EXPECT_EQ(sink->position(), std::to_string(expected)) << "after line " << i;
  }
}

TEST(FileSink, AHalfWrittenLastLineIsCutOnOpenAndAShortFileReadsBackNothing) {
  TempDir dir;
  std::string path = dir.file("out.ndjson");
  {
    std::ofstream out(path);
    out << R"({"topic":"src","partition":0,"offset":0,"ts":1,"headers":["event_id","e-0"],"key":null,"payload":"{}"})"
        << "\n"
        << R"({"topic":"src","partition":0,"offset":1,"ts":2,"head)"; // killed mid-line
  }
  auto sink = connectors::file::open_sink(path);
  std::string whole = read_file(path);
  EXPECT_EQ(whole.back(), '\n');
  EXPECT_EQ(std::count(whole.begin(), whole.end(), '\n'), 1);
  EXPECT_EQ(sink->position(), std::to_string(whole.size()));
  // A checkpoint past the end (the killed run's buffer never reached the file): nothing to read back.
  auto tail = sink->read_after(std::to_string(whole.size() + 4096));
  core::EventBatch batch;
  EXPECT_FALSE(tail->next_batch(batch) && !batch.events.empty());
}
