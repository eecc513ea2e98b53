#include "core/source/bearer_token.hpp"
#include "tests/support/jwt.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::core;

namespace {

constexpr std::int64_t k_now = 1'790'000'000'000; // 2026-09-21

// An unsigned JWT with these claims.
std::string jwt(const std::string& claims) { return dedupctl::testing::unsigned_jwt(claims); }

} // namespace

TEST(BearerToken, AJwtGivesItsExpiryAndSubject) {
  std::string token = jwt(R"({"sub":"billing-audit","exp":1790003600,"iat":1790000000})");
  auto parsed = parse_bearer_token(token + "\n", k_now);
  EXPECT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.token, token);
  EXPECT_EQ(parsed.expires_at_ms, 1'790'003'600'000);
  EXPECT_EQ(parsed.principal, "billing-audit");
}

TEST(BearerToken, JsonGivesTokenExpiryAndPrincipal) {
  auto parsed =
      parse_bearer_token(R"({"token":"opaque-msk-iam-token","expires_at_ms":1790000900000,"principal":"app"})", k_now);
  EXPECT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.token, "opaque-msk-iam-token");
  EXPECT_EQ(parsed.expires_at_ms, 1'790'000'900'000);
  EXPECT_EQ(parsed.principal, "app");
  EXPECT_EQ(parse_bearer_token(R"({"token":"t","expires_at_ms":1790000900000})", k_now).principal, "");
}

// What is not a token says what it lacks and never quotes the output, which may be one.
TEST(BearerToken, WhatIsNotATokenSaysWhyWithoutQuotingIt) {
  struct Case {
    std::string output;
    std::string says;
  };
  for (const Case& c : {
           Case{"", "neither a JWT nor a JSON object"},
           Case{"Error: credentials not found s3cr3t-looking", "neither a JWT nor a JSON object"},
           Case{jwt(R"({"sub":"app"})"), "no \"exp\" claim"},
           Case{R"({"expires_at_ms":1790000900000})", "no \"token\" string"},
           Case{R"({"token":"s3cr3t-looking"})", "no \"expires_at_ms\" number"},
           Case{jwt(R"({"sub":"app","exp":1789999000})"), "its token expired 1000 s ago"},
           Case{R"({"token":"s3cr3t-looking","expires_at_ms":1789999999000})", "its token expired 1 s ago"},
       }) {
    auto parsed = parse_bearer_token(c.output, k_now);
    EXPECT_NE(parsed.error.find(c.says), std::string::npos) << c.output << ": " << parsed.error;
    EXPECT_EQ(parsed.error.find("s3cr3t"), std::string::npos) << parsed.error;
    EXPECT_EQ(parsed.token, "");
  }
}
