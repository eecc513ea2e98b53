// mockbroker: hosts librdkafka's mock cluster (rd_kafka_mock_cluster_new) in its own process so
// that tests, the demo and the benchmarks talk to it over real sockets, like to a broker.
//
//   mockbroker [--brokers N] [--topic NAME:PARTITIONS]...
//
// Prints the bootstrap list on the first line of stdout and serves until SIGTERM or SIGINT.
// Commands on stdin (one per line; each answers "ok" or "error: …" on stdout):
//   topic NAME PARTITIONS         create a topic
//   down BROKER / up BROKER       take a broker down or bring it back
//   rtt BROKER MS                 add round-trip latency to a broker
//   error APIKEY ERRCODE [COUNT]  fail the next COUNT requests of an API (e.g. error 0 1 3: Produce)
//   clear APIKEY                  forget pushed errors of an API
//
// Facts about the mock in librdkafka 2.8.0 that tests must mind: at most 5 MiB of batches per
// partition (older ones silently evicted: check the low watermark after seeding);
// offsets_for_times answers a time with -1 (the earliest and latest sentinels work); no
// DescribeConfigs, CreateTopics or ListGroups; committed offsets work; the first group join takes ~3 s.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

rd_kafka_mock_cluster_t* g_cluster = nullptr;

void reply(const std::string& text) {
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

void serve_commands() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string verb;
    in >> verb;
    if (verb.empty()) {
      continue;
    }
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (verb == "topic") {
      std::string name;
      int partitions = 1;
      in >> name >> partitions;
      err = rd_kafka_mock_topic_create(g_cluster, name.c_str(), partitions, 1);
    } else if (verb == "down" || verb == "up") {
      int broker = 1;
      in >> broker;
      err = verb == "down" ? rd_kafka_mock_broker_set_down(g_cluster, broker)
                           : rd_kafka_mock_broker_set_up(g_cluster, broker);
    } else if (verb == "rtt") {
      int broker = 1;
      int ms = 0;
      in >> broker >> ms;
      err = rd_kafka_mock_broker_set_rtt(g_cluster, broker, ms);
    } else if (verb == "error") {
      int api = 0;
      int code = 0;
      int count = 1;
      in >> api >> code;
      if (!(in >> count)) {
        count = 1;
      }
      std::vector<rd_kafka_resp_err_t> errors(static_cast<std::size_t>(count), static_cast<rd_kafka_resp_err_t>(code));
      rd_kafka_mock_push_request_errors_array(g_cluster, static_cast<int16_t>(api), errors.size(), errors.data());
    } else if (verb == "clear") {
      int api = 0;
      in >> api;
      rd_kafka_mock_clear_request_errors(g_cluster, static_cast<int16_t>(api));
    } else {
      reply("error: unknown command " + verb);
      continue;
    }
    reply(err ? std::string("error: ") + rd_kafka_err2str(err) : "ok");
  }
}

} // namespace

int main(int argc, char** argv) {
  int brokers = 1;
  std::vector<std::pair<std::string, int>> topics;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--brokers" && i + 1 < argc) {
      brokers = std::atoi(argv[++i]);
    } else if (arg == "--topic" && i + 1 < argc) {
      std::string spec = argv[++i];
      auto colon = spec.find(':');
      topics.emplace_back(spec.substr(0, colon), colon == std::string::npos ? 1 : std::atoi(spec.c_str() + colon + 1));
    } else {
      std::fprintf(stderr, "usage: mockbroker [--brokers N] [--topic NAME:PARTITIONS]...\n");
      return 2;
    }
  }
  // Block the stop signals in every thread; the main thread waits for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    std::fprintf(stderr, "mockbroker: %s\n", errstr);
    return 1;
  }
  g_cluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (!g_cluster) {
    std::fprintf(stderr, "mockbroker: cannot create the mock cluster\n");
    return 1;
  }
  for (const auto& [name, partitions] : topics) {
    if (rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(g_cluster, name.c_str(), partitions, 1)) {
      std::fprintf(stderr, "mockbroker: cannot create topic %s: %s\n", name.c_str(), rd_kafka_err2str(err));
      return 1;
    }
  }
  reply(rd_kafka_mock_cluster_bootstraps(g_cluster));
  std::thread(serve_commands).detach();
  int signal = 0;
  sigwait(&stop_signals, &signal);
  rd_kafka_mock_cluster_destroy(g_cluster);
  rd_kafka_destroy(rk);
  return 0;
}
