// discover against a table of keys: the candidates come from the keys that hold sampled ids, and
// only those a lookup confirms are kept, most found first.
#include "commands/pipeline/discover.hpp"
#include "core/discover/discover.hpp"
#include "core/identity/template_filter.hpp"
#include "core/util/encoding.hpp"
#include "tests/unit/fakes.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

namespace dedupctl::commands {
namespace {

using testing::FakeEventSource;
using testing::with_header_id;

// A store as a table: string keys with their values, hashes, sets and sorted sets by name.
class TableStore final : public DiscoverStore {
public:
  std::map<std::string, std::string> strings;
  std::map<std::string, std::set<std::string>> hashes, sets, zsets;
  std::vector<std::string> asked; // what count_found was asked, as "layout collection"

  std::vector<core::SampledKey> sample_keys(std::size_t limit) override {
    std::vector<core::SampledKey> out;
    auto add = [&](const auto& table, const char* type) {
      for (const auto& entry : table) {
        if (out.size() < limit) {
          out.push_back({entry.first, type});
        }
      }
    };
    add(strings, "string");
    add(hashes, "hash");
    add(sets, "set");
    add(zsets, "zset");
    return out;
  }

  std::int64_t count_found(const core::RecordLayout& layout, const std::string& collection,
                           const std::vector<std::string>& keys) override {
    asked.push_back(layout.name + " " + core::escape_non_utf8(collection));
    const std::set<std::string>* members = layout.shape == core::RecordShape::HashField      ? &hashes[collection]
                                           : layout.shape == core::RecordShape::SetMember    ? &sets[collection]
                                           : layout.shape == core::RecordShape::ScoredMember ? &zsets[collection]
                                                                                             : nullptr;
    std::int64_t n = 0;
    for (const auto& key : keys) {
      n += members ? members->count(key) : strings.count(key);
    }
    return n;
  }
};

std::string derive(const std::string& filters, const std::string& id) {
  std::string out;
  core::apply_template_filters(core::parse_template_filters(filters, "event_id"), id, out);
  return out;
}

FakeEventSource events(int n) {
  std::vector<testing::OwnedEvent> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(with_header_id(0, i, 1000, "évt-" + std::to_string(i), "{}"));
  }
  return FakeEventSource(out, 4);
}

TEST(DiscoverPipeline, FindsAPowertoolsPrefixAPlainTemplateAndACollection) {
  TableStore store;
  for (int i = 0; i < 6; ++i) {
    std::string id = "évt-" + std::to_string(i);
    store.strings["test-func.__main__.charge#" + derive("json-ascii|md5", id)] = R"({"status":"COMPLETED"})";
    if (i < 2) {
      store.strings["dedup:{billing}:" + id] = "done";
    }
    if (i < 4) {
      store.hashes["MetaData"].insert(id);
    }
    std::string name, member; // Camel's repository "orders", its members Java-serialized
    core::append_java_string("orders", name);
    core::append_java_string(id, member);
    store.sets[name].insert(member);
  }
  store.strings["unrelated"] = "x";
  for (int i = 0; i < 3; ++i) { // Camel's string repository "refunds", through Spring's default RedisTemplate
    std::string key;
    core::append_java_string("refunds:évt-" + std::to_string(i), key);
    store.strings[key] = "x";
  }
  auto source = events(8);
  DiscoverRequest request;
  request.sample = 8;
  auto result = run_discover(request, source, store);
  ASSERT_EQ(result.ids.size(), 8u);
  ASSERT_EQ(result.candidates.size(), 5u) << ::testing::PrintToString(result.tried);
  EXPECT_EQ(result.candidates[0].layout.name, "powertools-python");
  EXPECT_EQ(result.candidates[0].key_prefix, "test-func.__main__.charge");
  EXPECT_EQ(result.candidates[0].found, 6);
  std::set<std::string> rest;
  for (std::size_t i = 1; i < result.candidates.size(); ++i) {
    const auto& c = result.candidates[i];
    rest.insert(c.layout.name + "|" + c.key_template + "|" + c.collection + "|" + std::to_string(c.found));
  }
  EXPECT_EQ(rest, (std::set<std::string>{"plain|dedup:{{billing}}:{event_id}||2", "spring-hash||MetaData|4",
                                         "camel-set||orders|6", "camel-string|||3"}));
}

TEST(DiscoverPipeline, NothingMatchingIsNoCandidateAndSaysWhatWasTried) {
  TableStore store;
  store.strings["a"] = "1";
  store.hashes["h"] = {"zzz"};
  auto source = events(3);
  auto result = run_discover(DiscoverRequest{}, source, store);
  EXPECT_TRUE(result.candidates.empty());
  ASSERT_EQ(result.tried.size(), 1u);
  EXPECT_NE(result.tried[0].find("spring-hash"), std::string::npos);
}

TEST(Discover, JavaStringTextReadsCamelsSetNames) {
  std::string name;
  core::append_java_string("orders", name);
  EXPECT_EQ(core::java_string_text(name), "orders");
  EXPECT_FALSE(core::java_string_text("orders"));
  EXPECT_FALSE(core::java_string_text(name + "x"));
}

} // namespace
} // namespace dedupctl::commands

namespace dedupctl::commands {
namespace {

// A database as a table of tables: each with its columns and its rows (id, consumer).
class TableDatabase final : public InboxDiscoverStore {
public:
  std::vector<core::TableColumns> catalog;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> rows; // by --inbox-table

  std::vector<core::TableColumns> tables(std::size_t limit) override {
    return {catalog.begin(), catalog.begin() + static_cast<std::ptrdiff_t>(std::min(limit, catalog.size()))};
  }
  std::int64_t count_found(const core::LayoutCandidate& candidate, const std::vector<std::string>& ids,
                           std::string& consumer) override {
    std::map<std::string, std::int64_t> by_consumer;
    std::set<std::string> found;
    for (const auto& [id, owner] : rows[candidate.inbox_table]) {
      if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
        found.insert(id);
        ++by_consumer[owner];
      }
    }
    consumer.clear();
    for (const auto& [owner, n] : by_consumer) {
      if (consumer.empty() || n > by_consumer[consumer]) {
        consumer = owner;
      }
    }
    return static_cast<std::int64_t>(found.size());
  }
};

// The tables whose columns fit a library's inbox are candidates, whatever they are named; the
// lookups keep those that hold the sampled ids, with the consumer most rows belong to.
TEST(DiscoverPipeline, FindsTheInboxLayoutTableAndConsumerOfADatabase) {
  TableDatabase db;
  db.catalog = {{"public", "received_messages", {"consumer_id", "message_id", "creation_time", "payload"}},
                {"billing", "InboxState", {"Id", "MessageId", "ConsumerId", "Received", "Consumed", "Delivered"}},
                {"public", "Shipping_OutboxData", {"MessageId", "Dispatched", "DispatchedAt", "Operations"}},
                {"public", "orders", {"id", "customer", "created_at"}},
                {"public", "processed_events", {"event_id", "processed_at"}}};
  for (int i = 0; i < 6; ++i) {
    db.rows["received_messages"].emplace_back("évt-" + std::to_string(i), "billing-service");
  }
  db.rows["received_messages"].emplace_back("évt-1", "audit-service");
  db.rows["billing.\"InboxState\""].emplace_back("évt-9", "c0ffee");
  auto source = events(10);
  DiscoverResult result = run_discover(DiscoverRequest{}, source, db);
  ASSERT_EQ(result.candidates.size(), 2u) << result.tried.size();
  EXPECT_EQ(result.keys_sampled, 5);
  EXPECT_EQ(result.candidates[0].layout.name, "eventuate");
  EXPECT_EQ(result.candidates[0].found, 6);
  EXPECT_EQ(result.candidates[0].consumer, "billing-service");
  EXPECT_EQ(result.candidates[1].layout.name, "masstransit");
  EXPECT_EQ(result.candidates[1].inbox_table, "billing.\"InboxState\"");
  // Tried: every table that fits a layout, the unrelated one not at all.
  std::string tried = fmt::format("{}", fmt::join(result.tried, "; "));
  EXPECT_NE(tried.find("--layout nservicebus --inbox-table \"Shipping_OutboxData\": 0 of 10"), std::string::npos)
      << tried;
  EXPECT_NE(tried.find("--layout plain --inbox-table processed_events --inbox-consumer-column : 0 of 10"),
            std::string::npos)
      << tried;
  EXPECT_EQ(tried.find("orders"), std::string::npos) << tried;
  auto flags = core::audit_flags(result.candidates[0]);
  EXPECT_EQ(flags,
            (std::vector<std::pair<std::string, std::string>>{
                {"--layout", "eventuate"}, {"--inbox-table", "received_messages"}, {"--consumer", "billing-service"}}));
}

} // namespace
} // namespace dedupctl::commands
