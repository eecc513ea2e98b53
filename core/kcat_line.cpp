#include "core/kcat_line.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <cstring>
#include <utility>
#include <vector>

namespace dedupctl::core {

struct KcatLineParser::Impl {
  simdjson::ondemand::parser parser;
  std::vector<char> padded;
  // Per event of the batch being built: its first header and how many.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> header_ranges;
};

KcatLineParser::KcatLineParser() : m_impl(std::make_unique<Impl>()) {}
KcatLineParser::~KcatLineParser() = default;

namespace {

using simdjson::ondemand::json_type;

// A string or null; false when the value is neither.
bool nullable_string(simdjson::ondemand::value value, Arena& arena, std::optional<std::string_view>& out) {
  json_type type;
  if (value.type().get(type)) {
    return false;
  }
  if (type == json_type::null) {
    out.reset();
    return true;
  }
  std::string_view text;
  if (type != json_type::string || value.get_string().get(text)) {
    return false;
  }
  out = arena.copy(text);
  if (!out->data()) {
    out = std::string_view{"", 0}; // empty, not null
  }
  return true;
}

} // namespace

bool KcatLineParser::parse(std::string_view line, EventBatch& batch, std::string& error) {
  auto& impl = *m_impl;
  if (impl.header_ranges.size() != batch.events.size()) {
    impl.header_ranges.resize(batch.events.size(), {0, 0});
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) {
    line.remove_suffix(1);
  }
  if (impl.padded.size() < line.size() + simdjson::SIMDJSON_PADDING) {
    impl.padded.resize(line.size() + simdjson::SIMDJSON_PADDING);
  }
  std::memcpy(impl.padded.data(), line.data(), line.size());
  std::memset(impl.padded.data() + line.size(), 0, simdjson::SIMDJSON_PADDING);

  std::size_t headers_before = batch.headers.size();
  auto fail = [&](std::string message) {
    batch.headers.resize(headers_before);
    error = std::move(message);
    return false;
  };

  simdjson::ondemand::document doc;
  if (impl.parser.iterate(impl.padded.data(), line.size(), impl.padded.size()).get(doc)) {
    return fail("not JSON");
  }
  simdjson::ondemand::object object;
  if (doc.get_object().get(object)) {
    auto first = line.find_first_not_of(" \t");
    return fail(first != std::string_view::npos && line[first] == '{'
                    ? "not JSON"
                    : "not a JSON object (expected a kcat -J envelope)");
  }
  Event event;
  bool has_partition = false;
  bool has_offset = false;
  for (auto field : object) {
    std::string_view name;
    if (field.unescaped_key().get(name)) {
      return fail("not JSON");
    }
    // unescaped_key() points into the parser's string buffer: compare before reading the value.
    std::string key_name(name);
    simdjson::ondemand::value value;
    if (field.value().get(value)) {
      return fail("not JSON");
    }
    if (key_name == "topic") {
      std::optional<std::string_view> topic;
      if (!nullable_string(value, batch.arena, topic)) {
        return fail("\"topic\" is not a string");
      }
      event.topic = topic.value_or(std::string_view{});
    } else if (key_name == "partition") {
      std::int64_t partition = 0;
      if (value.get_int64().get(partition) || partition < 0 || partition > INT32_MAX) {
        return fail("\"partition\" is not a partition number");
      }
      event.partition = static_cast<std::int32_t>(partition);
      has_partition = true;
    } else if (key_name == "offset") {
      if (value.get_int64().get(event.offset) || event.offset < 0) {
        return fail("\"offset\" is not an offset");
      }
      has_offset = true;
    } else if (key_name == "ts") {
      if (value.get_int64().get(event.timestamp_ms)) {
        return fail("\"ts\" is not a timestamp in milliseconds");
      }
    } else if (key_name == "key") {
      if (!nullable_string(value, batch.arena, event.key)) {
        return fail("\"key\" is not a string or null");
      }
    } else if (key_name == "payload") {
      if (!nullable_string(value, batch.arena, event.payload)) {
        return fail("\"payload\" is not a string or null");
      }
    } else if (key_name == "headers") {
      json_type type;
      if (value.type().get(type)) {
        return fail("not JSON");
      }
      if (type == json_type::null) {
        continue;
      }
      simdjson::ondemand::array array;
      if (value.get_array().get(array)) {
        return fail("\"headers\" is not kcat's flat [name, value, …] array");
      }
      bool expect_name = true;
      for (auto item : array) {
        simdjson::ondemand::value element;
        if (item.get(element)) {
          return fail("not JSON");
        }
        std::optional<std::string_view> text;
        if (!nullable_string(element, batch.arena, text) || (expect_name && !text)) {
          return fail("\"headers\" is not kcat's flat [name, value, …] array of strings");
        }
        if (expect_name) {
          batch.headers.push_back(Header{*text, std::nullopt});
        } else {
          batch.headers.back().value = text;
        }
        expect_name = !expect_name;
      }
      if (!expect_name) {
        return fail("\"headers\" has a name without a value");
      }
    } else {
      // tstype, broker, key_error, … are not needed; skip_child happens on the next iteration.
    }
  }
  if (!has_partition || !has_offset) {
    return fail(fmt::format("missing \"{}\"", has_partition ? "offset" : "partition"));
  }
  impl.header_ranges.emplace_back(static_cast<std::uint32_t>(headers_before),
                                  static_cast<std::uint32_t>(batch.headers.size() - headers_before));
  batch.events.push_back(event);
  return true;
}

void KcatLineParser::seal(EventBatch& batch) {
  auto& ranges = m_impl->header_ranges;
  for (std::size_t i = 0; i < batch.events.size() && i < ranges.size(); ++i) {
    batch.events[i].headers = std::span<const Header>(batch.headers.data() + ranges[i].first, ranges[i].second);
  }
  ranges.clear();
}

void append_json_string(std::string& out, std::string_view text) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

namespace {

void append_optional(std::string& out, const std::optional<std::string_view>& text) {
  if (text) {
    append_json_string(out, *text);
  } else {
    out += "null";
  }
}

} // namespace

std::string format_kcat_line(const Event& event) {
  std::string out = "{\"topic\":";
  append_json_string(out, event.topic);
  out += ",\"partition\":" + std::to_string(event.partition) + ",\"offset\":" + std::to_string(event.offset) +
         ",\"tstype\":\"create\",\"ts\":" + std::to_string(event.timestamp_ms) + ",\"headers\":[";
  bool first = true;
  for (const auto& header : event.headers) {
    out += first ? "" : ",";
    first = false;
    append_json_string(out, header.name);
    out += ',';
    append_optional(out, header.value);
  }
  out += "],\"key\":";
  append_optional(out, event.key);
  out += ",\"payload\":";
  append_optional(out, event.payload);
  out += '}';
  return out;
}

} // namespace dedupctl::core
