#include "core/identity/key_template.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;

TEST(StoreUri, ParsesRedisFormsAndNeverShowsThePassword) {
  auto uri = parse_store_uri("redis://app:s3cr%40t@cache.internal:6380/2");
  EXPECT_EQ(uri.kind, StoreUri::Kind::Redis);
  EXPECT_EQ(uri.host, "cache.internal");
  EXPECT_EQ(uri.port, 6380);
  EXPECT_EQ(uri.db, 2);
  EXPECT_EQ(uri.user, "app");
  EXPECT_EQ(uri.password, "s3cr@t");
  EXPECT_EQ(uri.redacted(), "redis://app:***@cache.internal:6380/2");
  auto plain = parse_store_uri("redis://127.0.0.1:6399");
  EXPECT_FALSE(plain.password.has_value());
  EXPECT_EQ(plain.redacted(), "redis://127.0.0.1:6399");
  EXPECT_EQ(parse_store_uri("redis://pw@h:1").password, "pw");
  EXPECT_EQ(parse_store_uri("redis://pw@h:1").redacted(), "redis://***@h:1");
  // The user alone: the password comes from REDISCLI_AUTH, a file or a command.
  auto user_only = parse_store_uri("rediss://app:@h:1");
  EXPECT_EQ(user_only.user, "app");
  EXPECT_FALSE(user_only.password.has_value());
  auto unix_socket = parse_store_uri("redis+unix:///run/redis.sock?db=3");
  EXPECT_EQ(unix_socket.unix_path, "/run/redis.sock");
  EXPECT_EQ(unix_socket.db, 3);
  EXPECT_EQ(parse_store_uri("file:keys.tsv").path, "keys.tsv");
  EXPECT_EQ(parse_store_uri("memory:").kind, StoreUri::Kind::Memory);
  EXPECT_EQ(parse_store_uri("postgres://u:pw@db/x").kind, StoreUri::Kind::Postgres);
  EXPECT_EQ(redact_secrets("host=db password=hunter2 user=u"), "host=db password=*** user=u");
}

TEST(StoreUri, AKafkaStreamsStoreIsItsApplicationAndStoreAndNamesItsChangelog) {
  auto uri = parse_store_uri("kstreams://orders-dedup/eventId-store");
  EXPECT_EQ(uri.kind, StoreUri::Kind::Kstreams);
  EXPECT_EQ(uri.application_id, "orders-dedup");
  EXPECT_EQ(uri.store_name, "eventId-store");
  EXPECT_EQ(uri.changelog_topic(), "orders-dedup-eventId-store-changelog");
  EXPECT_EQ(store_kind_name(uri.kind), "kstreams");
  for (const char* bad :
       {"kstreams://app", "kstreams://app/", "kstreams:///store", "kstreams://a b/store", "kstreams://app/store/x"}) {
    try {
      parse_store_uri(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("kstreams://APPLICATION_ID/STORE"), std::string::npos) << e.what();
    }
  }
}

TEST(StoreUri, BadUrisAreUsageErrorsWithoutThePassword) {
  for (const char* bad : {"redis://u:secret@h:notaport", "redis://u:secret@h:1/x", "mongodb://h",
                          "redis+unix://rel.sock", "file:", "redis://u:secret@:1"}) {
    try {
      parse_store_uri(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--store"), std::string::npos);
    }
  }
}

// rediss:// speaks TLS, with libpq's words as query parameters; verify-full (the CA and the host
// name) unless it says otherwise, the system's CAs unless sslrootcert names a file.
TEST(StoreUri, RedissIsTlsWithLibpqWords) {
  auto plain = parse_store_uri("redis://cache.example:6380/2");
  EXPECT_FALSE(plain.tls.enabled);
  auto uri = parse_store_uri("rediss://app:secret@cache.example:6380/2");
  EXPECT_EQ(uri.kind, StoreUri::Kind::Redis);
  EXPECT_EQ(uri.mode, StoreUri::RedisMode::Server);
  EXPECT_TRUE(uri.tls.enabled);
  EXPECT_EQ(uri.tls.mode, TlsMode::VerifyFull);
  EXPECT_EQ(uri.tls.root_cert, "");
  EXPECT_TRUE(uri.tls.sni);
  EXPECT_EQ(uri.host, "cache.example");
  EXPECT_EQ(uri.port, 6380);
  EXPECT_EQ(uri.db, 2);
  EXPECT_EQ(uri.password, "secret");
  EXPECT_EQ(uri.redacted(), "rediss://app:***@cache.example:6380/2");

  auto every = parse_store_uri("rediss://cache:6390/1?sslmode=verify-ca&sslrootcert=/etc/ca%20x.pem"
                               "&sslcert=/c.pem&sslkey=/k.pem&sslsni=0");
  EXPECT_EQ(every.tls.mode, TlsMode::VerifyCa);
  EXPECT_EQ(every.tls.root_cert, "/etc/ca x.pem");
  EXPECT_EQ(every.tls.cert, "/c.pem");
  EXPECT_EQ(every.tls.key, "/k.pem");
  EXPECT_FALSE(every.tls.sni);
  EXPECT_EQ(every.db, 1);
  EXPECT_EQ(every.port, 6390);
  EXPECT_EQ(parse_store_uri("rediss://cache?sslmode=require").tls.mode, TlsMode::Require);
  EXPECT_EQ(parse_store_uri("rediss://cache?sslmode=require").port, 6379);

  auto cluster = parse_store_uri("rediss+cluster://app:pw@10.0.0.1:7000,10.0.0.2:7001?sslrootcert=/ca.pem");
  EXPECT_EQ(cluster.mode, StoreUri::RedisMode::Cluster);
  EXPECT_TRUE(cluster.tls.enabled);
  ASSERT_EQ(cluster.seeds.size(), 2u);
  EXPECT_EQ(cluster.seeds[1], (HostPort{"10.0.0.2", 7001}));
  EXPECT_EQ(cluster.tls.root_cert, "/ca.pem");

  auto sentinel = parse_store_uri("rediss+sentinel://s1:26379,s2/orders-dedup/3?sslmode=verify-full");
  EXPECT_EQ(sentinel.mode, StoreUri::RedisMode::Sentinel);
  EXPECT_TRUE(sentinel.tls.enabled);
  EXPECT_EQ(sentinel.master_name, "orders-dedup");
  EXPECT_EQ(sentinel.db, 3);
}

// A parameter that would weaken or be ignored is refused before anything is contacted: TLS words
// on a clear-text scheme, a mode that would not encrypt, a name it does not know.
TEST(StoreUri, TlsParametersThatCannotHoldAreRefused) {
  struct Case {
    const char* uri;
    const char* says;
  };
  for (const Case& c : {
           Case{"redis://u:secret@h:1?sslmode=require", "sslmode needs rediss://"},
           Case{"redis+cluster://h:1?sslrootcert=/ca.pem", "sslrootcert needs rediss+cluster://"},
           Case{"rediss://u:secret@h:1?sslmode=disable", "sslmode 'disable'"},
           Case{"rediss://u:secret@h:1?sslmode=prefer", "sslmode 'prefer'"},
           Case{"rediss://u:secret@h:1?sslmdoe=require", "unknown parameter 'sslmdoe'"},
           Case{"rediss://u:secret@h:1?sslsni=maybe", "sslsni is 1 or 0"},
           Case{"rediss://u:secret@h:1?sslcert=/c.pem", "sslcert and sslkey go together"},
           Case{"rediss://u:secret@h:1?sslrootcert=", "sslrootcert is empty"},
           Case{"rediss+unix:///run/redis.sock", "unknown scheme"},
       }) {
    try {
      parse_store_uri(c.uri);
      ADD_FAILURE() << "accepted " << c.uri;
    } catch (const UsageError& e) {
      std::string what = e.what();
      EXPECT_EQ(what.find("secret"), std::string::npos) << what;
      EXPECT_NE(what.find(c.says), std::string::npos) << c.uri << ": " << what;
    }
  }
}

TEST(StoreUri, ClusterAndSentinelForms) {
  auto cluster = parse_store_uri("redis+cluster://app:pw@10.0.0.1:7000,10.0.0.2,10.0.0.3:7002");
  EXPECT_EQ(cluster.mode, StoreUri::RedisMode::Cluster);
  ASSERT_EQ(cluster.seeds.size(), 3u);
  EXPECT_EQ(cluster.seeds[1], (HostPort{"10.0.0.2", 6379}));
  EXPECT_EQ(cluster.seeds[2], (HostPort{"10.0.0.3", 7002}));
  EXPECT_EQ(cluster.user, "app");
  EXPECT_EQ(cluster.password, "pw");
  EXPECT_EQ(cluster.redacted().find("pw"), std::string::npos);

  auto sentinel = parse_store_uri("redis+sentinel://s1:26379,s2/orders-dedup/3");
  EXPECT_EQ(sentinel.mode, StoreUri::RedisMode::Sentinel);
  ASSERT_EQ(sentinel.seeds.size(), 2u);
  EXPECT_EQ(sentinel.seeds[1], (HostPort{"s2", 26379}));
  EXPECT_EQ(sentinel.master_name, "orders-dedup");
  EXPECT_EQ(sentinel.db, 3);
  EXPECT_EQ(parse_store_uri("redis://h:1").mode, StoreUri::RedisMode::Server);
}

TEST(StoreUri, ClusterAndSentinelMistakesAreUsageErrors) {
  auto message = [](const char* text) {
    try {
      parse_store_uri(text);
    } catch (const dedupctl::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("redis+sentinel://s1:26379").find("the master's name is missing"), std::string::npos);
  EXPECT_NE(message("redis+sentinel://s1:26379/").find("the master's name is missing"), std::string::npos);
  EXPECT_NE(message("redis+cluster://h1:7000/2").find("no databases but 0"), std::string::npos);
  EXPECT_NE(message("redis+cluster://h1:7000,h2:x").find("'x' is not a port"), std::string::npos);
  EXPECT_NE(message("redis+cluster://h1:7000,,h2").find("a node without a host"), std::string::npos);
  EXPECT_NE(message("redis+sentinel://:pw@s1:99999/m").find("'99999' is not a port"), std::string::npos);
  EXPECT_EQ(message("redis+sentinel://:s3cr3t@s1:x/m").find("s3cr3t"), std::string::npos) << "redacted";
}
