#pragma once

#include <string>
#include <string_view>
#include <vector>

// Secrets as a user may type them, so that none is ever printed: a password in a URI's userinfo
// (redis://:pw@h, postgres://u:pw@h) or query (?password=pw), a libpq conninfo keyword with any
// spacing and quoting (password = 'a b\'c', sslpassword=x), a Kafka property (-X sasl.password=x,
// ssl.key.password=x, sasl.oauthbearer.client.secret=x).
namespace dedupctl::core {

// The text with the value of every form above replaced by "***" (quotes kept).
std::string redact_secrets(std::string_view text);

// The secret values in `text` as they are used (quotes and escapes removed; a URI's also
// percent-decoded), to scrub them from messages that echo them in another spelling.
std::vector<std::string> secrets_in(std::string_view text);

// redact_secrets, then every literal occurrence of a `known` secret of 4 bytes or more replaced by
// "***" (a shorter one would also take ids and words apart).
std::string scrub_secrets(std::string_view text, const std::vector<std::string>& known);

} // namespace dedupctl::core
