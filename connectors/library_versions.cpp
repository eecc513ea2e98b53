#include "connectors/library_versions.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <openssl/crypto.h>
#include <pqxx/version>

#include <array>

namespace dedupctl::connectors {

namespace {

std::string rdkafka_features() {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::array<char, 512> features{};
  std::size_t size = features.size();
  std::string out;
  if (rd_kafka_conf_get(conf, "builtin.features", features.data(), &size) == RD_KAFKA_CONF_OK) {
    out = features.data();
  }
  rd_kafka_conf_destroy(conf);
  return out;
}

} // namespace

std::vector<std::pair<std::string, std::string>> library_versions() {
  int pq = PQlibVersion(); // 150018 for 15.18
  return {
      {"librdkafka", fmt::format("{} (builtin.features {})", rd_kafka_version_str(), rdkafka_features())},
      // hiredis_ssl is linked in: the TLS connections of rediss://.
      {"hiredis", fmt::format("{}.{}.{} (with hiredis_ssl)", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH)},
      {"libpqxx", PQXX_VERSION},
      {"libpq", fmt::format("{}.{}", pq / 10000, pq % 10000)},
      {"OpenSSL", OpenSSL_version(OPENSSL_VERSION_STRING)},
  };
}

} // namespace dedupctl::connectors
