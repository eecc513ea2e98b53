#pragma once

#include "core/store/secrets.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dedupctl::core {

struct HostPort {
  std::string host;
  int port = 0;
  bool operator==(const HostPort&) const = default;
  std::string text() const;
};

// rediss://: TLS, with libpq's words and meanings as query parameters (one vocabulary for both stores).
enum class TlsMode {
  Require,    // encrypted, the certificate not verified (said in a warning)
  VerifyCa,   // the certificate chains to a trusted CA
  VerifyFull, // that, and it names the host connected to (the default)
};
struct RedisTls {
  bool enabled = false; // rediss, rediss+cluster, rediss+sentinel
  TlsMode mode = TlsMode::VerifyFull;
  std::string root_cert; // sslrootcert: a CA file; empty: the system's store
  std::string cert;      // sslcert and sslkey: a client certificate and its key (PEM files)
  std::string key;
  bool sni = true; // sslsni: send the host name (Server Name Indication)
};

// A --store / --via URI: redis://[user:pass@]host:port[/db] (one server, or any node of a Redis
// Cluster, which is detected), redis+cluster://[user:pass@]h1:p1[,h2:p2…] (a cluster's seed
// list), redis+sentinel://[user:pass@]h1:26379[,h2:p2…]/MASTERNAME[/db] (the master the sentinels
// name; the credentials are the master's), redis+unix:///path[?db=N], postgres://… or a libpq
// conninfo, file:PATH (a snapshot), memory:. rediss://, rediss+cluster:// and rediss+sentinel://
// are the same over TLS, with ?sslmode=…&sslrootcert=…&sslcert=…&sslkey=…&sslsni=….
// dynamodb://TABLE[?region=R&endpoint=URL]: a DynamoDB table (region and endpoint else from the
// environment and the AWS config, as the AWS CLI finds them).
// kstreams://APPLICATION_ID/STORE: a Kafka Streams state store, read from its changelog topic
// (APPLICATION_ID-STORE-changelog) on the audited cluster.
struct StoreUri {
  enum class Kind { Redis, Postgres, File, Memory, Dynamodb, Kstreams };
  enum class RedisMode { Server, Cluster, Sentinel };
  Kind kind = Kind::Redis;
  RedisMode mode = RedisMode::Server; // Server: a cluster node is detected on connect
  std::string host = "127.0.0.1";
  int port = 6379;
  std::vector<HostPort> seeds; // redis+cluster: the seed nodes; redis+sentinel: the sentinels
  std::string master_name;     // redis+sentinel
  std::string unix_path;       // redis+unix
  int db = 0;
  std::string user;
  std::optional<std::string> password;
  RedisTls tls;
  std::string path;           // file:
  std::string conninfo;       // postgres
  std::string table;          // dynamodb
  std::string region;         // dynamodb: "" until the environment or the profile says
  std::string endpoint;       // dynamodb: "" for https://dynamodb.REGION.amazonaws.com
  std::string application_id; // kstreams: the application.id (its consumer group)
  std::string store_name;     // kstreams: the state store's name
  std::string text;           // as given

  // kstreams: the store's changelog topic as Kafka Streams names it, APPLICATION_ID-STORE-changelog.
  std::string changelog_topic() const;

  // The URI for messages and reports: the password replaced by "***".
  std::string redacted() const;
};

// The kind as reports and messages name it: redis, postgres, file, memory, dynamodb, kstreams.
std::string_view store_kind_name(StoreUri::Kind kind);

// Throws UsageError naming the flag.
StoreUri parse_store_uri(std::string_view text, std::string_view what = "--store");

} // namespace dedupctl::core
