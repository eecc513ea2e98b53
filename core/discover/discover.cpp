#include "core/discover/discover.hpp"

#include "core/identity/template_filter.hpp"
#include "core/util/encoding.hpp"
#include "core/util/text.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace dedupctl::core {

namespace {

std::string placeholder(const Derivation& d) {
  return d.filters.empty() ? "{event_id}" : "{event_id|" + d.filters + "}";
}

struct Match {
  std::string layout;
  std::string key_template;
  std::string key_prefix;
};

// What a key holding `derived` (the id through derivation `d`) at `at` says of the key template.
Match match_of(const Derivation& d, const std::string& key, std::size_t at, std::size_t size) {
  std::string_view before = std::string_view(key).substr(0, at);
  std::string_view after = std::string_view(key).substr(at + size);
  if (d.layout != "plain" && after.empty() && before.size() > 1 && before.back() == '#') {
    return Match{d.layout, "", std::string(before.substr(0, before.size() - 1))};
  }
  return Match{"plain", double_braces(before) + placeholder(d) + double_braces(after), ""};
}

void add_collections(const std::vector<SampledKey>& keys, std::vector<LayoutCandidate>& out) {
  for (const auto& sampled : keys) {
    auto add = [&](const std::string& layout, std::string collection, std::string key_template = "") {
      LayoutCandidate c;
      c.layout = find_layout(layout);
      c.collection = std::move(collection);
      c.key_template = std::move(key_template);
      out.push_back(std::move(c));
    };
    if (sampled.type == "hash") {
      add("spring-hash", sampled.key);
    } else if (sampled.type == "zset") {
      add("zset", sampled.key);
    } else if (sampled.type == "set") {
      if (auto name = java_string_text(sampled.key)) {
        add("camel-set", *name);
      }
    } else if (sampled.type == "MBbloom--" || sampled.type == "bloomfltr") { // RedisBloom, Redis 8; valkey-bloom
      add("redis-bloom", sampled.key);
    }
  }
}

} // namespace

std::string LayoutCandidate::lookup_template() const {
  return key_template.empty() ? layout_key_template(layout, key_prefix, "") : key_template;
}

std::vector<std::pair<std::string, std::string>> audit_flags(const LayoutCandidate& candidate) {
  std::vector<std::pair<std::string, std::string>> flags{{"--layout", candidate.layout.name}};
  for (const auto& [flag, value] :
       {std::pair{"--key-prefix", &candidate.key_prefix}, std::pair{"--collection", &candidate.collection},
        std::pair{"--key-template", &candidate.key_template}, std::pair{"--inbox-table", &candidate.inbox_table},
        std::pair{"--consumer", &candidate.consumer}}) {
    if (!value->empty()) {
      flags.emplace_back(flag, *value);
    }
  }
  for (const auto& flag : candidate.inbox_flags) {
    flags.push_back(flag);
  }
  return flags;
}

std::string inbox_table_name(const TableColumns& table) {
  auto name = [](const std::string& part) {
    bool plain =
        !part.empty() && !(part[0] >= '0' && part[0] <= '9') && std::all_of(part.begin(), part.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
        });
    if (plain) {
      return part;
    }
    std::string out = "\"";
    for (char c : part) {
      out += c == '"' ? std::string("\"\"") : std::string(1, c);
    }
    return out + "\"";
  };
  return (table.schema.empty() || table.schema == "public" ? "" : name(table.schema) + ".") + name(table.table);
}

std::vector<LayoutCandidate> inbox_candidates(const std::vector<TableColumns>& tables) {
  std::vector<RecordLayout> layouts;
  for (auto name : layout_names()) {
    RecordLayout layout = find_layout(name);
    if (layout.home == LayoutHome::Inbox || layout.home == LayoutHome::Any) {
      layouts.push_back(std::move(layout));
    }
  }
  std::vector<LayoutCandidate> out;
  for (const auto& table : tables) {
    auto has = [&](const std::string& column) {
      return std::find(table.columns.begin(), table.columns.end(), column) != table.columns.end();
    };
    for (const auto& layout : layouts) {
      const InboxSchema& schema = layout.inbox() ? layout.inbox_schema : InboxSchema{};
      bool fits = has(schema.id_column) && has(schema.time_column);
      for (const auto* column : {&schema.status_column, &schema.in_progress_column}) {
        fits = fits && (column->empty() || has(*column));
      }
      // The generic inbox's consumer column is optional (--inbox-consumer-column ''); a library's is not.
      if (!fits || (layout.inbox() && !schema.consumer_column.empty() && !has(schema.consumer_column))) {
        continue;
      }
      LayoutCandidate candidate;
      candidate.layout = layout;
      candidate.inbox_table = inbox_table_name(table);
      candidate.layout.inbox_schema.table = candidate.inbox_table;
      if (!layout.inbox() && !has(schema.consumer_column)) {
        candidate.inbox_flags.emplace_back("--inbox-consumer-column", "");
        candidate.layout.inbox_schema.consumer_column.clear();
      }
      out.push_back(std::move(candidate));
    }
  }
  return out;
}

const std::vector<Derivation>& derivations() {
  static const std::vector<Derivation> all{
      {"", "plain"},
      {"json-ascii|md5", "powertools-python"},
      {"json|md5|base64", "powertools-typescript"},
      {"json|md5", "plain"}, // Powertools' hash where JSON.stringify and json.dumps agree, hex
      {"md5", "plain"},
      {"sha1", "plain"},
      {"sha256", "plain"},
  };
  return all;
}

std::optional<std::string> java_string_text(std::string_view bytes) {
  if (bytes.size() < 7 || bytes.substr(0, 5) != std::string_view("\xac\xed\x00\x05\x74", 5)) {
    return std::nullopt;
  }
  std::size_t size = (static_cast<unsigned char>(bytes[5]) << 8) | static_cast<unsigned char>(bytes[6]);
  if (bytes.size() != 7 + size) {
    return std::nullopt;
  }
  std::string text(bytes.substr(7));
  std::string back;
  append_java_string(text, back);
  if (back != bytes) {
    return std::nullopt; // modified UTF-8 that plain UTF-8 does not read back (NUL, astral)
  }
  return text;
}

std::vector<LayoutCandidate> layout_candidates(const std::vector<std::string>& ids,
                                               const std::vector<SampledKey>& keys) {
  // Every id's derivations, longest first within a key so that "e-1" does not match inside "e-17".
  struct Derived {
    std::string text;
    std::size_t derivation;
    std::size_t id;
  };
  std::vector<Derived> derived;
  for (std::size_t d = 0; d < derivations().size(); ++d) {
    auto filters = derivations()[d].filters.empty() ? std::vector<TemplateFilter>{}
                                                    : parse_template_filters(derivations()[d].filters, "event_id");
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::string text;
      apply_template_filters(filters, ids[i], text);
      if (!text.empty()) {
        derived.push_back(Derived{std::move(text), d, i});
      }
    }
  }
  std::stable_sort(derived.begin(), derived.end(),
                   [](const auto& a, const auto& b) { return a.text.size() > b.text.size(); });
  std::map<std::tuple<std::string, std::string, std::string>, std::set<std::size_t>> matched;
  for (const auto& sampled : keys) {
    if (sampled.type != "string") {
      continue;
    }
    // A Java-serialized "<repository>:<id>" (Camel's string repository through a RedisTemplate).
    if (auto text = java_string_text(sampled.key)) {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (text->size() > ids[i].size() + 1 && text->ends_with(":" + ids[i])) {
          matched[{"camel-string", "", text->substr(0, text->size() - ids[i].size() - 1)}].insert(i);
          break;
        }
      }
      continue;
    }
    for (const auto& candidate : derived) {
      auto at = sampled.key.find(candidate.text);
      if (at == std::string::npos) {
        continue;
      }
      Match m = match_of(derivations()[candidate.derivation], sampled.key, at, candidate.text.size());
      matched[{m.layout, m.key_template, m.key_prefix}].insert(candidate.id);
      break;
    }
  }
  std::vector<LayoutCandidate> out;
  for (const auto& [what, found_ids] : matched) {
    LayoutCandidate c;
    c.layout = find_layout(std::get<0>(what));
    c.key_template = std::get<1>(what);
    c.key_prefix = std::get<2>(what);
    c.hinted = static_cast<std::int64_t>(found_ids.size());
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.hinted > b.hinted; });
  add_collections(keys, out);
  return out;
}

} // namespace dedupctl::core
