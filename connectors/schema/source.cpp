#include "connectors/schema/source.hpp"

#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"

#include "connectors/http/curl.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace dedupctl::connectors::schema {

std::string_view type_name(SchemaType type) {
  switch (type) {
  case SchemaType::Protobuf:
    return "PROTOBUF";
  case SchemaType::Json:
    return "JSON";
  case SchemaType::Avro:
    break;
  }
  return "AVRO";
}

RegisteredSchema parse_registered_schema(std::string_view json, std::uint32_t id) {
  auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string()) {
    throw std::runtime_error("not a schema: no \"schema\" string");
  }
  RegisteredSchema out;
  out.id = doc.contains("id") && doc["id"].is_number_unsigned() ? doc["id"].get<std::uint32_t>() : id;
  out.text = doc["schema"].get<std::string>();
  std::string type = doc.value("schemaType", std::string("AVRO"));
  if (type == "AVRO") {
    out.type = SchemaType::Avro;
  } else if (type == "PROTOBUF") {
    out.type = SchemaType::Protobuf;
  } else if (type == "JSON") {
    out.type = SchemaType::Json;
  } else {
    throw std::runtime_error(fmt::format("schema type {} is not AVRO, PROTOBUF or JSON", type));
  }
  if (doc.contains("references") && doc["references"].is_array()) {
    for (const auto& ref : doc["references"]) {
      Reference r;
      r.name = ref.value("name", "");
      r.subject = ref.value("subject", "");
      r.version = ref.value("version", std::int64_t{0});
      if (ref.contains("id") && ref["id"].is_number_unsigned()) {
        r.id = ref["id"].get<std::uint32_t>();
      }
      out.references.push_back(std::move(r));
    }
  }
  return out;
}

std::string to_export_json(const RegisteredSchema& schema) {
  nlohmann::json doc = {{"id", schema.id}, {"schemaType", type_name(schema.type)}, {"schema", schema.text}};
  auto refs = nlohmann::json::array();
  for (const auto& ref : schema.references) {
    nlohmann::json r = {{"name", ref.name}, {"subject", ref.subject}, {"version", ref.version}};
    if (ref.id) {
      r["id"] = *ref.id;
    }
    refs.push_back(std::move(r));
  }
  doc["references"] = std::move(refs);
  return doc.dump(2) + "\n";
}

std::string strip_credentials(const std::string& url, std::string* user_info) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) {
    return url;
  }
  auto host_start = scheme + 3;
  auto path = url.find('/', host_start);
  auto at = url.rfind('@', path == std::string::npos ? std::string::npos : path);
  if (at == std::string::npos || at < host_start) {
    return url;
  }
  if (user_info) {
    *user_info = url.substr(host_start, at - host_start);
  }
  return url.substr(0, host_start) + url.substr(at + 1);
}

namespace {

class Registry : public SchemaSource {
public:
  explicit Registry(RegistrySettings settings) : m_settings(std::move(settings)) {
    std::string from_url;
    m_settings.url = strip_credentials(m_settings.url, &from_url);
    if (m_settings.user_info.empty()) {
      m_settings.user_info = from_url;
    }
    while (!m_settings.url.empty() && m_settings.url.back() == '/') {
      m_settings.url.pop_back();
    }
    if (!m_settings.url.starts_with("http://") && !m_settings.url.starts_with("https://")) {
      throw UsageError(fmt::format("--registry {}: expected an http:// or https:// URL", m_settings.url));
    }
  }

  std::optional<RegisteredSchema> by_id(std::uint32_t id) override {
    auto body = get(fmt::format("/schemas/ids/{}", id));
    if (!body) {
      return std::nullopt;
    }
    return parse(*body, id, fmt::format("schema id {}", id));
  }

  std::optional<RegisteredSchema> by_reference(const Reference& reference) override {
    auto body =
        get(fmt::format("/subjects/{}/versions/{}", core::percent_encode(reference.subject), reference.version));
    if (!body) {
      return std::nullopt;
    }
    return parse(*body, 0, fmt::format("subject {} version {}", reference.subject, reference.version));
  }

  std::string describe() const override { return m_settings.url; }

private:
  RegisteredSchema parse(const std::string& body, std::uint32_t id, const std::string& what) const {
    try {
      return parse_registered_schema(body, id);
    } catch (const std::exception& e) {
      throw RegistryUnreachableError(
          fmt::format("schema registry {} answered {} with {}", m_settings.url, what, e.what()));
    }
  }

  // The body of a 200; nullopt for a 404; UnreachableError for anything else.
  std::optional<std::string> get(const std::string& path) {
    std::string url = m_settings.url + path;
    http::Request request;
    request.url = url;
    request.timeout_ms = m_settings.timeout_ms;
    request.headers = {"Accept: application/vnd.schemaregistry.v1+json, application/json"};
    if (!m_settings.token.empty()) {
      request.headers.push_back("Authorization: Bearer " + m_settings.token);
    } else if (!m_settings.user_info.empty()) {
      request.basic_auth = m_settings.user_info;
    }
    request.ca_file = m_settings.ca_file;
    auto response = m_curl.perform(request);
    for (auto& header : request.headers) {
      std::fill(header.begin(), header.end(), '\0');
    }
    std::fill(request.basic_auth.begin(), request.basic_auth.end(), '\0');
    std::string& body = response.body;
    if (response.failure) {
      throw RegistryUnreachableError(
          fmt::format("cannot reach the schema registry {}: {}", m_settings.url, *response.failure));
    }
    long status = response.status;
    if (status == 200) {
      return body;
    }
    if (status == 404) {
      return std::nullopt;
    }
    std::string message;
    auto doc = nlohmann::json::parse(body, nullptr, false);
    if (doc.is_object() && doc.contains("message") && doc["message"].is_string()) {
      message = ": " + doc["message"].get<std::string>();
    }
    std::string hint = status == 401 || status == 403 ? " (check DEDUPCTL_REGISTRY_USER_INFO or the token)" : "";
    throw RegistryUnreachableError(
        fmt::format("schema registry {} refused GET {}: HTTP {}{}{}", m_settings.url, path, status, message, hint));
  }

  RegistrySettings m_settings;
  http::Curl m_curl;
};

class Directory : public SchemaSource {
public:
  explicit Directory(std::string dir) : m_dir(std::move(dir)) {
    std::error_code ec;
    if (!std::filesystem::is_directory(m_dir, ec)) {
      throw UsageError(fmt::format("--schemas {}: not a directory (schema files <id>.json, as dedupctl schemas "
                                   "export writes them)",
                                   m_dir));
    }
  }

  std::optional<RegisteredSchema> by_id(std::uint32_t id) override {
    auto path = std::filesystem::path(m_dir) / fmt::format("{}.json", id);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return std::nullopt;
    }
    std::stringstream text;
    text << in.rdbuf();
    try {
      return parse_registered_schema(text.str(), id);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("--schemas: {} is not a schema file: {}", path.string(), e.what()));
    }
  }

  std::optional<RegisteredSchema> by_reference(const Reference& reference) override {
    if (!reference.id) {
      throw UsageError(fmt::format("--schemas {}: the reference {} (subject {} version {}) has no id: export the "
                                   "schemas with dedupctl schemas export",
                                   m_dir, reference.name, reference.subject, reference.version));
    }
    return by_id(*reference.id);
  }

  std::string describe() const override { return m_dir; }

private:
  std::string m_dir;
};

} // namespace

std::unique_ptr<SchemaSource> open_registry(RegistrySettings settings) {
  return std::make_unique<Registry>(std::move(settings));
}

std::unique_ptr<SchemaSource> open_directory(const std::string& dir) { return std::make_unique<Directory>(dir); }

} // namespace dedupctl::connectors::schema
