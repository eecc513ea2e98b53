#include "core/identity/key_template.hpp"

#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dedupctl::core {

KeyTemplate KeyTemplate::parse(std::string_view text, std::string_view flag) {
  KeyTemplate tmpl;
  tmpl.m_text = std::string(text);
  auto bad = [&](std::string_view why) -> KeyTemplate {
    throw UsageError(fmt::format("invalid {} '{}': {}; placeholders are {{event_id}}, {{type}}, "
                                 "{{entity}}, {{topic}}, {{partition}}, {{offset}}, {{key}}, {{consumer}}, "
                                 "{{header:NAME}}, {{json:/ptr}}, and {{{{ }}}} are literal braces",
                                 flag, text, why));
  };
  if (text.empty()) {
    return bad("the template is empty, so every event would share one key (the consumer's is often "
               "'dedup:{consumer}:{event_id}')");
  }
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) {
      tmpl.m_segments.push_back(Segment{Part::Literal, literal, 0, {}});
      literal.clear();
    }
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        literal += '}';
        ++i;
        continue;
      }
      return bad(fmt::format("a lone '}}' at position {} (write '}}}}' for a literal brace)", i));
    }
    if (c != '{') {
      literal += c;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      literal += '{';
      ++i;
      continue;
    }
    auto close = text.find('}', i);
    if (close == std::string_view::npos) {
      return bad(fmt::format("the placeholder at position {} is not closed", i));
    }
    std::string_view placeholder = text.substr(i + 1, close - i - 1);
    std::string_view name = placeholder.substr(0, placeholder.find('|'));
    Segment segment;
    segment.text = std::string(placeholder);
    if (name.size() < placeholder.size()) {
      try {
        segment.filters = parse_template_filters(placeholder.substr(name.size() + 1), placeholder);
      } catch (const UsageError& e) {
        return bad(e.what());
      }
    }
    if (name == "event_id") {
      segment.part = Part::EventId;
    } else if (name == "type") {
      segment.part = Part::Type;
    } else if (name == "entity") {
      segment.part = Part::Entity;
    } else if (name == "topic") {
      segment.part = Part::Topic;
    } else if (name == "partition") {
      segment.part = Part::Partition;
    } else if (name == "offset") {
      segment.part = Part::Offset;
    } else if (name == "key") {
      segment.part = Part::Key;
    } else if (name == "consumer") {
      segment.part = Part::Consumer;
    } else if (name.starts_with("header:") || name.starts_with("json:")) {
      std::string why;
      auto spec = try_parse_field_spec(name, why);
      if (!spec) {
        return bad(fmt::format("placeholder {{{}}}: {}", name, why));
      }
      segment.part = Part::Field;
      segment.field = tmpl.m_fields.size();
      tmpl.m_fields.push_back(*spec);
    } else {
      return bad(fmt::format("unknown placeholder {{{}}}", name));
    }
    flush();
    tmpl.m_segments.push_back(std::move(segment));
    i = close;
  }
  flush();
  return tmpl;
}

bool KeyTemplate::uses(Part part) const {
  for (const auto& segment : m_segments) {
    if (segment.part == part) {
      return true;
    }
  }
  return false;
}

KeyTemplate::Injectivity KeyTemplate::event_id_injectivity() const {
  Injectivity best = Injectivity::No;
  for (const auto& segment : m_segments) {
    if (segment.part != Part::EventId) {
      continue;
    }
    Injectivity chain = Injectivity::Injective;
    for (TemplateFilter filter : segment.filters) {
      if (filter == TemplateFilter::Lower || filter == TemplateFilter::Upper) {
        chain = Injectivity::No;
        break;
      }
      if (filter == TemplateFilter::Json || filter == TemplateFilter::JsonAscii || filter == TemplateFilter::Java) {
        chain = Injectivity::ValidUtf8;
        continue;
      }
      if (chain == Injectivity::Injective) {
        break; // a digest, hex or base64 of the bytes themselves: what follows sees ASCII
      }
    }
    best = std::min(best, chain); // Injective < ValidUtf8 < No
  }
  return best;
}

bool key_may_collide(KeyTemplate::Injectivity injectivity, std::string_view event_id) {
  switch (injectivity) {
  case KeyTemplate::Injectivity::Injective:
    return false;
  case KeyTemplate::Injectivity::No:
    return true;
  case KeyTemplate::Injectivity::ValidUtf8:
    break;
  }
  for (std::size_t i = 0; i < event_id.size();) {
    if (next_code_point(event_id, i) == 0xfffd) { // a byte that is not UTF-8, or U+FFFD itself
      return true;
    }
  }
  return false;
}

void render_key(const KeyTemplate& tmpl, const KeyValues& values, std::string& out) {
  out.clear();
  char digits[24];
  auto number = [&](std::int64_t n) {
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
    return std::string_view(digits, static_cast<std::size_t>(end - digits));
  };
  for (const auto& segment : tmpl.segments()) {
    std::string_view value;
    switch (segment.part) {
    case KeyTemplate::Part::Literal:
      value = segment.text;
      break;
    case KeyTemplate::Part::EventId:
      value = values.event_id;
      break;
    case KeyTemplate::Part::Type:
      value = values.type;
      break;
    case KeyTemplate::Part::Entity:
      value = values.entity;
      break;
    case KeyTemplate::Part::Topic:
      value = values.topic;
      break;
    case KeyTemplate::Part::Partition:
      value = number(values.partition);
      break;
    case KeyTemplate::Part::Offset:
      value = number(values.offset);
      break;
    case KeyTemplate::Part::Key:
      value = values.key;
      break;
    case KeyTemplate::Part::Consumer:
      value = values.consumer;
      break;
    case KeyTemplate::Part::Field:
      value = values.fields ? values.fields[segment.field] : std::string_view{};
      break;
    }
    if (segment.filters.empty()) {
      out += value;
    } else {
      apply_template_filters(segment.filters, value, out);
    }
  }
  if (tmpl.java_serialized()) {
    std::string text;
    text.swap(out);
    append_java_string(text, out);
  }
}

std::vector<FieldSpec> joint_fields(const KeyTemplate& first, const KeyTemplate& second) {
  std::vector<FieldSpec> out = first.fields();
  out.insert(out.end(), second.fields().begin(), second.fields().end());
  return out;
}

KeyTemplate after_fields_of(const KeyTemplate& first, const KeyTemplate& second) {
  KeyTemplate out = second;
  for (auto& segment : out.m_segments) {
    if (segment.part == KeyTemplate::Part::Field) {
      segment.field += first.fields().size();
    }
  }
  out.m_fields = joint_fields(first, second);
  return out;
}

} // namespace dedupctl::core
