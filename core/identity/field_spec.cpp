#include "core/identity/field_spec.hpp"

#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

std::optional<FieldSpec> try_parse_field_spec(std::string_view item, std::string& why) {
  FieldSpec spec;
  spec.text = std::string(item);
  auto bad = [&](std::string_view reason) -> std::optional<FieldSpec> {
    why = std::string(reason);
    return std::nullopt;
  };
  if (item == "key") {
    spec.kind = FieldKind::Key;
  } else if (item == "offset") {
    spec.kind = FieldKind::Offset;
  } else if (item.starts_with("header:")) {
    spec.kind = FieldKind::Header;
    spec.name = std::string(item.substr(7));
    if (spec.name.empty()) {
      return bad("the header name is empty");
    }
  } else if (item.starts_with("json:") || item.starts_with("key-json:")) {
    bool key = item.starts_with("key-json:");
    spec.kind = key ? FieldKind::KeyJson : FieldKind::Json;
    spec.name = std::string(item.substr(key ? 9 : 5));
    if (spec.name.empty() || spec.name[0] != '/') {
      return bad("a JSON pointer starts with '/' (RFC 6901)");
    }
    for (std::size_t i = 0; i < spec.name.size(); ++i) {
      char c = spec.name[i];
      if (c == '/') {
        spec.pointer.emplace_back();
      } else if (c == '~') {
        if (i + 1 >= spec.name.size() || (spec.name[i + 1] != '0' && spec.name[i + 1] != '1')) {
          return bad("'~' must be followed by 0 or 1 in a JSON pointer (~0 is '~', ~1 is '/')");
        }
        spec.pointer.back() += spec.name[++i] == '1' ? '/' : '~';
      } else {
        spec.pointer.back() += c;
      }
    }
  } else if (item.empty()) {
    return bad("empty spec");
  } else {
    return bad("unknown source");
  }
  return spec;
}

namespace {

FieldSpec parse_one(std::string_view item, std::string_view what) {
  std::string why;
  auto spec = try_parse_field_spec(item, why);
  if (!spec) {
    throw UsageError(
        fmt::format("invalid {} spec '{}': {}; expected header:NAME, json:/pointer, key-json:/pointer, key or offset",
                    what, item, why));
  }
  return *spec;
}

} // namespace

std::vector<FieldSpec> parse_field_specs(std::string_view text, std::string_view what) {
  std::vector<FieldSpec> specs;
  for (auto item : split(text, ',')) {
    specs.push_back(parse_one(item, what));
  }
  return specs;
}

std::string to_string(const std::vector<FieldSpec>& specs) {
  std::string out;
  for (const auto& spec : specs) {
    if (!out.empty()) {
      out += ',';
    }
    out += spec.text;
  }
  return out;
}

} // namespace dedupctl::core
