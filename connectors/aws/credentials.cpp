#include "connectors/aws/aws.hpp"
#include "connectors/http/curl.hpp"

#include "connectors/file/text.hpp"
#include "connectors/process/shell.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace dedupctl::connectors::aws {

namespace {

// Temporary credentials are fetched again this long before they lapse (the AWS SDKs' margin).
constexpr std::int64_t k_refresh_margin_ms = 5 * 60 * 1000;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string home_file(const char* variable, const char* name) {
  if (auto path = env(variable); !path.empty()) {
    return path;
  }
  auto home = env("HOME");
  return home.empty() ? "" : home + "/.aws/" + name;
}

// A file's text, or "" when it is not there (as the AWS CLI, which reads what exists).
std::string optional_file(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) {
    return "";
  }
  return file::read_text_file(path, what);
}

} // namespace

Credentials::Credentials(const AwsSettings& settings) : m_settings(settings) {
  std::string credentials_path = home_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
  std::string config_path = home_file("AWS_CONFIG_FILE", "config");
  std::string profile_name = settings.profile.empty() ? "default" : settings.profile;
  auto profile = core::aws_profile(optional_file(credentials_path, "the AWS credentials file"), credentials_path,
                                   optional_file(config_path, "the AWS config file"), config_path, profile_name);
  m_region = !settings.uri.region.empty()         ? settings.uri.region
             : !env("AWS_REGION").empty()         ? env("AWS_REGION")
             : !env("AWS_DEFAULT_REGION").empty() ? env("AWS_DEFAULT_REGION")
                                                  : profile.region;
  if (m_region.empty()) {
    throw UsageError(fmt::format("{}: no region: add ?region=NAME, set AWS_REGION, or give the profile a region",
                                 settings.uri.text));
  }
  m_session_name = env("AWS_ROLE_SESSION_NAME").empty() ? "dedupctl" : env("AWS_ROLE_SESSION_NAME");
  auto from_profile = [&] {
    if (!profile.found) {
      throw UsageError(
          fmt::format("--aws-profile {}: no such profile in {} or {}", profile_name, credentials_path, config_path));
    }
    if (!profile.access_key.empty() && !profile.secret_key.empty()) {
      m_current = {profile.access_key, profile.secret_key, profile.session_token, std::nullopt,
                   fmt::format("profile {}", profile_name)};
    } else if (!profile.web_identity_token_file.empty() && !profile.role_arn.empty()) {
      m_source = Source::WebIdentity;
      m_token_file = profile.web_identity_token_file;
      m_role_arn = profile.role_arn;
      if (!profile.role_session_name.empty()) {
        m_session_name = profile.role_session_name;
      }
    } else if (!profile.credential_process.empty()) {
      m_source = Source::Process;
      m_process = profile.credential_process;
    } else if (!profile.source_profile.empty()) {
      throw UsageError(fmt::format("profile {} assumes a role from profile {} (source_profile): dedupctl does not "
                                   "chain roles; give it the role's credentials (credential_process = aws "
                                   "configure export-credentials --profile {} --format process)",
                                   profile_name, profile.source_profile, profile_name));
    } else {
      throw UsageError(fmt::format("profile {} has no credentials (aws_access_key_id and aws_secret_access_key, "
                                   "credential_process, or web_identity_token_file with role_arn)",
                                   profile_name));
    }
  };
  bool env_keys = !env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty();
  bool env_web = !env("AWS_WEB_IDENTITY_TOKEN_FILE").empty() && !env("AWS_ROLE_ARN").empty();
  if (settings.profile_explicit) {
    from_profile();
  } else if (env_keys) {
    m_current = {env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN"), std::nullopt,
                 "environment (AWS_ACCESS_KEY_ID)"};
  } else if (env_web) {
    m_source = Source::WebIdentity;
    m_token_file = env("AWS_WEB_IDENTITY_TOKEN_FILE");
    m_role_arn = env("AWS_ROLE_ARN");
  } else if (profile.found || !settings.profile.empty()) {
    from_profile();
  } else {
    throw UsageError(fmt::format("{}: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                                 "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, or give --aws-profile NAME of {}",
                                 settings.uri.text, credentials_path));
  }
  if (m_source == Source::Static) {
    m_secrets = {m_current.secret_key, m_current.session_token};
  } else {
    fetch();
  }
}

void Credentials::fetch() {
  std::string error;
  std::optional<core::AwsCredentials> fetched;
  if (m_source == Source::Process) {
    auto run = process::run_shell(m_process, m_settings.timeout_ms);
    if (auto why = process::failure_of(run, m_settings.timeout_ms); !why.empty()) {
      throw UnreachableError(fmt::format("credential_process of profile {}: {}",
                                         m_settings.profile.empty() ? "default" : m_settings.profile, why));
    }
    fetched = core::parse_process_credentials(run.out, error);
    std::fill(run.out.begin(), run.out.end(), '\0');
    if (!fetched) {
      throw UsageError(fmt::format("credential_process of profile {}: {}",
                                   m_settings.profile.empty() ? "default" : m_settings.profile, error));
    }
    fetched->source = "credential_process";
  } else {
    std::string token = file::read_text_file(m_token_file, "the web identity token file");
    std::string endpoint = !env("AWS_ENDPOINT_URL_STS").empty() ? env("AWS_ENDPOINT_URL_STS")
                           : !env("AWS_ENDPOINT_URL").empty()   ? env("AWS_ENDPOINT_URL")
                                                                : fmt::format("https://sts.{}.amazonaws.com", m_region);
    std::string form = core::web_identity_form(m_role_arn, m_session_name, token);
    std::fill(token.begin(), token.end(), '\0');
    http::Request request;
    request.url = endpoint;
    request.timeout_ms = m_settings.timeout_ms;
    request.post_body = std::move(form);
    auto response = http::Curl().perform(request);
    std::fill(request.post_body->begin(), request.post_body->end(), '\0');
    std::string& body = response.body;
    long status = response.status;
    if (response.failure) {
      throw UnreachableError(fmt::format("cannot reach STS at {} for AssumeRoleWithWebIdentity ({}): {}", endpoint,
                                         m_role_arn, *response.failure));
    }
    if (status != 200) {
      auto refusal = core::parse_dynamodb_error(body);
      throw UnreachableError(fmt::format("STS at {} refused AssumeRoleWithWebIdentity for {} (HTTP {}): {}{}{}",
                                         endpoint, m_role_arn, status, refusal.type,
                                         refusal.message.empty() ? "" : ": ", refusal.message));
    }
    fetched = core::parse_sts_credentials(body, error);
    std::fill(body.begin(), body.end(), '\0');
    if (!fetched) {
      throw UnreachableError(fmt::format("STS at {}: {}", endpoint, error));
    }
    fetched->source = fmt::format("web identity ({})", m_role_arn);
  }
  m_current = std::move(*fetched);
  m_secrets.push_back(m_current.secret_key);
  m_secrets.push_back(m_current.session_token);
}

core::AwsCredentials Credentials::current() {
  std::lock_guard lock(m_mutex);
  if (m_source != Source::Static && core::credentials_lapse(m_current, now_ms(), k_refresh_margin_ms)) {
    fetch();
    if (m_settings.note) {
      m_settings.note(fmt::format("AWS credentials from {} renewed", m_current.source));
    }
  }
  return m_current;
}

void Credentials::refused() {
  std::lock_guard lock(m_mutex);
  if (m_source != Source::Static) {
    m_current.expires_at_ms = 0; // the next current() fetches
  }
}

std::vector<std::string> Credentials::secrets() const {
  std::lock_guard lock(m_mutex);
  return m_secrets;
}

} // namespace dedupctl::connectors::aws
