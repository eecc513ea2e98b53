// discover against a table of keys: the candidates come from the keys that hold sampled ids, and
// only those a lookup confirms are kept, most found first.
#include "commands/pipeline/discover.hpp"
#include "core/discover/discover.hpp"
#include "core/identity/template_filter.hpp"
#include "core/util/encoding.hpp"
#include "tests/unit/fakes.hpp"

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
  auto source = events(8);
  DiscoverRequest request;
  request.sample = 8;
  auto result = run_discover(request, source, store);
  ASSERT_EQ(result.ids.size(), 8u);
  ASSERT_EQ(result.candidates.size(), 4u) << ::testing::PrintToString(result.tried);
  EXPECT_EQ(result.candidates[0].layout.name, "powertools-python");
  EXPECT_EQ(result.candidates[0].key_prefix, "test-func.__main__.charge");
  EXPECT_EQ(result.candidates[0].found, 6);
  std::set<std::string> rest;
  for (std::size_t i = 1; i < result.candidates.size(); ++i) {
    const auto& c = result.candidates[i];
    rest.insert(c.layout.name + "|" + c.key_template + "|" + c.collection + "|" + std::to_string(c.found));
  }
  EXPECT_EQ(rest, (std::set<std::string>{"plain|dedup:{{billing}}:{event_id}||2", "spring-hash||MetaData|4",
                                         "camel-set||orders|6"}));
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
