#include "core/store/store_uri.hpp"

#include "core/store/secrets.hpp"

#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

namespace dedupctl::core {

namespace {

std::string percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      int value = 0;
      auto [ptr, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
      if (ec == std::errc{} && ptr == text.data() + i + 3) {
        out += static_cast<char>(value);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// "h1:p1,h2:p2" (a port may be left out: `default_port`).
bool parse_host_list(std::string_view text, int default_port, std::vector<HostPort>& out, std::string& why) {
  for (auto item : split(text, ',')) {
    HostPort node{std::string(item), default_port};
    auto colon = item.rfind(':');
    if (colon != std::string_view::npos) {
      node.host = std::string(item.substr(0, colon));
      if (!parse_whole(item.substr(colon + 1), node.port) || node.port <= 0 || node.port > 65535) {
        why = fmt::format("'{}' is not a port", item.substr(colon + 1));
        return false;
      }
    }
    if (node.host.empty()) {
      why = fmt::format("a node without a host in '{}'", text);
      return false;
    }
    out.push_back(std::move(node));
  }
  return true;
}

// The TLS parameters of a rediss URI's query ("sslmode=verify-ca&sslrootcert=/ca.pem"); on a
// clear-text scheme, any of them is an error. Returns why it is refused, or "".
std::string parse_tls_query(std::string_view query, std::string_view scheme, RedisTls& tls) {
  std::string tls_scheme = fmt::format("rediss{}", scheme.substr(5)); // redis+cluster -> rediss+cluster
  bool has_cert = false;
  bool has_key = false;
  for (auto item : split(query, '&')) {
    if (item.empty()) {
      continue;
    }
    auto eq = item.find('=');
    std::string name(item.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : percent_decode(item.substr(eq + 1));
    bool known =
        name == "sslmode" || name == "sslrootcert" || name == "sslcert" || name == "sslkey" || name == "sslsni";
    if (!known) {
      return fmt::format("unknown parameter '{}' (sslmode, sslrootcert, sslcert, sslkey, sslsni)", name);
    }
    if (!tls.enabled) {
      return fmt::format("{} needs {}://, TLS; {}:// is clear text", name, tls_scheme, scheme);
    }
    if (name == "sslmode") {
      if (value == "require") {
        tls.mode = TlsMode::Require;
      } else if (value == "verify-ca") {
        tls.mode = TlsMode::VerifyCa;
      } else if (value == "verify-full") {
        tls.mode = TlsMode::VerifyFull;
      } else {
        return fmt::format("sslmode '{}' is not for {}://, which always encrypts: require, verify-ca or "
                           "verify-full (the default); for clear text use {}://",
                           value, tls_scheme, scheme);
      }
    } else if (name == "sslsni") {
      if (value != "1" && value != "0") {
        return fmt::format("sslsni is 1 or 0 (got '{}')", value);
      }
      tls.sni = value == "1";
    } else if (value.empty()) {
      return fmt::format("{} is empty: give a file", name);
    } else if (name == "sslrootcert") {
      tls.root_cert = value;
    } else if (name == "sslcert") {
      tls.cert = value;
      has_cert = true;
    } else {
      tls.key = value;
      has_key = true;
    }
  }
  if (has_cert != has_key) {
    return "sslcert and sslkey go together: a client certificate and its key";
  }
  return {};
}

} // namespace

std::string HostPort::text() const { return fmt::format("{}:{}", host, port); }

namespace {

// The parts of parse_store_uri; each returns why the text is not a store URI, or "".

// redis+unix:///path[?db=N]
std::string parse_unix(std::string_view rest, StoreUri& uri) {
  auto query = rest.find('?');
  uri.unix_path = std::string(rest.substr(0, query));
  if (uri.unix_path.empty() || uri.unix_path[0] != '/') {
    return "the socket path must be absolute (redis+unix:///run/redis.sock)";
  }
  if (query != std::string_view::npos) {
    std::string_view params = rest.substr(query + 1);
    if (!params.starts_with("db=") || !parse_whole(params.substr(3), uri.db) || uri.db < 0) {
      return "the only query parameter is db=N";
    }
  }
  return {};
}

// [user:pass@] or [pass@], taken off the front of `rest`.
void take_credentials(std::string_view& rest, StoreUri& uri) {
  auto at = rest.rfind('@');
  if (at == std::string_view::npos) {
    return;
  }
  std::string_view credentials = rest.substr(0, at);
  auto colon = credentials.find(':');
  if (colon == std::string_view::npos) {
    uri.password = percent_decode(credentials); // redis://secret@host, as redis-cli -u takes it
  } else {
    uri.user = percent_decode(credentials.substr(0, colon));
    // redis://user:@host names the user only: the password comes from REDISCLI_AUTH, a file or a command.
    if (colon + 1 < credentials.size()) {
      uri.password = percent_decode(credentials.substr(colon + 1));
    }
  }
  rest = rest.substr(at + 1);
}

// A cluster's seeds (database 0 only), or the sentinels with the master's name and database.
std::string parse_seeds(std::string_view hostport, std::string_view path, StoreUri& uri) {
  bool cluster = uri.mode == StoreUri::RedisMode::Cluster;
  std::string why;
  if (!parse_host_list(hostport, cluster ? 6379 : 26379, uri.seeds, why)) {
    return why;
  }
  if (cluster) {
    // A cluster has database 0 only.
    return path.empty() || path == "0" ? "" : "a Redis Cluster has no databases but 0; leave out the /db";
  }
  auto db_slash = path.find('/');
  uri.master_name = std::string(path.substr(0, db_slash));
  if (uri.master_name.empty()) {
    return "the master's name is missing: redis+sentinel://h1:26379,h2:26379/MASTERNAME[/db], the name the "
           "sentinels monitor (SENTINEL MASTERS lists them)";
  }
  std::string_view db = db_slash == std::string_view::npos ? "" : path.substr(db_slash + 1);
  if (!db.empty() && (!parse_whole(db, uri.db) || uri.db < 0)) {
    return fmt::format("'{}' is not a database number", db);
  }
  return {};
}

// One server: host[:port][/db].
std::string parse_server(std::string_view hostport, std::optional<std::string_view> db, StoreUri& uri) {
  if (db && !db->empty() && (!parse_whole(*db, uri.db) || uri.db < 0)) {
    return fmt::format("'{}' is not a database number", *db);
  }
  auto colon = hostport.rfind(':');
  if (colon != std::string_view::npos && hostport.find(']') == std::string_view::npos) {
    uri.host = std::string(hostport.substr(0, colon));
    if (!parse_whole(hostport.substr(colon + 1), uri.port) || uri.port <= 0 || uri.port > 65535) {
      return fmt::format("'{}' is not a port", hostport.substr(colon + 1));
    }
  } else if (!hostport.empty()) {
    uri.host = std::string(hostport);
  }
  return uri.host.empty() ? "the host is empty" : "";
}

// redis[s][+cluster|+sentinel]://…: the scheme's mode and TLS, the query, credentials, then the rest.
std::string parse_redis(std::string_view text, StoreUri& uri) {
  std::string_view scheme = text.substr(0, text.find("://"));
  std::string_view plain_scheme = scheme;
  if (scheme.starts_with("rediss")) {
    uri.tls.enabled = true;
    plain_scheme = scheme == "rediss"            ? "redis"
                   : scheme == "rediss+cluster"  ? "redis+cluster"
                   : scheme == "rediss+sentinel" ? "redis+sentinel"
                                                 : "";
  }
  if (plain_scheme == "redis+cluster") {
    uri.mode = StoreUri::RedisMode::Cluster;
  } else if (plain_scheme == "redis+sentinel") {
    uri.mode = StoreUri::RedisMode::Sentinel;
  } else if (plain_scheme != "redis") {
    return "unknown scheme";
  }
  std::string_view rest = text.substr(scheme.size() + 3);
  if (auto query = rest.find('?'); query != std::string_view::npos) {
    if (std::string why = parse_tls_query(rest.substr(query + 1), plain_scheme, uri.tls); !why.empty()) {
      return why;
    }
    rest = rest.substr(0, query);
  }
  take_credentials(rest, uri);
  auto slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  if (uri.mode != StoreUri::RedisMode::Server) {
    return parse_seeds(hostport, slash == std::string_view::npos ? "" : rest.substr(slash + 1), uri);
  }
  return parse_server(hostport, slash == std::string_view::npos ? std::nullopt : std::optional(rest.substr(slash + 1)),
                      uri);
}

// dynamodb://TABLE[?region=R&endpoint=URL]
std::string parse_dynamodb(std::string_view rest, StoreUri& uri) {
  auto query = rest.find('?');
  uri.table = std::string(rest.substr(0, query));
  bool name_ok =
      uri.table.size() >= 3 && uri.table.size() <= 255 && std::all_of(uri.table.begin(), uri.table.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      });
  if (!name_ok) {
    return fmt::format("'{}' is not a DynamoDB table name (3 to 255 of a-z A-Z 0-9 _ - .)", uri.table);
  }
  if (query == std::string_view::npos) {
    return "";
  }
  for (auto item : split(rest.substr(query + 1), '&')) {
    if (item.empty()) {
      continue;
    }
    auto eq = item.find('=');
    std::string_view name = item.substr(0, eq);
    std::string value = eq == std::string_view::npos ? "" : percent_decode(item.substr(eq + 1));
    if (name == "region" && !value.empty()) {
      uri.region = value;
    } else if (name == "endpoint" && (value.starts_with("http://") || value.starts_with("https://"))) {
      uri.endpoint = value;
    } else {
      return fmt::format("unknown or empty parameter '{}' (region=NAME, endpoint=http[s]://HOST[:PORT])", name);
    }
  }
  return "";
}

// APPLICATION_ID/STORE, each of the characters Kafka allows in a topic name (the changelog is one).
std::string parse_kstreams(std::string_view rest, StoreUri& uri) {
  auto slash = rest.find('/');
  if (slash == std::string_view::npos) {
    return "no store: give kstreams://APPLICATION_ID/STORE (the store's name, as the topology names it)";
  }
  uri.application_id = std::string(rest.substr(0, slash));
  uri.store_name = std::string(rest.substr(slash + 1));
  auto legal = [](std::string_view name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
  };
  if (!legal(uri.application_id)) {
    return fmt::format("'{}' is not an application.id (one or more of a-z A-Z 0-9 . _ -)", uri.application_id);
  }
  if (!legal(uri.store_name)) {
    return fmt::format("'{}' is not a store name (one or more of a-z A-Z 0-9 . _ -)", uri.store_name);
  }
  return "";
}

} // namespace

StoreUri parse_store_uri(std::string_view text, std::string_view what) {
  StoreUri uri;
  uri.text = std::string(text);
  auto bad = [&](std::string_view why) -> StoreUri {
    throw UsageError(fmt::format("invalid {} '{}': {}; expected redis[s]://[user:pass@]host:port[/db][?sslmode=…], "
                                 "redis[s]+cluster://h1:p1,h2:p2, redis[s]+sentinel://h1:26379/MASTER[/db], "
                                 "redis+unix:///path[?db=N], postgres://…, dynamodb://TABLE[?region=R&endpoint=URL], "
                                 "kstreams://APPLICATION_ID/STORE, file:PATH or memory:",
                                 what, redact_secrets(text), why));
  };
  if (text.starts_with("file:")) {
    uri.kind = StoreUri::Kind::File;
    uri.path = std::string(text.substr(5));
    return uri.path.empty() ? bad("the file path is empty") : uri;
  }
  if (text == "memory:" || text.starts_with("memory:")) {
    uri.kind = StoreUri::Kind::Memory;
    return uri;
  }
  if (text.starts_with("dynamodb://")) {
    uri.kind = StoreUri::Kind::Dynamodb;
    std::string why = parse_dynamodb(text.substr(11), uri);
    return why.empty() ? uri : bad(why);
  }
  if (text.starts_with("kstreams://")) {
    uri.kind = StoreUri::Kind::Kstreams;
    std::string why = parse_kstreams(text.substr(11), uri);
    return why.empty() ? uri : bad(why);
  }
  bool has_scheme = text.find("://") != std::string_view::npos;
  if (text.starts_with("postgres://") || text.starts_with("postgresql://") ||
      (!has_scheme && text.find('=') != std::string_view::npos)) {
    uri.kind = StoreUri::Kind::Postgres;
    uri.conninfo = std::string(text);
    return uri;
  }
  std::string why = text.starts_with("redis+unix://") ? parse_unix(text.substr(13), uri) : parse_redis(text, uri);
  return why.empty() ? uri : bad(why);
}

std::string StoreUri::redacted() const { return redact_secrets(text); }

std::string StoreUri::changelog_topic() const { return application_id + "-" + store_name + "-changelog"; }

std::string_view store_kind_name(StoreUri::Kind kind) {
  switch (kind) {
  case StoreUri::Kind::Redis:
    return "redis";
  case StoreUri::Kind::Postgres:
    return "postgres";
  case StoreUri::Kind::File:
    return "file";
  case StoreUri::Kind::Memory:
    return "memory";
  case StoreUri::Kind::Dynamodb:
    return "dynamodb";
  case StoreUri::Kind::Kstreams:
    return "kstreams";
  }
  return "redis";
}

} // namespace dedupctl::core
