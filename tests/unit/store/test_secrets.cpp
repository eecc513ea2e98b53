#include "core/store/secrets.hpp"

#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

struct Form {
  std::string text, redacted;
  std::vector<std::string> secrets;
};

// Every spelling a user may type a secret in, as it must come out, and the values found.
TEST(Secrets, EveryFormIsRedactedAndItsValueFound) {
  const std::vector<Form> forms{
      {"redis://app:hunter2@cache:6380/2", "redis://app:***@cache:6380/2", {"hunter2"}},
      {"redis://hunter2@cache:6380", "redis://***@cache:6380", {"hunter2"}},
      {"rediss://:hunter2@cache", "rediss://:***@cache", {"hunter2"}},
      {"postgresql://app:p%40ss@db:5432/x", "postgresql://app:***@db:5432/x", {"p%40ss", "p@ss"}},
      {"postgres://app:a@b@db/x", "postgres://app:***@db/x", {"a@b"}},
      {"postgres://app@db/x", "postgres://app@db/x", {}},
      {"postgresql://db/x?user=app&password=S3cr3t&sslmode=off",
       "postgresql://db/x?user=app&password=***&sslmode=off",
       {"S3cr3t"}},
      {"host=db password=S3cr3t user=u", "host=db password=*** user=u", {"S3cr3t"}},
      {"host=db password = S3cr3t user=u", "host=db password = *** user=u", {"S3cr3t"}},
      {"host=db password='s3 cr3t' user=u", "host=db password='***' user=u", {"s3 cr3t"}},
      {"host=db PASSWORD='it\\'s' user=u", "host=db PASSWORD='***' user=u", {"it's"}},
      {"host=db sslpassword=k3y", "host=db sslpassword=***", {"k3y"}},
      {"sasl.password=kafkapw", "sasl.password=***", {"kafkapw"}},
      {"ssl.key.password=kp", "ssl.key.password=***", {"kp"}},
      {"sasl.oauthbearer.client.secret=cs", "sasl.oauthbearer.client.secret=***", {"cs"}},
      {"password_hint is not a secret", "password_hint is not a secret", {}},
  };
  for (const auto& form : forms) {
    EXPECT_EQ(redact_secrets(form.text), form.redacted) << form.text;
    EXPECT_EQ(secrets_in(form.text), form.secrets) << form.text;
  }
}

TEST(Secrets, ScrubbingRemovesAKnownSecretInAnySpelling) {
  std::vector<std::string> known = secrets_in("host=db password='s3 cr3t'");
  EXPECT_EQ(scrub_secrets("connection to db failed: s3 cr3t rejected", known), "connection to db failed: *** rejected");
  EXPECT_EQ(scrub_secrets("twice: s3 cr3t and s3 cr3t", known), "twice: *** and ***");
  EXPECT_EQ(scrub_secrets("nothing here", known), "nothing here");
  // A short secret is left to the pattern redaction: "1" would take every id apart.
  EXPECT_EQ(scrub_secrets("e-1 at offset 12", {"1"}), "e-1 at offset 12");
  EXPECT_EQ(scrub_secrets("redis://:1@h", {"1"}), "redis://:***@h");
}

} // namespace
} // namespace dedupctl::core
