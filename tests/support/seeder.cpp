// seeder: produces events with explicit CreateTime timestamps, keys and headers (kcat -P cannot
// set timestamps), from kcat -J envelopes or generated for benchmarks.
//
//   seeder -b HOST:PORT --topic T --input FILE|- [--rebase-now] [--expect-log-start N]
//   seeder -b HOST:PORT --topic T --commit-group G --commit P=OFFSET[,P=OFFSET…]
//   seeder -b HOST:PORT --topic T --create PARTITIONS [--config NAME=VALUE]…   (a real broker)
//   seeder -b HOST:PORT --topic T --generate N --partitions P [--id-in header|json|avro|changelog]
//          [--payload-size BYTES] [--start-ts MS] [--step-ms MS] [--expect-log-start N]
//          [--batch-bytes N] [--first I]
//
// --id-in changelog generates, for event i of the same options, the record a Kafka Streams dedup
// processor's window store logs for it: key evt-i ‖ int64 window start (its timestamp) ‖ int32 0,
// big-endian, value an 8-byte Long, in partition i % P (the task of the event's partition).
// --input lines are kcat -J envelopes; their "partition" is kept (absent: by key), their "topic"
// is replaced by --topic. --rebase-now shifts every timestamp so that the newest event is one
// minute old: bundled data keeps realistic ages. --expect-log-start checks after seeding that no
// partition's log start moved (the mock silently evicts beyond 5 MiB a partition). --batch-bytes
// (default 16384, the Java producer's batch.size) caps the producer's batches: with librdkafka's
// 1 MB they grew with how fast the seeder ran, and a fetch brings at least one whole batch of each
// partition, so the same bench's audit of 4M events in 256 partitions peaked anywhere from 250 to
// 490 MB (570 MB with every batch near 1 MB, 227 MB with 16 KB ones).
#include "core/source/kcat_line.hpp"
#include "tests/support/events.hpp"
#include "tests/support/kafka_tools.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using dedupctl::testing::OutgoingRecord;

namespace {

struct Options {
  std::string bootstrap;
  std::string topic;
  std::string input;
  bool rebase_now = false;
  long long generate = -1;
  int partitions = 1;
  std::string id_in = "header";
  std::size_t payload_size = 200;
  long long batch_bytes = 16384;
  long long start_ts = 1'700'000'000'000LL;
  long long step_ms = 1;
  long long first = 0; // --first: the first generated event's number (its id, key and partition)
  long long expect_log_start = -1;
  std::string commit_group;
  std::string commit;
  int create = 0;                                           // --create: partitions of a new topic
  std::vector<std::pair<std::string, std::string>> configs; // its topic configs
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "seeder: %s\n", why);
  std::exit(2);
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<OutgoingRecord> read_envelopes(const Options& options) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (options.input != "-") {
    file.open(options.input);
    if (!file) {
      usage(fmt::format("cannot read {}", options.input).c_str());
    }
    in = &file;
  }
  dedupctl::core::KcatLineParser parser;
  std::vector<OutgoingRecord> records;
  std::string line;
  long long number = 0;
  while (std::getline(*in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') {
      continue;
    }
    dedupctl::core::EventBatch batch;
    std::string error;
    if (!parser.parse(line, batch, error)) {
      usage(fmt::format("{}:{}: {}", options.input, number, error).c_str());
    }
    parser.seal(batch);
    const auto& event = batch.events.front();
    OutgoingRecord record;
    record.topic = options.topic;
    record.partition = event.partition;
    if (event.key) {
      record.key = std::string(*event.key);
    }
    if (event.payload) {
      record.payload = std::string(*event.payload);
    }
    for (const auto& header : event.headers) {
      record.headers.emplace_back(std::string(header.name),
                                  header.value ? std::optional<std::string>(std::string(*header.value)) : std::nullopt);
    }
    record.timestamp_ms = event.timestamp_ms;
    records.push_back(std::move(record));
  }
  if (options.rebase_now && !records.empty()) {
    std::int64_t newest = records.front().timestamp_ms;
    for (const auto& record : records) {
      newest = std::max(newest, record.timestamp_ms);
    }
    std::int64_t shift = now_ms() - 60'000 - newest;
    for (auto& record : records) {
      record.timestamp_ms += shift;
    }
  }
  return records;
}

// Avro's binary encoding of a long (zigzag varint) and of a string, for --id-in avro.
void avro_long(std::string& out, long long v) {
  auto z = (static_cast<unsigned long long>(v) << 1) ^ static_cast<unsigned long long>(v >> 63);
  while (z >= 0x80) {
    out += static_cast<char>((z & 0x7f) | 0x80);
    z >>= 7;
  }
  out += static_cast<char>(z);
}
void avro_string(std::string& out, std::string_view s) {
  avro_long(out, static_cast<long long>(s.size()));
  out += s;
}

// --id-in avro writes records of schema id 1, {event_id, type, order_id: string, amount_cents: long,
// pad: string}, in that order: tests/bench/scan-avro/run exports that schema for --schemas.
OutgoingRecord generated(const Options& options, long long i) {
  OutgoingRecord record;
  record.topic = options.topic;
  record.partition = static_cast<std::int32_t>(i % options.partitions);
  std::string id = fmt::format("evt-{:012}", i);
  record.timestamp_ms = options.start_ts + (i - options.first) * options.step_ms;
  if (options.id_in == "changelog") {
    record.key = dedupctl::testing::window_store_key(id, record.timestamp_ms);
    record.payload = std::string(8, '\0');
    return record;
  }
  record.key = fmt::format("order-{}", i / 3);
  if (options.id_in == "avro") {
    // The schema registry's wire format (magic 0, schema id 1), then the record, padded to size.
    std::string payload("\0\0\0\0\x01", 5);
    avro_string(payload, id);
    avro_string(payload, "OrderPlaced");
    avro_string(payload, fmt::format("order-{}", i / 3));
    avro_long(payload, 1000 + i % 9000);
    std::size_t pad = options.payload_size > payload.size() + 2 ? options.payload_size - payload.size() - 2 : 0;
    avro_string(payload, std::string(pad, 'x'));
    record.payload = std::move(payload);
    record.headers.emplace_back("type", "OrderPlaced");
    return record;
  }
  std::string payload = options.id_in == "json" ? fmt::format(R"({{"event_id":"{}","type":"OrderPlaced",)", id)
                                                : std::string(R"({"type":"OrderPlaced",)");
  payload += fmt::format(R"("order_id":"order-{}","amount_cents":{},"pad":")", i / 3, 1000 + i % 9000);
  if (payload.size() + 2 < options.payload_size) {
    payload.append(options.payload_size - payload.size() - 2, 'x');
  }
  payload += "\"}";
  record.payload = std::move(payload);
  if (options.id_in == "header") {
    record.headers.emplace_back("event_id", id);
  }
  record.headers.emplace_back("type", "OrderPlaced");
  record.timestamp_ms = options.start_ts + (i - options.first) * options.step_ms;
  return record;
}

} // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage(fmt::format("{} needs a value", arg).c_str());
      }
      return argv[++i];
    };
    if (arg == "-b" || arg == "--bootstrap-server") {
      options.bootstrap = value();
    } else if (arg == "--topic") {
      options.topic = value();
    } else if (arg == "--input") {
      options.input = value();
    } else if (arg == "--rebase-now") {
      options.rebase_now = true;
    } else if (arg == "--generate") {
      options.generate = std::atoll(value().c_str());
    } else if (arg == "--partitions") {
      options.partitions = std::atoi(value().c_str());
    } else if (arg == "--id-in") {
      options.id_in = value();
    } else if (arg == "--batch-bytes") {
      options.batch_bytes = std::atoll(value().c_str());
    } else if (arg == "--payload-size") {
      options.payload_size = static_cast<std::size_t>(std::atoll(value().c_str()));
    } else if (arg == "--start-ts") {
      options.start_ts = std::atoll(value().c_str());
    } else if (arg == "--first") {
      options.first = std::atoll(value().c_str());
    } else if (arg == "--step-ms") {
      options.step_ms = std::atoll(value().c_str());
    } else if (arg == "--commit-group") {
      options.commit_group = value();
    } else if (arg == "--commit") {
      options.commit = value();
    } else if (arg == "--create") {
      options.create = std::atoi(value().c_str());
    } else if (arg == "--config") {
      std::string item = value();
      auto eq = item.find('=');
      if (eq == std::string::npos) {
        usage("--config takes NAME=VALUE");
      }
      options.configs.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    } else if (arg == "--expect-log-start") {
      options.expect_log_start = std::atoll(value().c_str());
    } else {
      usage(fmt::format("unknown argument {}", arg).c_str());
    }
  }
  if (options.create > 0) {
    try {
      dedupctl::testing::create_topic(options.bootstrap, options.topic, options.create, options.configs);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "seeder: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  if (!options.commit_group.empty()) {
    std::vector<std::pair<std::int32_t, std::int64_t>> offsets;
    std::string spec = options.commit;
    for (std::size_t pos = 0; pos < spec.size();) {
      auto comma = spec.find(',', pos);
      std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      auto eq = item.find('=');
      if (eq == std::string::npos) {
        usage("--commit takes P=OFFSET[,P=OFFSET…]");
      }
      offsets.emplace_back(std::atoi(item.substr(0, eq).c_str()), std::atoll(item.substr(eq + 1).c_str()));
      pos = comma == std::string::npos ? spec.size() : comma + 1;
    }
    try {
      dedupctl::testing::commit_offsets(options.bootstrap, options.commit_group, options.topic, offsets);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "seeder: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  if (options.bootstrap.empty() || options.topic.empty() || (options.input.empty() && options.generate < 0)) {
    usage("need -b, --topic and --input or --generate");
  }
  try {
    auto producer = std::make_unique<dedupctl::testing::TestProducer>(
        options.bootstrap, 30'000,
        std::vector<std::pair<std::string, std::string>>{{"batch.size", std::to_string(options.batch_bytes)}});
    long long count = 0;
    if (options.generate >= 0) {
      for (long long i = options.first; i < options.first + options.generate; ++i) {
        producer->send(generated(options, i));
      }
      count = options.generate;
    } else {
      auto records = read_envelopes(options);
      for (const auto& record : records) {
        producer->send(record);
      }
      count = static_cast<long long>(records.size());
    }
    std::string error;
    if (auto failed = producer->flush(error)) {
      std::fprintf(stderr, "seeder: %lld of %lld records failed: %s\n", static_cast<long long>(failed), count,
                   error.c_str());
      return 1;
    }
    if (options.expect_log_start >= 0) {
      auto marks = dedupctl::testing::watermarks(options.bootstrap, options.topic);
      for (std::size_t p = 0; p < marks.size(); ++p) {
        if (marks[p].first != options.expect_log_start) {
          std::fprintf(stderr,
                       "seeder: %s[%zu] starts at %lld, not %lld: the mock evicted batches (5 MiB a partition)\n",
                       options.topic.c_str(), p, static_cast<long long>(marks[p].first), options.expect_log_start);
          return 1;
        }
      }
    }
    std::fprintf(stderr, "seeder: produced %lld records to %s\n", count, options.topic.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seeder: %s\n", e.what());
    return 1;
  }
  return 0;
}
