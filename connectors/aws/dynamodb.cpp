#include "connectors/aws/aws.hpp"
#include "connectors/http/curl.hpp"

#include "core/store/record_state.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

namespace dedupctl::connectors::aws {

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

constexpr int k_transport_attempts = 3;

// BatchGetItem's limit of keys a request.
constexpr std::size_t k_batch_keys = 100;

} // namespace

std::string dynamodb_endpoint(const core::StoreUri& uri, const std::string& region) {
  std::string out = !uri.endpoint.empty()                       ? uri.endpoint
                    : !env("AWS_ENDPOINT_URL_DYNAMODB").empty() ? env("AWS_ENDPOINT_URL_DYNAMODB")
                    : !env("AWS_ENDPOINT_URL").empty()          ? env("AWS_ENDPOINT_URL")
                                                       : fmt::format("https://dynamodb.{}.amazonaws.com", region);
  while (!out.empty() && out.back() == '/') {
    out.pop_back();
  }
  return out + "/";
}

struct DynamoClient::Handle {
  http::Curl curl;
};

DynamoClient::DynamoClient(const AwsSettings& settings) : m_settings(settings) {
  m_credentials = std::make_unique<Credentials>(m_settings);
  m_region = m_credentials->region();
  m_endpoint = dynamodb_endpoint(m_settings.uri, m_region);
}

DynamoClient::~DynamoClient() {
  for (auto* handle : m_pool) {
    delete handle;
  }
}

DynamoClient::Handle* DynamoClient::take() {
  std::lock_guard lock(m_pool_mutex);
  if (m_pool.empty()) {
    return new Handle{};
  }
  auto* handle = m_pool.back();
  m_pool.pop_back();
  return handle;
}

void DynamoClient::give(Handle* handle) {
  std::lock_guard lock(m_pool_mutex);
  m_pool.push_back(handle);
}

void DynamoClient::add_consumed(double units) {
  double current = m_consumed.load();
  while (!m_consumed.compare_exchange_weak(current, current + units)) {
  }
}

void DynamoClient::back_off(int attempt) const {
  // Full jitter over a doubling ceiling (the AWS SDKs' retry), at most 5 s a wait.
  thread_local std::mt19937 random{std::random_device{}()};
  std::int64_t ceiling = std::min<std::int64_t>(5000, m_settings.backoff_ms << std::min(attempt, 16));
  std::int64_t wait = std::uniform_int_distribution<std::int64_t>(ceiling / 2, ceiling)(random);
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait);
  while (std::chrono::steady_clock::now() < until) {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<std::int64_t>(wait, 20)));
  }
}

std::optional<std::string> DynamoClient::call(std::string_view action, const std::string& body, bool conditional) {
  const std::string& table = m_settings.uri.table;
  std::string target = fmt::format("X-Amz-Target: DynamoDB_20120810.{}", action);
  std::string sigv4 = fmt::format("aws:amz:{}:dynamodb", m_region);
  std::string last_failure;
  bool renewed = false;
  int unreachable = 0;
  for (int attempt = 0; attempt < m_settings.attempts; ++attempt) {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    auto credentials = m_credentials->current();
    http::Request request;
    request.url = m_endpoint;
    request.timeout_ms = m_settings.timeout_ms;
    request.headers = {"Content-Type: application/x-amz-json-1.0", target};
    request.post_body = body;
    request.aws_sigv4 = sigv4;
    request.access_key = credentials.access_key;
    request.secret_key = std::move(credentials.secret_key);
    if (!credentials.session_token.empty()) {
      request.headers.push_back("X-Amz-Security-Token: " + credentials.session_token);
    }
    Handle* handle = take();
    auto response = handle->curl.perform(request);
    give(handle);
    for (auto& header : request.headers) {
      std::fill(header.begin(), header.end(), '\0');
    }
    std::fill(request.secret_key.begin(), request.secret_key.end(), '\0');
    std::string& answer = response.body;
    long status = response.status;
    if (response.failure) {
      // A server that cannot be reached is tried three times (a blip), not as long as a throttled one.
      last_failure =
          fmt::format("cannot reach DynamoDB at {} ({} on table {}): {}", m_endpoint, action, table, *response.failure);
      if (++unreachable >= k_transport_attempts) {
        throw UnreachableError(fmt::format("{} (tried {} times)", last_failure, unreachable));
      }
      back_off(attempt);
      continue;
    }
    if (status == 200) {
      return answer;
    }
    auto error = core::parse_dynamodb_error(answer);
    std::string said = error.type.empty() ? fmt::format("HTTP {}", status) : error.type;
    if (!error.message.empty()) {
      said += ": " + error.message;
    }
    if (conditional && error.type == "ConditionalCheckFailedException") {
      return std::nullopt;
    }
    if (core::is_throttling(error.type) || status >= 500) {
      ++m_throttled;
      last_failure = fmt::format("DynamoDB at {} kept refusing {} on table {}: {}", m_endpoint, action, table, said);
      back_off(attempt);
      continue;
    }
    if (core::is_expired_token(error.type) && !renewed) {
      renewed = true;
      m_credentials->refused();
      continue;
    }
    if (core::is_table_not_found(error.type)) {
      throw UsageError(fmt::format("DynamoDB at {} has no table {} in region {} ({}): check the table's name and "
                                   "?region=",
                                   m_endpoint, table, m_region, action));
    }
    if (core::is_auth_refusal(error.type) || status == 401 || status == 403) {
      throw UnreachableError(fmt::format("DynamoDB at {} refused {} on table {} with credentials from {} (HTTP {}): {}",
                                         m_endpoint, action, table, credentials.source, status, said));
    }
    throw UnreachableError(fmt::format("DynamoDB at {} answered {} on table {} with HTTP {}: {}", m_endpoint, action,
                                       table, status, said));
  }
  throw UnreachableError(fmt::format("{} (tried {} times)", last_failure, m_settings.attempts));
}

DynamoStore::DynamoStore(std::shared_ptr<DynamoClient> client) : m_client(std::move(client)) {}

std::string DynamoStore::topology() const {
  return fmt::format("table {} in {} at {}", m_client->settings().uri.table, m_client->region(), m_client->endpoint());
}

void parallel_for(std::size_t count, std::size_t threads, const std::function<void(std::size_t)>& fn) {
  std::mutex mutex;
  std::size_t next = 0;
  std::exception_ptr failure;
  auto worker = [&] {
    while (true) {
      std::size_t i = 0;
      {
        std::lock_guard lock(mutex);
        if (next >= count || failure) {
          return;
        }
        i = next++;
      }
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) {
          failure = std::current_exception();
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(threads, count); ++t) {
    pool.emplace_back(worker);
  }
  worker();
  for (auto& thread : pool) {
    thread.join();
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
}

void DynamoStore::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
  const auto& settings = m_client->settings();
  // Each key once (a request may not name a key twice), in batches of 100, `in_flight` at once.
  std::unordered_map<std::string_view, std::size_t> index;
  std::vector<std::string_view> unique;
  for (const auto& key : keys) {
    if (index.emplace(key, unique.size()).second) {
      unique.push_back(key);
    }
  }
  std::vector<std::optional<std::string>> found(unique.size());
  std::size_t batches = (unique.size() + k_batch_keys - 1) / k_batch_keys;
  parallel_for(batches, static_cast<std::size_t>(std::max(1, settings.in_flight)), [&](std::size_t b) {
    auto first = unique.begin() + static_cast<std::ptrdiff_t>(b * k_batch_keys);
    std::vector<std::string_view> batch(
        first, first + static_cast<std::ptrdiff_t>(std::min(k_batch_keys, unique.size() - b * k_batch_keys)));
    for (int attempt = 0; !batch.empty(); ++attempt) {
      if (attempt >= settings.attempts) {
        throw UnreachableError(fmt::format(
            "DynamoDB at {} left {} keys of table {} unprocessed after {} BatchGetItem tries (throttled: the "
            "table's read capacity is exhausted); no verdict is given over keys not read",
            m_client->endpoint(), batch.size(), settings.uri.table, settings.attempts));
      }
      if (attempt > 0) {
        m_client->back_off(attempt - 1);
      }
      auto body = m_client->call("BatchGetItem", core::batch_get_body(settings.uri.table, settings.layout, batch));
      std::string error;
      auto answer = core::parse_batch_get(*body, settings.uri.table, settings.layout, error);
      if (!answer) {
        throw UnreachableError(fmt::format("DynamoDB at {}: {}", m_client->endpoint(), error));
      }
      m_client->add_consumed(answer->consumed_units);
      for (auto& record : answer->records) {
        if (auto it = index.find(record.key); it != index.end()) {
          found[it->second] = std::move(record.value); // each key's slot is this batch's alone
        }
      }
      batch.clear();
      for (const auto& key : answer->unprocessed) {
        auto it = index.find(key);
        if (it == index.end()) {
          throw UnreachableError(
              fmt::format("DynamoDB at {} returned an unprocessed key it was not asked", m_client->endpoint()));
        }
        batch.push_back(unique[it->second]);
      }
    }
  });
  m_values.clear();
  m_values.reserve(unique.size());
  for (auto& value : found) {
    m_values.push_back(value ? std::move(*value) : std::string());
  }
  out.assign(keys.size(), core::RecordState{});
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::size_t at = index.at(keys[i]);
    if (found[at]) {
      out[i] = core::present_record(std::nullopt, m_values[at]);
      core::read_record_value(settings.layout, m_values[at], out[i]);
    }
  }
}

OpenedTable open_table(const AwsSettings& settings) {
  core::check_dynamodb_layout(settings.layout);
  OpenedTable out;
  out.client = std::make_shared<DynamoClient>(settings);
  auto body = out.client->call("DescribeTable", core::describe_table_body(settings.uri.table));
  std::string error;
  auto facts = core::parse_describe_table(*body, error);
  if (!facts) {
    throw UnreachableError(fmt::format("DynamoDB at {}: {}", out.client->endpoint(), error));
  }
  const auto& schema = settings.layout.dynamodb;
  std::vector<std::pair<std::string, std::string>> expected{{schema.partition, "HASH"}};
  if (!schema.sort.empty()) {
    expected.emplace_back(schema.sort, "RANGE");
  }
  if (facts->key_schema != expected) {
    auto text = [](const auto& keys) {
      std::string said;
      for (const auto& [name, type] : keys) {
        said += fmt::format("{}{} ({})", said.empty() ? "" : ", ", name, type == "HASH" ? "partition" : "sort");
      }
      return said;
    };
    throw UsageError(fmt::format("table {}'s key is {}, not the layout's {}: give --layout-option partition-key=NAME "
                                 "(and sort-key=NAME with static-partition-key=VALUE)",
                                 settings.uri.table, text(facts->key_schema), text(expected)));
  }
  out.facts = std::move(*facts);
  return out;
}

core::TableTtl describe_ttl(DynamoClient& client) {
  auto body = client.call("DescribeTimeToLive", core::describe_ttl_body(client.settings().uri.table));
  std::string error;
  auto ttl = core::parse_describe_ttl(*body, error);
  if (!ttl) {
    throw UnreachableError(fmt::format("DynamoDB at {}: {}", client.endpoint(), error));
  }
  return *ttl;
}

std::int64_t scan_table(DynamoClient& client, int segments,
                        const std::function<void(const core::DynamoRecord&)>& on_record) {
  const auto& settings = client.settings();
  std::mutex mutex;
  std::atomic<std::int64_t> scanned{0};
  auto total = static_cast<std::size_t>(std::max(1, segments));
  parallel_for(total, total, [&](std::size_t segment) {
    std::string start;
    do {
      auto body = client.call(
          "Scan", core::scan_body(settings.uri.table, settings.layout, static_cast<int>(segment), segments, start));
      std::string error;
      auto answer = core::parse_scan(*body, settings.layout, error);
      if (!answer) {
        throw UnreachableError(fmt::format("DynamoDB at {}: {}", client.endpoint(), error));
      }
      client.add_consumed(answer->consumed_units);
      scanned += answer->scanned;
      {
        std::lock_guard lock(mutex);
        for (const auto& record : answer->records) {
          on_record(record);
        }
      }
      start = std::move(answer->last_key);
    } while (!start.empty());
  });
  return scanned.load();
}

} // namespace dedupctl::connectors::aws
