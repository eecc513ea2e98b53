#include "core/store/aws_config.hpp"

#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>
#include <simdjson.h>

namespace dedupctl::core {

namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

// The settings of section `wanted` of an INI file (the AWS CLI's dialect: `#` and `;` comments,
// names folded to lower case; an indented line continues a nested setting and is skipped).
Settings section(std::string_view text, std::string_view origin, std::string_view wanted) {
  Settings out;
  bool inside = false;
  int number = 0;
  for (auto raw : split(text, '\n')) {
    ++number;
    bool indented = !raw.empty() && (raw[0] == ' ' || raw[0] == '\t');
    auto line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') {
      continue;
    }
    if (line.front() == '[') {
      if (line.back() != ']') {
        throw UsageError(fmt::format("{}:{}: a section's name is not closed by ']'", origin, number));
      }
      inside = trim(line.substr(1, line.size() - 2)) == wanted;
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string_view::npos) {
      throw UsageError(fmt::format("{}:{}: expected NAME = VALUE or [section]", origin, number));
    }
    if (inside && !indented) {
      out.emplace_back(ascii_lower(trim(line.substr(0, eq))), std::string(trim(line.substr(eq + 1))));
    }
  }
  return out;
}

void merge(AwsProfile& profile, const Settings& settings) {
  for (const auto& [name, value] : settings) {
    profile.found = true;
    if (name == "aws_access_key_id") {
      profile.access_key = value;
    } else if (name == "aws_secret_access_key") {
      profile.secret_key = value;
    } else if (name == "aws_session_token") {
      profile.session_token = value;
    } else if (name == "credential_process") {
      profile.credential_process = value;
    } else if (name == "region") {
      profile.region = value;
    } else if (name == "role_arn") {
      profile.role_arn = value;
    } else if (name == "web_identity_token_file") {
      profile.web_identity_token_file = value;
    } else if (name == "role_session_name") {
      profile.role_session_name = value;
    } else if (name == "source_profile") {
      profile.source_profile = value;
    }
  }
}

std::optional<std::int64_t> expiration(std::string_view text, std::string& error) {
  try {
    return parse_time(text, "Expiration");
  } catch (const UsageError&) {
    error = "its Expiration is not an RFC 3339 time";
    return std::nullopt;
  }
}

} // namespace

std::string xml_element(std::string_view xml, std::string_view name) {
  auto open = xml.find(fmt::format("<{}>", name));
  auto close = xml.find(fmt::format("</{}>", name));
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return "";
  }
  auto start = open + name.size() + 2;
  return std::string(xml.substr(start, close - start));
}

AwsProfile aws_profile(std::string_view credentials, std::string_view credentials_origin, std::string_view config,
                       std::string_view config_origin, std::string_view profile) {
  AwsProfile out;
  merge(out, section(config, config_origin, profile == "default" ? "default" : fmt::format("profile {}", profile)));
  merge(out, section(credentials, credentials_origin, profile));
  return out;
}

std::optional<AwsCredentials> parse_process_credentials(std::string_view json, std::string& error) {
  simdjson::dom::parser parser;
  auto parsed = parser.parse(json.data(), json.size(), true);
  simdjson::dom::object object;
  if (parsed.error() || parsed.value_unsafe().get(object)) {
    error = "its output is not a JSON object";
    return std::nullopt;
  }
  std::int64_t version = 0;
  if (object["Version"].get(version) || version != 1) {
    error = "its output's Version is not 1";
    return std::nullopt;
  }
  AwsCredentials out;
  std::string_view text;
  if (object["AccessKeyId"].get(text) || text.empty()) {
    error = "its output has no AccessKeyId";
    return std::nullopt;
  }
  out.access_key = std::string(text);
  if (object["SecretAccessKey"].get(text) || text.empty()) {
    error = "its output has no SecretAccessKey";
    return std::nullopt;
  }
  out.secret_key = std::string(text);
  if (!object["SessionToken"].get(text)) {
    out.session_token = std::string(text);
  }
  if (!object["Expiration"].get(text)) {
    out.expires_at_ms = expiration(text, error);
    if (!out.expires_at_ms) {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<AwsCredentials> parse_sts_credentials(std::string_view xml, std::string& error) {
  auto credentials = xml_element(xml, "Credentials");
  AwsCredentials out;
  out.access_key = xml_element(credentials, "AccessKeyId");
  out.secret_key = xml_element(credentials, "SecretAccessKey");
  out.session_token = xml_element(credentials, "SessionToken");
  if (out.access_key.empty() || out.secret_key.empty() || out.session_token.empty()) {
    error = "STS's answer holds no Credentials (AccessKeyId, SecretAccessKey, SessionToken)";
    return std::nullopt;
  }
  if (auto at = xml_element(credentials, "Expiration"); !at.empty()) {
    out.expires_at_ms = expiration(at, error);
    if (!out.expires_at_ms) {
      return std::nullopt;
    }
  }
  return out;
}

std::string web_identity_form(std::string_view role_arn, std::string_view session_name, std::string_view token) {
  return fmt::format("Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn={}&RoleSessionName={}&"
                     "WebIdentityToken={}",
                     percent_encode(role_arn), percent_encode(session_name), percent_encode(trim(token)));
}

bool credentials_lapse(const AwsCredentials& credentials, std::int64_t now_ms, std::int64_t margin_ms) {
  return credentials.expires_at_ms && *credentials.expires_at_ms - margin_ms <= now_ms;
}

} // namespace dedupctl::core
