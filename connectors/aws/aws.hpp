#pragma once

#include "core/replay/replay.hpp"
#include "core/span.hpp"
#include "core/store/aws_config.hpp"
#include "core/store/dedup_store.hpp"
#include "core/store/dynamodb.hpp"
#include "core/store/layout.hpp"
#include "core/store/store_uri.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

// A DynamoDB table over its JSON protocol, every request signed by libcurl's own SigV4
// (CURLOPT_AWS_SIGV4), with credentials found as the AWS CLI finds them: the environment's keys,
// a web identity token through STS (as on EKS), the shared credentials and config files' profile
// (keys, credential_process, web_identity_token_file), refreshed before temporary ones lapse.
namespace dedupctl::connectors::aws {

struct AwsSettings {
  core::StoreUri uri; // dynamodb://TABLE[?region=&endpoint=]
  core::RecordLayout layout;
  std::string profile;           // --aws-profile or AWS_PROFILE
  bool profile_explicit = false; // --aws-profile: the profile before the environment's keys
  std::int64_t timeout_ms = 30'000;
  int in_flight = 8; // BatchGetItem requests at once
  int attempts = 10; // tries of a throttled request or unprocessed keys before exit 3
  std::int64_t backoff_ms = 50;
  const std::atomic<bool>* stop = nullptr;
  std::function<void(std::string_view)> note;
};

// Where the credentials come from, and the current ones (refreshed before they lapse). Thread-safe.
class Credentials {
public:
  // Throws UsageError when no source gives credentials or a file is malformed; UnreachableError when
  // STS or the process refuses.
  explicit Credentials(const AwsSettings& settings);
  core::AwsCredentials current();
  // The last ones were refused as expired: the next current() fetches anew (once a minute at most).
  void refused();
  std::string region() const { return m_region; }
  // The secret key and session token seen so far, for the caller to scrub from every output.
  std::vector<std::string> secrets() const;

private:
  enum class Source { Static, Process, WebIdentity };
  void fetch();

  AwsSettings m_settings;
  Source m_source = Source::Static;
  std::string m_process;
  std::string m_role_arn;
  std::string m_token_file;
  std::string m_session_name;
  std::string m_region;
  mutable std::mutex m_mutex;
  core::AwsCredentials m_current;
  std::vector<std::string> m_secrets;
};

// The endpoint the table is reached at: ?endpoint=, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, or
// DynamoDB's regional endpoint.
std::string dynamodb_endpoint(const core::StoreUri& uri, const std::string& region);

// Signed DynamoDB calls, several at once, each retried when throttled or failed in transit.
class DynamoClient {
public:
  explicit DynamoClient(const AwsSettings& settings);
  ~DynamoClient();
  DynamoClient(const DynamoClient&) = delete;
  DynamoClient& operator=(const DynamoClient&) = delete;

  // The body of a 200 answer to `action` (DynamoDB_20120810.ACTION). A throttled or failed request
  // is tried again (backoff doubling from backoff_ms, `attempts` in all). Throws UsageError for a
  // table that is not there (naming it, the region and the endpoint), UnreachableError naming the
  // action and the table for a refusal or a server that cannot be reached. A ConditionalCheckFailed
  // answer is returned as nullopt when `conditional` (a claim another holds).
  std::optional<std::string> call(std::string_view action, const std::string& body, bool conditional = false);
  Credentials& credentials() { return *m_credentials; }
  const std::string& endpoint() const { return m_endpoint; }
  const std::string& region() const { return m_region; }
  const AwsSettings& settings() const { return m_settings; }
  // What requests cost so far: read units DynamoDB said it consumed, throttled answers, retries.
  double consumed_units() const { return m_consumed.load(); }
  void add_consumed(double units);
  std::int64_t throttled() const { return m_throttled.load(); }
  // Waits the backoff of try `attempt` (from 0), stopping early when asked to stop.
  void back_off(int attempt) const;

private:
  struct Handle;
  Handle* take();
  void give(Handle* handle);

  AwsSettings m_settings;
  std::unique_ptr<Credentials> m_credentials;
  std::string m_region;
  std::string m_endpoint;
  std::mutex m_pool_mutex;
  std::vector<Handle*> m_pool;
  std::atomic<double> m_consumed{0};
  std::atomic<std::int64_t> m_throttled{0};
};

// A DynamoDB table of a JSON layout's records as a DedupStore: BatchGetItem, 100 keys a request,
// `in_flight` requests at once, UnprocessedKeys asked again with backoff; a key never answered is
// exit 3, never a verdict.
class DynamoStore final : public core::DedupStore {
public:
  explicit DynamoStore(std::shared_ptr<DynamoClient> client);
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override;
  std::string kind() const override { return "dynamodb"; }
  std::string topology() const override;
  DynamoClient& client() { return *m_client; }

private:
  std::shared_ptr<DynamoClient> m_client;
  std::vector<std::string> m_values;
};

// Opens the client and checks the table is there (DescribeTable): its key schema against the
// layout's (a mismatch is UsageError naming both). Returns the facts for a read-unit estimate.
struct OpenedTable {
  std::shared_ptr<DynamoClient> client;
  core::TableFacts facts;
};
OpenedTable open_table(const AwsSettings& settings);

// replay --via dynamodb://: claims as Powertools makes them (a conditional PutItem of its INPROGRESS
// record, with this run's id beside it), the completed record put over a delivered event's claim, a
// failed delivery's claim deleted. A claim refused is read back (GetItem, consistent) to say whose.
std::unique_ptr<core::ReplayPlacement> open_dynamo_replay(const AwsSettings& settings, const core::Span& ttl,
                                                          std::int64_t lease_ms, std::vector<std::string> markers,
                                                          std::function<std::int64_t()> now_ms);

// Runs fn(0) … fn(count - 1) on up to `threads` threads (the caller's among them); the first
// exception is rethrown once all have stopped, and no new index starts after it.
void parallel_for(std::size_t count, std::size_t threads, const std::function<void(std::size_t)>& fn);

// DescribeTimeToLive.
core::TableTtl describe_ttl(DynamoClient& client);

// Every record of the table, by a parallel Scan of `segments` segments; `on_record` is called under
// a lock, from the segments' threads. Returns the items scanned.
std::int64_t scan_table(DynamoClient& client, int segments,
                        const std::function<void(const core::DynamoRecord&)>& on_record);

} // namespace dedupctl::connectors::aws
