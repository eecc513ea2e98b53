#pragma once

#include <cstdint>
#include <string>
#include <string_view>

// What a token command prints, for Kafka's SASL OAUTHBEARER (MSK IAM through a signer, Azure Event
// Hubs, any OIDC provider's CLI).
namespace dedupctl::core {

struct BearerToken {
  std::string token;
  std::int64_t expires_at_ms = 0;
  std::string principal;
  std::string error; // why the output is not a token (never quoting it: it may be one); empty when it is
};

// Either a bare JWT (header.payload.signature, base64url; the expiry from the payload's `exp`, in
// seconds, the principal from its `sub`), or a JSON object {"token": …, "expires_at_ms": …,
// "principal": …} (a principal "" when left out). Surrounding whitespace is ignored. A token that
// has expired at `now_ms` is an error.
BearerToken parse_bearer_token(std::string_view output, std::int64_t now_ms);

} // namespace dedupctl::core
