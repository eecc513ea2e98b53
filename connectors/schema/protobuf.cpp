// Protobuf through libprotobuf: the registry's .proto text is parsed by protoc's own parser
// (libprotoc), built into a pool with its references and the well-known types, and the record is
// read as a dynamic message and printed by the proto3 JSON mapping.
#include "connectors/schema/formats.hpp"
#include "core/util/encoding.hpp"

#include <fmt/format.h>
#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>

#include <map>
#include <mutex>
#include <optional>

namespace dedupctl::connectors::schema {

namespace {

namespace pb = google::protobuf;

class FirstError : public pb::io::ErrorCollector, public pb::DescriptorPool::ErrorCollector {
public:
  std::string text;
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (text.empty()) {
      text = fmt::format("line {} column {}: {}", line + 1, column + 1, message);
    }
  }
  void AddError(const std::string& filename, const std::string& element, const pb::Message*, ErrorLocation,
                const std::string& message) override {
    if (text.empty()) {
      text = fmt::format("{} {}: {}", filename, element, message);
    }
  }
};

// Standard base64 of a whole number of quads, or nullopt (a .proto has spaces and semicolons).
std::optional<std::string> from_base64(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  std::string out;
  if (text.empty() || text.size() % 4 != 0 || !core::base64_decode(text, core::Base64::Standard, out)) {
    return std::nullopt;
  }
  return out;
}

// The registry's schema: .proto text, as the Confluent and Apicurio registries answer, or a
// base64 FileDescriptorProto, as Confluent's serializers register it (and a registry answers with
// ?format=serialized).
pb::FileDescriptorProto parse_proto(const std::string& text, const std::string& name) {
  if (auto bytes = from_base64(text)) {
    pb::FileDescriptorProto file;
    if (file.ParseFromString(*bytes)) {
      file.set_name(name);
      return file;
    }
  }
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  FirstError errors;
  pb::io::Tokenizer tokenizer(&input, &errors);
  pb::compiler::Parser parser;
  parser.RecordErrorsTo(&errors);
  pb::FileDescriptorProto file;
  if (!parser.Parse(&tokenizer, &file)) {
    throw std::runtime_error(fmt::format("its .proto {} does not parse: {}", name, errors.text));
  }
  file.set_name(name);
  return file;
}

class ProtobufCompiled : public Compiled {
public:
  ProtobufCompiled(const RegisteredSchema& schema, const ResolveReference& resolve) {
    std::string name = fmt::format("schema-{}.proto", schema.id);
    add(schema, name, resolve, 0);
    m_file = m_pool.FindFileByName(name);
    if (!m_file || m_file->message_type_count() == 0) {
      throw std::runtime_error("its .proto defines no message");
    }
    m_options.preserve_proto_field_names = false; // the proto3 JSON mapping: lowerCamelCase
  }

  std::string decode(std::string_view body, std::string& json) override {
    std::int64_t count = 0;
    if (!read_zigzag(body, count) || count < 0 || count > 64) {
      return "framed for Protobuf but its message indexes are truncated or malformed";
    }
    const pb::Descriptor* message = nullptr;
    if (count == 0) {
      message = m_file->message_type(0);
    }
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t index = 0;
      if (!read_zigzag(body, index) || index < 0) {
        return "framed for Protobuf but its message indexes are truncated or malformed";
      }
      int at = static_cast<int>(index);
      int size = message ? message->nested_type_count() : m_file->message_type_count();
      if (index >= size) {
        return fmt::format("framed for Protobuf with message index {}, which its schema does not have", index);
      }
      message = message ? message->nested_type(at) : m_file->message_type(at);
    }
    auto& prototype = m_prototypes[message];
    if (!prototype) {
      prototype.reset(m_factory.GetPrototype(message)->New());
    }
    prototype->Clear();
    if (!prototype->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      return fmt::format("not a {} message (truncated or malformed Protobuf)", message->full_name());
    }
    std::string text;
    auto status = pb::util::MessageToJsonString(*prototype, &text, m_options);
    if (!status.ok() || !canonical_json(text, json)) {
      return fmt::format("a {} message that has no JSON form: {}", message->full_name(), status.ToString());
    }
    return "";
  }

private:
  void add(const RegisteredSchema& schema, const std::string& name, const ResolveReference& resolve, int depth) {
    if (depth > 32) {
      throw std::runtime_error("its references nest more than 32 deep (a cycle?)");
    }
    pb::FileDescriptorProto file = parse_proto(schema.text, name);
    std::map<std::string, const Reference*> by_name;
    for (const auto& reference : schema.references) {
      by_name[reference.name] = &reference;
    }
    for (const auto& dependency : file.dependency()) {
      if (m_pool.FindFileByName(dependency)) {
        continue;
      }
      auto reference = by_name.find(dependency);
      if (reference != by_name.end()) {
        add(resolve(*reference->second), dependency, resolve, depth + 1);
      } else if (!add_well_known(dependency)) {
        throw std::runtime_error(fmt::format(
            "its .proto imports {}, which is neither among its references nor a well-known type", dependency));
      }
    }
    FirstError errors;
    if (!m_pool.BuildFileCollectingErrors(file, &errors)) {
      throw std::runtime_error(fmt::format("its .proto {} does not build: {}", name, errors.text));
    }
  }

  bool add_well_known(const std::string& name) {
    const pb::FileDescriptor* known = pb::DescriptorPool::generated_pool()->FindFileByName(name);
    if (!known) {
      return false;
    }
    for (int i = 0; i < known->dependency_count(); ++i) {
      if (!m_pool.FindFileByName(known->dependency(i)->name())) {
        add_well_known(known->dependency(i)->name());
      }
    }
    pb::FileDescriptorProto file;
    known->CopyTo(&file);
    return m_pool.BuildFile(file) != nullptr;
  }

  pb::DescriptorPool m_pool;
  const pb::FileDescriptor* m_file = nullptr;
  pb::DynamicMessageFactory m_factory{&m_pool};
  std::map<const pb::Descriptor*, std::unique_ptr<pb::Message>> m_prototypes;
  pb::util::JsonPrintOptions m_options;
};

} // namespace

std::unique_ptr<Compiled> compile_protobuf(const RegisteredSchema& schema, const ResolveReference& resolve) {
  // libprotobuf logs warnings (a .proto without `syntax`) to stderr: our reasons say what matters.
  static std::once_flag quiet;
  std::call_once(quiet, [] { pb::SetLogHandler(nullptr); });
  return std::make_unique<ProtobufCompiled>(schema, resolve);
}

} // namespace dedupctl::connectors::schema
