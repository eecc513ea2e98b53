#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The AWS CLI's credentials and config files and the answers credentials come in, pure: the
// connector (connectors/aws) reads the files, runs the process, calls STS and decides the order.
namespace dedupctl::core {

struct AwsCredentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;                 // temporary credentials
  std::optional<std::int64_t> expires_at_ms; // when they lapse; nullopt: they do not
  std::string source;                        // where they came from, for notes ("profile prod", "environment")
};

// A profile's settings as the AWS CLI merges them: the credentials file's [NAME] over the config
// file's [profile NAME] ([default] in both for "default").
struct AwsProfile {
  bool found = false;
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  std::string credential_process;
  std::string region;
  std::string role_arn;
  std::string web_identity_token_file;
  std::string role_session_name;
  std::string source_profile; // role chaining: not followed (an error names it)
};

// Throws UsageError naming `credentials_origin`/`config_origin` and the line (never its text: it may
// hold a secret) for a line that is neither a [section], a NAME = VALUE nor a comment.
AwsProfile aws_profile(std::string_view credentials, std::string_view credentials_origin, std::string_view config,
                       std::string_view config_origin, std::string_view profile);

// credential_process's output ({"Version":1,"AccessKeyId":…,"SecretAccessKey":…,"SessionToken":…,
// "Expiration":"RFC 3339"}); nullopt with `error` (naming no value) otherwise.
std::optional<AwsCredentials> parse_process_credentials(std::string_view json, std::string& error);

// STS's AssumeRoleWithWebIdentity answer (XML): its Credentials.
std::optional<AwsCredentials> parse_sts_credentials(std::string_view xml, std::string& error);
// The form AssumeRoleWithWebIdentity is posted with.
std::string web_identity_form(std::string_view role_arn, std::string_view session_name, std::string_view token);

// The text of the first <name>…</name> in an XML answer (AWS' query APIs and their error documents),
// "" when there is none. No entities are decoded: the values read are keys, tokens and codes.
std::string xml_element(std::string_view xml, std::string_view name);

// Whether credentials lapse within `margin_ms` of `now_ms` (refreshed before then).
bool credentials_lapse(const AwsCredentials& credentials, std::int64_t now_ms, std::int64_t margin_ms);

} // namespace dedupctl::core
