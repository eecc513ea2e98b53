// Avro through avro-c (Debian's libavro): avro-c reads the binary record against the schema; the
// JSON is written from the same schema, which avro-c cannot tell us everything of (it drops the
// logical types), so a shape of our own, built from the schema's JSON, walks beside its values.
#include "connectors/schema/formats.hpp"
#include "core/util/time.hpp"

#include <avro.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace dedupctl::connectors::schema {

namespace {

using nlohmann::json;

bool is_primitive(const std::string& name) {
  static const std::set<std::string> primitives{"null", "boolean", "int", "long", "float", "double", "bytes", "string"};
  return primitives.count(name) > 0;
}

std::string full_name(const json& node, const std::string& ns) {
  std::string name = node.value("name", "");
  if (name.find('.') != std::string::npos) {
    return name;
  }
  std::string space =
      node.contains("namespace") && node["namespace"].is_string() ? node["namespace"].get<std::string>() : ns;
  return space.empty() ? name : space + "." + name;
}

std::string space_of(const std::string& fullname) {
  auto dot = fullname.rfind('.');
  return dot == std::string::npos ? "" : fullname.substr(0, dot);
}

std::string resolve_name(const std::string& name, const std::string& ns) {
  if (name.find('.') != std::string::npos || ns.empty()) {
    return name;
  }
  return ns + "." + name;
}

// Replaces the first use of each referenced type by its definition (avro-c parses one document),
// keeping later uses as names.
class Inliner {
public:
  explicit Inliner(std::map<std::string, json> definitions) : m_definitions(std::move(definitions)) {}

  void run(json& node, const std::string& ns) {
    if (node.is_string()) {
      std::string name = node.get<std::string>();
      if (is_primitive(name)) {
        return;
      }
      for (const auto& candidate : {resolve_name(name, ns), name}) {
        if (m_defined.count(candidate)) {
          return;
        }
        auto def = m_definitions.find(candidate);
        if (def != m_definitions.end()) {
          node = def->second;
          run(node, space_of(candidate));
          return;
        }
      }
      return;
    }
    if (node.is_array()) {
      for (auto& branch : node) {
        run(branch, ns);
      }
      return;
    }
    if (!node.is_object() || !node.contains("type")) {
      return;
    }
    std::string type = node["type"].is_string() ? node["type"].get<std::string>() : "";
    if (type == "record" || type == "error" || type == "enum" || type == "fixed") {
      std::string fullname = full_name(node, ns);
      m_defined.insert(fullname);
      if (node.contains("fields") && node["fields"].is_array()) {
        for (auto& field : node["fields"]) {
          if (field.is_object() && field.contains("type")) {
            run(field["type"], space_of(fullname));
          }
        }
      }
    } else if (type == "array" && node.contains("items")) {
      run(node["items"], ns);
    } else if (type == "map" && node.contains("values")) {
      run(node["values"], ns);
    } else if (!node["type"].is_string()) {
      run(node["type"], ns);
    }
  }

private:
  std::map<std::string, json> m_definitions;
  std::set<std::string> m_defined;
};

// Gathers the named types each referenced schema defines, its own references first.
void gather(const RegisteredSchema& schema, const ResolveReference& resolve, std::map<std::string, json>& out,
            int depth) {
  if (depth > 32) {
    throw std::runtime_error("its references nest more than 32 deep (a cycle?)");
  }
  for (const auto& reference : schema.references) {
    RegisteredSchema referenced = resolve(reference);
    gather(referenced, resolve, out, depth + 1);
    auto doc = json::parse(referenced.text, nullptr, false);
    if (doc.is_discarded()) {
      throw std::runtime_error(fmt::format("its reference {} is not JSON", reference.name));
    }
    std::string fullname = doc.is_object() ? full_name(doc, "") : reference.name;
    out[fullname] = doc;
    out[reference.name] = doc;
  }
}

struct Shape {
  enum class Kind { Null, Boolean, Int, Long, Float, Double, Bytes, String, Record, Enum, Array, Map, Union, Fixed };
  Kind kind = Kind::Null;
  std::string logical;
  int scale = 0;
  std::size_t size = 0;                                           // a fixed's
  std::vector<std::pair<std::string, std::size_t>> sorted_fields; // a record's, by name
  std::vector<std::string> symbols;                               // an enum's
  std::vector<const Shape*> children;                             // fields by index, union branches, items or values
};

class ShapeBuilder {
public:
  const Shape* build(const json& node, const std::string& ns) {
    if (node.is_string()) {
      std::string name = node.get<std::string>();
      if (is_primitive(name)) {
        return primitive(name, "");
      }
      for (const auto& candidate : {resolve_name(name, ns), name}) {
        auto named = m_named.find(candidate);
        if (named != m_named.end()) {
          return named->second;
        }
      }
      throw std::runtime_error(fmt::format("its type {} is not defined", name));
    }
    if (node.is_array()) {
      Shape& shape = add(Shape::Kind::Union);
      for (const auto& branch : node) {
        shape.children.push_back(build(branch, ns));
      }
      return &shape;
    }
    if (!node.is_object() || !node.contains("type")) {
      throw std::runtime_error("it has a type that is neither a name, a union nor an object with a type");
    }
    std::string logical = node.value("logicalType", "");
    if (!node["type"].is_string()) {
      return build(node["type"], ns);
    }
    std::string type = node["type"].get<std::string>();
    if (is_primitive(type)) {
      const Shape* shape = primitive(type, logical);
      if (logical == "decimal") {
        Shape& decimal = add(shape->kind);
        decimal.logical = logical;
        decimal.scale = node.value("scale", 0);
        return &decimal;
      }
      return shape;
    }
    if (type == "record" || type == "error") {
      std::string fullname = full_name(node, ns);
      Shape& shape = add(Shape::Kind::Record);
      m_named[fullname] = &shape;
      const auto& fields = node.at("fields");
      for (std::size_t i = 0; i < fields.size(); ++i) {
        shape.sorted_fields.emplace_back(fields[i].at("name").get<std::string>(), i);
        shape.children.push_back(build(fields[i].at("type"), space_of(fullname)));
      }
      std::sort(shape.sorted_fields.begin(), shape.sorted_fields.end());
      return &shape;
    }
    if (type == "enum") {
      Shape& shape = add(Shape::Kind::Enum);
      m_named[full_name(node, ns)] = &shape;
      shape.symbols = node.at("symbols").get<std::vector<std::string>>();
      return &shape;
    }
    if (type == "fixed") {
      Shape& shape = add(Shape::Kind::Fixed);
      m_named[full_name(node, ns)] = &shape;
      shape.logical = logical;
      shape.scale = node.value("scale", 0);
      shape.size = node.at("size").get<std::size_t>();
      return &shape;
    }
    if (type == "array" || type == "map") {
      Shape& shape = add(type == "array" ? Shape::Kind::Array : Shape::Kind::Map);
      shape.children.push_back(build(node.at(type == "array" ? "items" : "values"), ns));
      return &shape;
    }
    throw std::runtime_error(fmt::format("its type {} is not an Avro type", type));
  }

private:
  Shape& add(Shape::Kind kind) {
    m_shapes.emplace_back();
    m_shapes.back().kind = kind;
    return m_shapes.back();
  }

  const Shape* primitive(const std::string& name, const std::string& logical) {
    static const std::map<std::string, Shape::Kind> kinds{
        {"null", Shape::Kind::Null},   {"boolean", Shape::Kind::Boolean}, {"int", Shape::Kind::Int},
        {"long", Shape::Kind::Long},   {"float", Shape::Kind::Float},     {"double", Shape::Kind::Double},
        {"bytes", Shape::Kind::Bytes}, {"string", Shape::Kind::String}};
    Shape& shape = add(kinds.at(name));
    shape.logical = logical;
    return &shape;
  }

  std::deque<Shape> m_shapes;
  std::map<std::string, const Shape*> m_named;

public:
  std::deque<Shape> take() { return std::move(m_shapes); }
};

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// An instant as RFC 3339 UTC with `digits` fractional digits (3 for millis, 6 for micros).
std::string rfc3339(std::int64_t units, std::int64_t per_second, int digits, bool zone) {
  std::int64_t seconds = floor_div(units, per_second);
  std::int64_t fraction = units - seconds * per_second;
  std::int64_t days = floor_div(seconds, 86400);
  std::int64_t in_day = seconds - days * 86400;
  core::CivilDate date = core::civil_from_days(days);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:0{}}{}", date.year, date.month, date.day, in_day / 3600,
                     in_day / 60 % 60, in_day % 60, fraction, digits, zone ? "Z" : "");
}

// Big-endian two's complement bytes with `scale` as a decimal number's text (any size).
std::string decimal_text(const unsigned char* bytes, std::size_t size, int scale) {
  if (size == 0) {
    return {};
  }
  std::vector<unsigned char> magnitude(bytes, bytes + size);
  bool negative = (bytes[0] & 0x80) != 0;
  if (negative) { // two's complement: invert and add one
    unsigned carry = 1;
    for (std::size_t i = magnitude.size(); i-- > 0;) {
      unsigned v = static_cast<unsigned char>(~magnitude[i]) + carry;
      magnitude[i] = static_cast<unsigned char>(v & 0xff);
      carry = v >> 8;
    }
  }
  std::string reversed; // the digits, least significant first
  bool zero = false;
  while (!zero) {
    unsigned remainder = 0;
    zero = true;
    for (auto& byte : magnitude) {
      unsigned current = (remainder << 8) | byte;
      byte = static_cast<unsigned char>(current / 10);
      remainder = current % 10;
      zero = zero && byte == 0;
    }
    reversed += static_cast<char>('0' + remainder);
  }
  auto places = static_cast<std::size_t>(std::max(scale, 0));
  while (reversed.size() <= places && places > 0) {
    reversed += '0';
  }
  std::string out = negative ? "-" : "";
  for (std::size_t i = reversed.size(); i-- > 0;) {
    out += reversed[i];
    if (i == places && places > 0) {
      out += '.';
    }
  }
  return out;
}

// Avro's JSON encoding of bytes: each byte the code point of the same number.
void append_bytes(std::string& out, const unsigned char* bytes, std::size_t size) {
  std::string utf8;
  utf8.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    if (bytes[i] < 0x80) {
      utf8 += static_cast<char>(bytes[i]);
    } else {
      utf8 += static_cast<char>(0xc0 | (bytes[i] >> 6));
      utf8 += static_cast<char>(0x80 | (bytes[i] & 0x3f));
    }
  }
  append_json_string(out, utf8);
}

void append_double(std::string& out, double value) {
  if (value != value || value == 1.0 / 0.0 || value == -1.0 / 0.0) {
    out += value != value ? "\"NaN\"" : value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", value);
}

// Whether `bytes` hold one whole record of `shape`: every length within the bytes left, every
// union branch and enum symbol in range, nesting bounded. avro-c is only handed records that pass:
// on a record cut short it keeps what it allocated for the string it was reading (avro-c 1.11), so
// a corrupt length of a gigabyte would cost a gigabyte, each time.
class Validator {
public:
  explicit Validator(std::string_view bytes) : m_rest(bytes) {}

  bool record(const Shape& shape) { return value(shape, 0) && m_rest.empty(); }

private:
  bool varint(std::int64_t& out) { return read_zigzag(m_rest, out); }
  std::int64_t left() const { return static_cast<std::int64_t>(m_rest.size()); }
  bool skip(std::int64_t n) {
    if (n < 0 || n > left()) {
      return false;
    }
    m_rest.remove_prefix(static_cast<std::size_t>(n));
    return true;
  }
  bool value(const Shape& shape, int depth) {
    if (depth > 64) {
      return false;
    }
    std::int64_t n = 0;
    switch (shape.kind) {
    case Shape::Kind::Null:
      return true;
    case Shape::Kind::Boolean:
      return skip(1);
    case Shape::Kind::Int:
    case Shape::Kind::Long:
      return varint(n);
    case Shape::Kind::Float:
      return skip(4);
    case Shape::Kind::Double:
      return skip(8);
    case Shape::Kind::Bytes:
    case Shape::Kind::String:
      return varint(n) && skip(n);
    case Shape::Kind::Fixed:
      return skip(static_cast<std::int64_t>(shape.size));
    case Shape::Kind::Enum:
      return varint(n) && n >= 0 && static_cast<std::size_t>(n) < shape.symbols.size();
    case Shape::Kind::Union:
      return varint(n) && n >= 0 && static_cast<std::size_t>(n) < shape.children.size() &&
             value(*shape.children[static_cast<std::size_t>(n)], depth + 1);
    case Shape::Kind::Record:
      for (const Shape* field : shape.children) {
        if (!value(*field, depth + 1)) {
          return false;
        }
      }
      return true;
    case Shape::Kind::Array:
    case Shape::Kind::Map:
      for (;;) {
        if (!varint(n)) {
          return false;
        }
        if (n == 0) {
          return true;
        }
        if (n < 0) { // a block with its size in bytes
          std::int64_t bytes = 0;
          if (n == INT64_MIN || !varint(bytes) || bytes < 0 || bytes > left()) {
            return false;
          }
          n = -n;
        }
        // Items of no bytes (nulls) could count to anything: at most a million a block.
        if (n > left() + (1 << 20)) {
          return false;
        }
        for (std::int64_t i = 0; i < n; ++i) {
          std::int64_t key = 0;
          if (shape.kind == Shape::Kind::Map && !(varint(key) && skip(key))) {
            return false;
          }
          if (!value(*shape.children[0], depth + 1)) {
            return false;
          }
        }
      }
    }
    return false;
  }

  std::string_view m_rest;
};

class AvroCompiled : public Compiled {
public:
  AvroCompiled(avro_schema_t schema, std::deque<Shape> shapes, const Shape* root)
      : m_schema(schema), m_shapes(std::move(shapes)), m_root(root) {
    m_iface = avro_generic_class_from_schema(m_schema);
    if (!m_iface || avro_generic_value_new(m_iface, &m_value) != 0) {
      if (m_iface) {
        avro_value_iface_decref(m_iface);
      }
      avro_schema_decref(m_schema);
      throw std::runtime_error(fmt::format("avro-c cannot make values of it: {}", avro_strerror()));
    }
    m_reader = avro_reader_memory(nullptr, 0);
  }
  ~AvroCompiled() override {
    avro_reader_free(m_reader);
    avro_value_decref(&m_value);
    avro_value_iface_decref(m_iface);
    avro_schema_decref(m_schema);
  }
  AvroCompiled(const AvroCompiled&) = delete;
  AvroCompiled& operator=(const AvroCompiled&) = delete;

  std::string decode(std::string_view body, std::string& out) override {
    if (!Validator(body).record(*m_root)) {
      return "not a record of its Avro schema (truncated, or a length, branch or symbol out of range)";
    }
    avro_reader_memory_set_source(m_reader, body.data(), static_cast<int64_t>(body.size()));
    if (avro_value_read(m_reader, &m_value) != 0) {
      return fmt::format("not a record of its Avro schema ({})", trimmed(avro_strerror()));
    }
    out.clear();
    if (!write(m_value, *m_root, out)) {
      return "not a record of its Avro schema (a value out of its type's range)";
    }
    return "";
  }

private:
  static std::string trimmed(const char* text) {
    std::string s = text ? text : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) {
      s.pop_back();
    }
    return s.empty() ? "truncated" : s;
  }

  static bool is_null(avro_value_t& value, const Shape& shape) {
    if (shape.kind == Shape::Kind::Null) {
      return true;
    }
    if (shape.kind == Shape::Kind::Union) {
      int which = 0;
      if (avro_value_get_discriminant(&value, &which) != 0 || which < 0 ||
          static_cast<std::size_t>(which) >= shape.children.size()) {
        return false;
      }
      avro_value_t branch;
      avro_value_get_current_branch(&value, &branch);
      return is_null(branch, *shape.children[static_cast<std::size_t>(which)]);
    }
    return false;
  }

  // One member of a JSON object (a record's field, a map's entry), left out when its value is null.
  bool member(std::string& out, bool& first, std::string_view name, avro_value_t& item, const Shape& shape) {
    if (is_null(item, shape)) {
      return true;
    }
    if (!first) {
      out += ',';
    }
    first = false;
    append_json_string(out, name);
    out += ':';
    return write(item, shape, out);
  }

  bool write(avro_value_t& value, const Shape& shape, std::string& out) {
    switch (shape.kind) {
    case Shape::Kind::Null:
      out += "null";
      return true;
    case Shape::Kind::Boolean: {
      int b = 0;
      avro_value_get_boolean(&value, &b);
      out += b ? "true" : "false";
      return true;
    }
    case Shape::Kind::Int:
      return write_int(value, shape, out);
    case Shape::Kind::Long:
      return write_long(value, shape, out);
    case Shape::Kind::Float: {
      float v = 0;
      avro_value_get_float(&value, &v);
      append_double(out, static_cast<double>(v));
      return true;
    }
    case Shape::Kind::Double: {
      double v = 0;
      avro_value_get_double(&value, &v);
      append_double(out, v);
      return true;
    }
    case Shape::Kind::String: {
      const char* text = nullptr;
      std::size_t size = 0;
      avro_value_get_string(&value, &text, &size);
      append_json_string(out, std::string_view(text ? text : "", size > 0 ? size - 1 : 0));
      return true;
    }
    case Shape::Kind::Bytes:
    case Shape::Kind::Fixed:
      return write_bytes(value, shape, out);
    case Shape::Kind::Enum: {
      int symbol = 0;
      avro_value_get_enum(&value, &symbol);
      if (symbol < 0 || static_cast<std::size_t>(symbol) >= shape.symbols.size()) {
        return false;
      }
      append_json_string(out, shape.symbols[static_cast<std::size_t>(symbol)]);
      return true;
    }
    case Shape::Kind::Record:
      return write_record(value, shape, out);
    case Shape::Kind::Array:
      return write_array(value, shape, out);
    case Shape::Kind::Map:
      return write_map(value, shape, out);
    case Shape::Kind::Union:
      return write_union(value, shape, out);
    }
    return false;
  }

  // An int, or the date or time-millis it stands for.
  bool write_int(avro_value_t& value, const Shape& shape, std::string& out) {
    std::int32_t v = 0;
    avro_value_get_int(&value, &v);
    if (shape.logical == "date") {
      core::CivilDate date = core::civil_from_days(v);
      fmt::format_to(std::back_inserter(out), "\"{:04}-{:02}-{:02}\"", date.year, date.month, date.day);
    } else if (shape.logical == "time-millis" && v >= 0) {
      fmt::format_to(std::back_inserter(out), "\"{:02}:{:02}:{:02}.{:03}\"", v / 3600000, v / 60000 % 60, v / 1000 % 60,
                     v % 1000);
    } else {
      fmt::format_to(std::back_inserter(out), "{}", v);
    }
    return true;
  }

  // A long, or the timestamp or time-micros it stands for.
  bool write_long(avro_value_t& value, const Shape& shape, std::string& out) {
    std::int64_t v = 0;
    avro_value_get_long(&value, &v);
    const std::string& l = shape.logical;
    if (l == "timestamp-millis" || l == "local-timestamp-millis") {
      out += '"' + rfc3339(v, 1000, 3, l == "timestamp-millis") + '"';
    } else if (l == "timestamp-micros" || l == "local-timestamp-micros") {
      out += '"' + rfc3339(v, 1000000, 6, l == "timestamp-micros") + '"';
    } else if (l == "time-micros" && v >= 0) {
      fmt::format_to(std::back_inserter(out), "\"{:02}:{:02}:{:02}.{:06}\"", v / 3600000000, v / 60000000 % 60,
                     v / 1000000 % 60, v % 1000000);
    } else {
      fmt::format_to(std::back_inserter(out), "{}", v);
    }
    return true;
  }

  // Bytes or a fixed: a decimal as its digits, anything else as bytes.
  bool write_bytes(avro_value_t& value, const Shape& shape, std::string& out) {
    const void* data = nullptr;
    std::size_t size = 0;
    if (shape.kind == Shape::Kind::Bytes) {
      avro_value_get_bytes(&value, &data, &size);
    } else {
      avro_value_get_fixed(&value, &data, &size);
    }
    const auto* bytes = static_cast<const unsigned char*>(data);
    if (shape.logical == "decimal") {
      std::string text = decimal_text(bytes, size, shape.scale);
      if (!text.empty()) {
        out += '"' + text + '"';
        return true;
      }
    }
    append_bytes(out, bytes, size);
    return true;
  }

  // A record as an object whose members are in the order of their names.
  bool write_record(avro_value_t& value, const Shape& shape, std::string& out) {
    out += '{';
    bool first = true;
    for (const auto& [name, index] : shape.sorted_fields) {
      avro_value_t field;
      if (avro_value_get_by_index(&value, index, &field, nullptr) != 0) {
        return false;
      }
      if (!member(out, first, name, field, *shape.children[index])) {
        return false;
      }
    }
    out += '}';
    return true;
  }

  bool write_array(avro_value_t& value, const Shape& shape, std::string& out) {
    std::size_t size = 0;
    avro_value_get_size(&value, &size);
    out += '[';
    for (std::size_t i = 0; i < size; ++i) {
      avro_value_t item;
      if (avro_value_get_by_index(&value, i, &item, nullptr) != 0) {
        return false;
      }
      if (i > 0) {
        out += ',';
      }
      if (!write(item, *shape.children[0], out)) {
        return false;
      }
    }
    out += ']';
    return true;
  }

  // A map as an object whose members are in the order of their keys.
  bool write_map(avro_value_t& value, const Shape& shape, std::string& out) {
    std::size_t size = 0;
    avro_value_get_size(&value, &size);
    std::vector<std::pair<std::string_view, std::size_t>> keys;
    keys.reserve(size);
    for (std::size_t i = 0; i < size; ++i) {
      avro_value_t item;
      const char* key = nullptr;
      if (avro_value_get_by_index(&value, i, &item, &key) != 0) {
        return false;
      }
      keys.emplace_back(key ? key : "", i);
    }
    std::sort(keys.begin(), keys.end());
    out += '{';
    bool first = true;
    for (const auto& [key, i] : keys) {
      avro_value_t item;
      avro_value_get_by_index(&value, i, &item, nullptr);
      if (!member(out, first, key, item, *shape.children[0])) {
        return false;
      }
    }
    out += '}';
    return true;
  }

  // A union is its branch's value, as a person reads it (not Avro's {"type": value}).
  bool write_union(avro_value_t& value, const Shape& shape, std::string& out) {
    int which = 0;
    if (avro_value_get_discriminant(&value, &which) != 0 || which < 0 ||
        static_cast<std::size_t>(which) >= shape.children.size()) {
      return false;
    }
    avro_value_t branch;
    avro_value_get_current_branch(&value, &branch);
    return write(branch, *shape.children[static_cast<std::size_t>(which)], out);
  }

  avro_schema_t m_schema;
  std::deque<Shape> m_shapes;
  const Shape* m_root;
  avro_value_iface_t* m_iface = nullptr;
  avro_value_t m_value{};
  avro_reader_t m_reader = nullptr;
};

} // namespace

std::unique_ptr<Compiled> compile_avro(const RegisteredSchema& schema, const ResolveReference& resolve) {
  auto doc = json::parse(schema.text, nullptr, false);
  if (doc.is_discarded()) {
    throw std::runtime_error("its Avro schema is not JSON");
  }
  std::map<std::string, json> definitions;
  gather(schema, resolve, definitions, 0);
  Inliner(std::move(definitions)).run(doc, "");
  std::string text = doc.dump();
  ShapeBuilder builder;
  const Shape* root = nullptr;
  try {
    root = builder.build(doc, "");
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("its Avro schema is malformed: {}", e.what()));
  }
  avro_schema_t parsed = nullptr;
  if (avro_schema_from_json_length(text.c_str(), text.size(), &parsed) != 0) {
    throw std::runtime_error(fmt::format("avro-c cannot parse it: {}", avro_strerror()));
  }
  return std::make_unique<AvroCompiled>(parsed, builder.take(), root);
}

} // namespace dedupctl::connectors::schema
