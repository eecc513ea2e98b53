#include "core/source/kcat_line.hpp"

#include "core/util/escapes.hpp"
#include "core/util/json_text.hpp"

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

// What a field's value is, as the envelope reader needs to know it.
enum class Kind { Null, String, Array, Other };

// A value read by simdjson (every line that is valid UTF-8).
class StrictValue {
public:
  explicit StrictValue(simdjson::ondemand::value value) : m_value(value) {}

  bool kind(Kind& out) {
    json_type type;
    if (m_value.type().get(type)) {
      return false;
    }
    out = type == json_type::null     ? Kind::Null
          : type == json_type::string ? Kind::String
          : type == json_type::array  ? Kind::Array
                                      : Kind::Other;
    return true;
  }
  bool int64(std::int64_t& out) { return !m_value.get_int64().get(out); }
  // A string or null; false when the value is neither.
  bool nullable_string(Arena& arena, std::optional<std::string_view>& out) {
    Kind k;
    if (!kind(k) || (k != Kind::Null && k != Kind::String)) {
      return false;
    }
    if (k == Kind::Null) {
      out.reset();
      return true;
    }
    std::string_view text;
    if (m_value.get_string().get(text)) {
      return false;
    }
    out = copy(arena, text);
    return true;
  }
  // Calls item(StrictValue&) for each element; false on malformed JSON or when item returns false.
  template <class Item> bool each(Item&& item) {
    simdjson::ondemand::array array;
    if (m_value.get_array().get(array)) {
      return false;
    }
    for (auto element : array) {
      simdjson::ondemand::value value;
      if (element.get(value)) {
        return false;
      }
      StrictValue inner(value);
      if (!item(inner)) {
        return false;
      }
    }
    return true;
  }
  bool skip() { return true; } // simdjson skips an unread value on the next field

  static std::string_view copy(Arena& arena, std::string_view text) {
    std::string_view out = arena.copy(text);
    return out.data() ? out : std::string_view{"", 0}; // empty, not null
  }

private:
  simdjson::ondemand::value m_value;
};

// A reader for lines that are not valid UTF-8: kcat -J writes a binary key, payload or header
// (Avro, Protobuf behind a schema registry) as its raw bytes inside the JSON string, escaping only
// '"', '\' and control characters. The JSON grammar is kept; string contents are taken byte for
// byte. Only such lines take this path, so the common case stays on simdjson.
class RawReader {
public:
  explicit RawReader(std::string_view text) : m_text(text) {}

  void space() {
    while (m_at < m_text.size() &&
           (m_text[m_at] == ' ' || m_text[m_at] == '\t' || m_text[m_at] == '\r' || m_text[m_at] == '\n')) {
      ++m_at;
    }
  }
  bool eat(char c) {
    space();
    if (m_at < m_text.size() && m_text[m_at] == c) {
      ++m_at;
      return true;
    }
    return false;
  }
  char peek() {
    space();
    return m_at < m_text.size() ? m_text[m_at] : '\0';
  }
  bool at_end() {
    space();
    return m_at == m_text.size();
  }
  bool literal(std::string_view word) {
    space();
    if (m_text.substr(m_at, word.size()) != word) {
      return false;
    }
    m_at += word.size();
    return true;
  }

  bool string(std::string& out) {
    out.clear();
    if (!eat('"')) {
      return false;
    }
    while (m_at < m_text.size()) {
      char c = m_text[m_at++];
      if (c == '"') {
        return true;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (m_at == m_text.size()) {
        return false;
      }
      char e = m_text[m_at++];
      char decoded = 0;
      if (decode_c_escape(e, decoded)) {
        out += decoded;
        continue;
      }
      switch (e) {
      case '"':
      case '/':
        out += e;
        break;
      case 'u': {
        std::uint32_t code = 0;
        if (!hex4(code)) {
          return false;
        }
        if (code >= 0xD800 && code < 0xDC00 && m_text.substr(m_at, 2) == "\\u") {
          std::size_t mark = m_at;
          m_at += 2;
          std::uint32_t low = 0;
          if (hex4(low) && low >= 0xDC00 && low < 0xE000) {
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else {
            m_at = mark;
          }
        }
        append_utf8(out, code);
        break;
      }
      default:
        return false;
      }
    }
    return false;
  }

  bool number(std::int64_t& out) {
    space();
    bool negative = m_at < m_text.size() && m_text[m_at] == '-';
    m_at += negative ? 1 : 0;
    std::uint64_t magnitude = 0;
    std::size_t digits = 0;
    while (m_at < m_text.size() && m_text[m_at] >= '0' && m_text[m_at] <= '9') {
      if (magnitude > (std::uint64_t{1} << 63) / 10) {
        return false;
      }
      magnitude = magnitude * 10 + static_cast<std::uint64_t>(m_text[m_at++] - '0');
      ++digits;
    }
    if (digits == 0 || magnitude > (std::uint64_t{1} << 63) - (negative ? 0 : 1)) {
      return false;
    }
    if (m_at < m_text.size() && (m_text[m_at] == '.' || m_text[m_at] == 'e' || m_text[m_at] == 'E')) {
      return false; // not an integer
    }
    out = negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
    return true;
  }

  // A buffer for strings that are copied out at once (one per line read).
  std::string& scratch() { return m_scratch; }

  // Skips any JSON value (nested up to a bound).
  bool skip_value(int depth = 0) {
    if (depth > 64) {
      return false;
    }
    char c = peek();
    if (c == '"') {
      return string(m_scratch);
    }
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++m_at;
      if (eat(close)) {
        return true;
      }
      do {
        if (c == '{' && (!string(m_scratch) || !eat(':'))) {
          return false;
        }
        if (!skip_value(depth + 1)) {
          return false;
        }
      } while (eat(','));
      return eat(close);
    }
    if (literal("null") || literal("true") || literal("false")) {
      return true;
    }
    std::size_t first = m_at;
    while (m_at < m_text.size() && m_text[m_at] != '\0' && std::strchr("+-.0123456789eE", m_text[m_at])) {
      ++m_at;
    }
    return m_at > first;
  }

private:
  bool hex4(std::uint32_t& out) {
    if (m_at + 4 > m_text.size()) {
      return false;
    }
    for (int i = 0; i < 4; ++i) {
      char h = m_text[m_at++];
      int digit = h >= '0' && h <= '9'   ? h - '0'
                  : h >= 'a' && h <= 'f' ? h - 'a' + 10
                  : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                         : -1;
      if (digit < 0) {
        return false;
      }
      out = out * 16 + static_cast<std::uint32_t>(digit);
    }
    return true;
  }
  static void append_utf8(std::string& out, std::uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string_view m_text;
  std::size_t m_at = 0;
  std::string m_scratch; // the last string read, for values that are copied out at once
};

// A value read by RawReader, with the interface of StrictValue.
class RawValue {
public:
  explicit RawValue(RawReader& reader) : m_reader(reader) {}

  bool kind(Kind& out) {
    char c = m_reader.peek();
    out = c == '"' ? Kind::String : c == '[' ? Kind::Array : c == 'n' ? Kind::Null : Kind::Other;
    return c != '\0';
  }
  bool int64(std::int64_t& out) { return m_reader.number(out); }
  bool nullable_string(Arena& arena, std::optional<std::string_view>& out) {
    if (m_reader.literal("null")) {
      out.reset();
      return true;
    }
    if (!m_reader.string(m_reader.scratch())) {
      return false;
    }
    out = StrictValue::copy(arena, m_reader.scratch());
    return true;
  }
  template <class Item> bool each(Item&& item) {
    if (!m_reader.eat('[')) {
      return false;
    }
    if (m_reader.eat(']')) {
      return true;
    }
    do {
      RawValue inner(m_reader);
      if (!item(inner)) {
        return false;
      }
    } while (m_reader.eat(','));
    return m_reader.eat(']');
  }
  bool skip() { return m_reader.skip_value(); }

private:
  RawReader& m_reader;
};

// What a line says so far; both readers fill it field by field.
struct Envelope {
  Event event;
  bool has_partition = false;
  bool has_offset = false;
};

template <class Value> std::string read_headers(Value& value, EventBatch& batch);

// Applies one field of the envelope. Returns an empty string, or what is wrong.
template <class Value>
std::string read_field(std::string_view name, Value& value, EventBatch& batch, Envelope& envelope) {
  Event& event = envelope.event;
  if (name == "topic") {
    std::optional<std::string_view> topic;
    if (!value.nullable_string(batch.arena, topic)) {
      return "\"topic\" is not a string";
    }
    event.topic = topic.value_or(std::string_view{});
  } else if (name == "partition") {
    std::int64_t partition = 0;
    if (!value.int64(partition) || partition < 0 || partition > INT32_MAX) {
      return "\"partition\" is not a partition number";
    }
    event.partition = static_cast<std::int32_t>(partition);
    envelope.has_partition = true;
  } else if (name == "offset") {
    if (!value.int64(event.offset) || event.offset < 0) {
      return "\"offset\" is not an offset";
    }
    envelope.has_offset = true;
  } else if (name == "ts") {
    if (!value.int64(event.timestamp_ms)) {
      return "\"ts\" is not a timestamp in milliseconds";
    }
  } else if (name == "key") {
    if (!value.nullable_string(batch.arena, event.key)) {
      return "\"key\" is not a string or null";
    }
  } else if (name == "payload") {
    if (!value.nullable_string(batch.arena, event.payload)) {
      return "\"payload\" is not a string or null";
    }
  } else if (name == "headers") {
    return read_headers(value, batch);
  } else if (!value.skip()) {
    return "not JSON"; // tstype, broker, key_error, … are not needed
  }
  return {};
}

template <class Value> std::string read_headers(Value& value, EventBatch& batch) {
  Kind kind;
  if (!value.kind(kind)) {
    return "not JSON";
  }
  if (kind == Kind::Null) {
    return value.skip() ? "" : "not JSON";
  }
  if (kind != Kind::Array) {
    return "\"headers\" is not kcat's flat [name, value, …] array";
  }
  bool expect_name = true;
  bool strings = true;
  bool ok = value.each([&](auto& element) {
    std::optional<std::string_view> text;
    if (!element.nullable_string(batch.arena, text) || (expect_name && !text)) {
      strings = false;
      return false;
    }
    if (expect_name) {
      batch.headers.push_back(Header{*text, std::nullopt});
    } else {
      batch.headers.back().value = text;
    }
    expect_name = !expect_name;
    return true;
  });
  if (!strings) {
    return "\"headers\" is not kcat's flat [name, value, …] array of strings";
  }
  if (!ok) {
    return "not JSON";
  }
  return expect_name ? "" : "\"headers\" has a name without a value";
}

std::string read_strict(simdjson::ondemand::object& object, EventBatch& batch, Envelope& envelope) {
  for (auto field : object) {
    std::string_view name;
    if (field.unescaped_key().get(name)) {
      return "not JSON";
    }
    // unescaped_key() points into the parser's string buffer: compare before reading the value.
    std::string key_name(name);
    simdjson::ondemand::value value;
    if (field.value().get(value)) {
      return "not JSON";
    }
    StrictValue strict(value);
    if (std::string error = read_field(key_name, strict, batch, envelope); !error.empty()) {
      return error;
    }
  }
  return {};
}

std::string read_raw(std::string_view line, EventBatch& batch, Envelope& envelope) {
  RawReader reader(line);
  if (!reader.eat('{')) {
    return "not a JSON object (expected a kcat -J envelope)";
  }
  std::string name;
  if (!reader.eat('}')) {
    do {
      if (!reader.string(name) || !reader.eat(':')) {
        return "not JSON";
      }
      RawValue value(reader);
      if (std::string error = read_field(name, value, batch, envelope); !error.empty()) {
        return error;
      }
    } while (reader.eat(','));
    if (!reader.eat('}')) {
      return "not JSON";
    }
  }
  return reader.at_end() ? "" : "not JSON";
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
  Envelope envelope;
  std::string problem;
  simdjson::ondemand::document doc;
  auto status = impl.parser.iterate(impl.padded.data(), line.size(), impl.padded.size()).get(doc);
  if (status == simdjson::UTF8_ERROR || status == simdjson::UNESCAPED_CHARS) {
    problem = read_raw(line, batch, envelope); // raw binary bytes in a string
  } else if (status) {
    problem = "not JSON";
  } else {
    simdjson::ondemand::object object;
    if (doc.get_object().get(object)) {
      auto first = line.find_first_not_of(" \t");
      problem = first != std::string_view::npos && line[first] == '{'
                    ? "not JSON"
                    : "not a JSON object (expected a kcat -J envelope)";
    } else {
      problem = read_strict(object, batch, envelope);
    }
  }
  if (problem.empty() && (!envelope.has_partition || !envelope.has_offset)) {
    problem = fmt::format("missing \"{}\"", envelope.has_partition ? "offset" : "partition");
  }
  if (!problem.empty()) {
    batch.headers.resize(headers_before);
    error = std::move(problem);
    return false;
  }
  impl.header_ranges.emplace_back(static_cast<std::uint32_t>(headers_before),
                                  static_cast<std::uint32_t>(batch.headers.size() - headers_before));
  batch.events.push_back(envelope.event);
  return true;
}

void KcatLineParser::seal(EventBatch& batch) {
  auto& ranges = m_impl->header_ranges;
  for (std::size_t i = 0; i < batch.events.size() && i < ranges.size(); ++i) {
    batch.events[i].headers = std::span<const Header>(batch.headers.data() + ranges[i].first, ranges[i].second);
  }
  ranges.clear();
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
