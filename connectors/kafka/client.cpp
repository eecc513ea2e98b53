#include "connectors/kafka/client.hpp"

#include "connectors/process/shell.hpp"
#include "core/source/bearer_token.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

namespace dedupctl::connectors::kafka {

namespace {

// What make_handle keeps for a handle, as its opaque: the settings, and the first authentication or
// TLS failure its connections met (written by librdkafka's broker threads).
struct HandleState {
  const KafkaSettings* settings = nullptr;
  std::mutex mutex;
  std::string failure;
};

std::string property_of(const KafkaSettings& settings, std::string_view name, std::string_view fallback) {
  std::string value(fallback);
  for (const auto& [key, v] : settings.properties) {
    if (key == name) {
      value = v;
    }
  }
  return value;
}

// "sasl_ssl://127.0.0.1:9094/bootstrap: SSL handshake failed: …" -> "127.0.0.1:9094".
std::string broker_of(std::string_view text) {
  auto scheme = text.find("://");
  if (scheme == std::string_view::npos) {
    return "the broker";
  }
  auto start = scheme + 3;
  auto end = text.find_first_of("/: ", text.find(':', start) + 1);
  return std::string(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// A connection failure librdkafka logged (facility FAIL) in words, when it is one that trying again
// cannot mend: the brokers refused the login, the mechanism or the TLS handshake, or a clear-text
// client met a TLS listener. Empty otherwise (a refused or lost connection is retried until
// --timeout).
std::string refusal_in_words(const KafkaSettings& settings, std::string_view text) {
  // "SASL X mechanism handshake failed: Broker: Unsupported SASL mechanism: broker's supported
  // mechanisms: A,B"
  if (contains(text, "mechanism handshake failed")) {
    std::string mechanism = property_of(settings, "sasl.mechanisms", property_of(settings, "sasl.mechanism", "GSSAPI"));
    constexpr std::string_view k_supported = "supported mechanisms: ";
    auto at = text.find(k_supported);
    std::string offered =
        at == std::string_view::npos ? "" : std::string(core::trim(text.substr(at + k_supported.size())));
    return fmt::format("the broker at {} does not enable SASL mechanism {}{}; check sasl.mechanisms", broker_of(text),
                       mechanism, offered.empty() ? "" : " (it enables " + offered + ")");
  }
  // Clear text to a TLS listener: the broker drops a request it cannot read as TLS.
  if (contains(text, "connecting to a SSL listener?")) {
    return fmt::format("the broker at {} closed the connection at the first request: it is likely a TLS listener; "
                       "check security.protocol (SSL or SASL_SSL) and the port",
                       broker_of(text));
  }
  if (contains(text, "SASL authentication error") || contains(text, "Authentication failed")) {
    std::string mechanism =
        property_of(settings, "sasl.mechanisms",
                    property_of(settings, "sasl.mechanism", settings.token_command.empty() ? "GSSAPI" : "OAUTHBEARER"));
    std::string cause =
        contains(text, "invalid credentials") || contains(text, "Invalid username or password")
            ? "invalid credentials"
            : std::string(text.substr(text.find(": ") == std::string_view::npos ? 0 : text.find(": ") + 2));
    std::string user = property_of(settings, "sasl.username", "");
    return fmt::format("SASL authentication failed{} ({}) at {}: {}; {}",
                       user.empty() ? "" : fmt::format(" for user '{}'", user), mechanism, broker_of(text), cause,
                       mechanism == "OAUTHBEARER" ? "check the token (--kafka-token-command) or sasl.oauthbearer.*"
                                                  : "check sasl.username and sasl.password");
  }
  if (contains(text, "SSL handshake failed") || contains(text, "SSL routines") ||
      contains(text, "SSL transport error")) {
    std::string cause;
    std::string hint;
    if (contains(text, "certificate verify failed")) {
      cause = "certificate verify failed";
      hint = "check ssl.ca.location (the CA that signed the brokers' certificates)";
    } else if (contains(text, "alert bad certificate") || contains(text, "certificate required") ||
               contains(text, "alert handshake failure")) {
      // TLS 1.3: the broker judges the client's certificate after the handshake, and says so in an alert.
      cause = "the broker refused the client certificate (or got none)";
      hint = "set ssl.certificate.location and ssl.key.location to a certificate its CA signed";
    } else if (contains(text, "wrong version number") || contains(text, "packet length too long")) {
      cause = "the listener does not speak TLS";
      hint = "check security.protocol and the port";
    } else {
      cause = std::string(text.substr(text.find("failed: ") == std::string_view::npos ? 0 : text.find("failed: ") + 8));
      hint = "check the ssl.* properties";
    }
    return fmt::format("TLS handshake with {} failed: {}; {}", broker_of(text), cause, hint);
  }
  return {};
}

void record_failure(HandleState& state, std::string words) {
  std::lock_guard lock(state.mutex);
  if (state.failure.empty()) {
    state.failure = std::move(words);
  }
}

void log_callback(const rd_kafka_t* rk, int level, const char* facility, const char* text) {
  auto* state = static_cast<HandleState*>(rd_kafka_opaque(rk));
  if (!state) {
    return;
  }
  if (std::string_view(facility) == "FAIL") {
    if (std::string words = refusal_in_words(*state->settings, text); !words.empty()) {
      record_failure(*state, std::move(words));
    }
  }
  // librdkafka logs every refused connection; an operator sees our one message instead, and the
  // library's own lines with -vv.
  if (state->settings->verbosity >= 2) {
    std::fprintf(stderr, "dedupctl: librdkafka[%d] %s: %s\n", level, facility, text);
  }
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// librdkafka asks for a token (at the first connection, and again at 80% of the last one's life):
// the token command's output, or a failure that ends the run naming the command, never its
// output (it may be a token).
void token_refresh(rd_kafka_t* rk, const char* /*config*/, void* opaque) {
  auto* state = static_cast<HandleState*>(opaque);
  const KafkaSettings& settings = *state->settings;
  auto run = process::run_shell(settings.token_command, settings.timeout_ms);
  std::string why = process::failure_of(run, settings.timeout_ms);
  core::BearerToken token;
  if (why.empty()) {
    token = core::parse_bearer_token(run.out, wall_ms());
    why = token.error;
  }
  if (why.empty()) {
    char errstr[512];
    std::string principal = token.principal.empty() ? "dedupctl" : token.principal;
    if (rd_kafka_oauthbearer_set_token(rk, token.token.c_str(), token.expires_at_ms, principal.c_str(), nullptr, 0,
                                       errstr, sizeof errstr) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      return;
    }
    why = fmt::format("librdkafka refused its token ({})", errstr);
  }
  std::string words =
      fmt::format("the Kafka token command '{}' failed: {}; run it by hand to see why", settings.token_command, why);
  rd_kafka_oauthbearer_set_token_failure(rk, words.c_str());
  record_failure(*state, std::move(words));
}

} // namespace

// Without the consumer close: our consumers assign and never commit or join a group, so there is
// nothing to leave, and with librdkafka 2.8 closing one that had fetched took a second (every
// audit that failed on its store took 1.03 s instead of 0.03 s).
void destroy_handle(rd_kafka_t* rk) {
  auto* state = static_cast<HandleState*>(rd_kafka_opaque(rk));
  rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  delete state;
}

std::string connection_failure(rd_kafka_t* rk) {
  auto* state = static_cast<HandleState*>(rd_kafka_opaque(rk));
  if (!state) {
    return {};
  }
  std::lock_guard lock(state->mutex);
  return state->failure;
}

void throw_if_refused(rd_kafka_t* rk) {
  if (std::string failure = connection_failure(rk); !failure.empty()) {
    throw UnreachableError(failure);
  }
}

KafkaHandle make_handle(rd_kafka_type_t type, const KafkaSettings& settings,
                        const std::vector<std::pair<std::string, std::string>>& defaults,
                        DeliveryCallback on_delivery) {
  if (settings.bootstrap.empty()) {
    throw UsageError("no Kafka brokers: give --bootstrap-server HOST:PORT (or DEDUPCTL_BOOTSTRAP_SERVER), "
                     "or read a kcat -J dump with --input");
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char errstr[512];
  auto set = [&](const std::string& name, const std::string& value, const std::string* user) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      // A -X value may be a secret (sasl.password with its name misspelt), and librdkafka quotes
      // an invalid value in its message: the value is never shown.
      std::string why = errstr;
      if (!value.empty()) {
        for (auto at = why.find(value); at != std::string::npos; at = why.find(value, at + 3)) {
          why.replace(at, value.size(), "***");
        }
      }
      throw UsageError(
          user ? fmt::format("invalid {} {}: {} (value not shown); see librdkafka's CONFIGURATION.md", *user, name, why)
               : fmt::format("cannot set Kafka property {}: {}", name, why));
    }
  };
  set("bootstrap.servers", settings.bootstrap, nullptr);
  set("socket.connection.setup.timeout.ms", std::to_string(std::max<std::int64_t>(1000, settings.timeout_ms)), nullptr);
  // No client metrics pushed to the user's brokers (KIP-714, on by default since librdkafka 2.5): a
  // command-line tool's are nobody's, and destroying a handle waits up to a second for its last
  // push, which came as a one-second stall of a 1 s scan now and then. -X can turn it on.
  set("enable.metrics.push", "false", nullptr);
  for (const auto& [name, value] : defaults) {
    set(name, value, nullptr);
  }
  if (!settings.token_command.empty()) {
    set("security.protocol", "SASL_SSL", nullptr);
    set("sasl.mechanisms", "OAUTHBEARER", nullptr);
    rd_kafka_conf_set_oauthbearer_token_refresh_cb(conf, token_refresh);
    // The refresh runs on librdkafka's background thread (below), not in our polls.
    rd_kafka_conf_enable_sasl_queue(conf, 1);
  }
  const std::string dash_x = "-X";
  for (std::size_t i = 0; i < settings.properties.size(); ++i) {
    const auto& [name, value] = settings.properties[i];
    set(name, value, i < settings.property_sources.size() ? &settings.property_sources[i] : &dash_x);
  }
  rd_kafka_conf_set_log_cb(conf, log_callback);
  if (on_delivery) {
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  }
  auto state = std::make_unique<HandleState>();
  state->settings = &settings;
  rd_kafka_conf_set_opaque(conf, state.get());
  rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    throw UsageError(fmt::format("cannot create a Kafka client: {}", errstr));
  }
  state.release(); // the handle's, deleted by destroy_handle
  KafkaHandle handle(rk);
  if (!settings.token_command.empty()) {
    if (rd_kafka_error_t* error = rd_kafka_sasl_background_callbacks_enable(rk)) {
      std::string why = rd_kafka_error_string(error);
      rd_kafka_error_destroy(error);
      throw UnreachableError(fmt::format("cannot run the Kafka token command in the background: {}", why));
    }
  }
  return handle;
}

[[noreturn]] void unreachable(const KafkaSettings& settings, std::string_view what, rd_kafka_resp_err_t err) {
  throw UnreachableError(fmt::format("cannot reach Kafka at {} ({}: {}); check --bootstrap-server and that the "
                                     "brokers are up, or raise --timeout",
                                     settings.bootstrap, what, rd_kafka_err2str(err)));
}

bool is_unreachable(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__TIMED_OUT ||
         err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__RESOLVE ||
         err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT || err == RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE;
}

int timeout_of(const KafkaSettings& settings) {
  return static_cast<int>(std::clamp<std::int64_t>(settings.timeout_ms, 1, 3'600'000));
}

// Asks for every topic's metadata rather than the one topic's: a per-topic request may create the
// topic on brokers with auto-creation on (the mock always does), and an audit must change nothing.
std::vector<std::int32_t> topic_partitions(rd_kafka_t* rk, const KafkaSettings& settings, const std::string& topic) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(settings.timeout_ms);
  while (true) {
    // The first request of a handle: asked in short waits, so that a refused login or TLS
    // handshake ends it at once (throw_if_refused) rather than at --timeout.
    const rd_kafka_metadata_t* raw = nullptr;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
    // (A request that ends before the connection is up says _TRANSPORT: asked again too.)
    while (err == RD_KAFKA_RESP_ERR__TIMED_OUT || err == RD_KAFKA_RESP_ERR__TRANSPORT) {
      throw_if_refused(rk);
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        break;
      }
      auto asked = std::chrono::steady_clock::now();
      err = rd_kafka_metadata(rk, 1, nullptr, &raw,
                              static_cast<int>(std::min<std::int64_t>(left.count(), k_refusal_check_ms)));
      if (err && std::chrono::steady_clock::now() - asked < std::chrono::milliseconds(50)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50)); // an answer at once: not a busy loop
      }
    }
    if (err) {
      throw_if_refused(rk);
      unreachable(settings, fmt::format("metadata for topic '{}'", topic), err);
    }
    Metadata md(raw);
    const rd_kafka_metadata_topic_t* found = nullptr;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (topic == md->topics[i].topic) {
        found = &md->topics[i];
      }
    }
    if (!found || found->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
      // A broker lists only the topics the principal may DESCRIBE: to it, a hidden topic does not exist.
      throw UsageError(fmt::format("topic '{}' does not exist at {}, or this principal may not DESCRIBE it; check "
                                   "--topic (and the topic's ACLs)",
                                   topic, settings.bootstrap));
    }
    if (found->err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(k_transient_backoff);
      continue;
    }
    if (found->err) {
      unreachable(settings, fmt::format("metadata for topic '{}'", topic), found->err);
    }
    std::vector<std::int32_t> ids;
    for (int i = 0; i < found->partition_cnt; ++i) {
      ids.push_back(found->partitions[i].id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }
}

PartitionList make_list(const std::vector<std::pair<std::string, std::int32_t>>& partitions, std::int64_t value) {
  PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
  for (const auto& [topic, partition] : partitions) {
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition)->offset = value;
  }
  return list;
}

std::optional<std::int64_t> list_offset(const rd_kafka_topic_partition_list_t* list, const std::string& topic,
                                        std::int32_t partition) {
  for (int i = 0; i < list->cnt; ++i) {
    const auto& elem = list->elems[i];
    if (elem.partition == partition && topic == elem.topic && !elem.err) {
      return elem.offset;
    }
  }
  return std::nullopt;
}

// Errors a partition answers for a moment while its leader is not yet (or no longer) taking
// requests: a topic just made (a KRaft broker lists it in metadata before its replicas exist), a
// leader moving. Asked again until the deadline.
bool is_transient_partition_error(rd_kafka_resp_err_t err) {
  switch (err) {
  case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
  case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART: // listed in metadata a moment before
  case RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH:
  case RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH:
    return true;
  default:
    return false;
  }
}

// ListOffsets with the earliest and the latest sentinel as the time, for every partition at once.
// Not rd_kafka_query_watermark_offsets, two requests a partition whose replies it notices only
// when the broker thread scans its requests, once a second (librdkafka#4878): with librdkafka 2.8
// on a real broker, one range resolution in twelve stalled 1-2 s on it. A partition not yet taking
// requests (is_transient_partition_error) is asked again until --timeout.
std::vector<std::pair<std::int64_t, std::int64_t>>
watermarks(rd_kafka_t* rk, const KafkaSettings& settings,
           const std::vector<std::pair<std::string, std::int32_t>>& partitions) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out(partitions.size());
  if (partitions.empty()) {
    return out;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_of(settings));
  for (std::int64_t end : {RD_KAFKA_OFFSET_BEGINNING, RD_KAFKA_OFFSET_END}) {
    const char* which = end == RD_KAFKA_OFFSET_END ? "high" : "low";
    PartitionList list;
    while (true) {
      list = make_list(partitions, end);
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      rd_kafka_resp_err_t err =
          rd_kafka_offsets_for_times(rk, list.get(), static_cast<int>(std::max<std::int64_t>(1, left.count())));
      // The first partition that failed says why, and where.
      const rd_kafka_topic_partition_t* failed = nullptr;
      for (int i = 0; i < list->cnt && !failed; ++i) {
        if (list->elems[i].err) {
          failed = &list->elems[i];
        }
      }
      rd_kafka_resp_err_t why = failed ? failed->err : err;
      if (!err && !failed) {
        break;
      }
      if (is_transient_partition_error(why) && std::chrono::steady_clock::now() + k_transient_backoff < deadline) {
        std::this_thread::sleep_for(k_transient_backoff);
        continue;
      }
      if (failed) {
        unreachable(settings, fmt::format("{} watermark of {}[{}]", which, failed->topic, failed->partition), why);
      }
      unreachable(settings,
                  fmt::format("{} watermarks of {}[{}]{}", which, partitions[0].first, partitions[0].second,
                              partitions.size() > 1 ? ", …" : ""),
                  why);
    }
    for (std::size_t k = 0; k < partitions.size(); ++k) {
      auto offset = list_offset(list.get(), partitions[k].first, partitions[k].second);
      if (!offset) {
        unreachable(settings, fmt::format("watermarks of {}[{}]", partitions[k].first, partitions[k].second),
                    RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION);
      }
      (end == RD_KAFKA_OFFSET_END ? out[k].second : out[k].first) = *offset;
    }
  }
  return out;
}

std::vector<std::pair<std::int64_t, std::int64_t>> watermarks_of(rd_kafka_t* rk, const KafkaSettings& settings,
                                                                 const std::string& topic) {
  std::vector<std::pair<std::string, std::int32_t>> partitions;
  for (auto partition : topic_partitions(rk, settings, topic)) {
    partitions.emplace_back(topic, partition);
  }
  return watermarks(rk, settings, partitions);
}

} // namespace dedupctl::connectors::kafka
