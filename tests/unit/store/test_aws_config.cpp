#include "core/store/aws_config.hpp"

#include "core/util/errors.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;

TEST(AwsProfile, TheCredentialsFileWinsOverTheConfigFileAndSectionsAreNamedAsTheCliNamesThem) {
  std::string credentials = "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = d\n"
                            "[prod]\n# rotated weekly\nAWS_Access_Key_Id=AKIAPROD\naws_secret_access_key = p/+=\n";
  std::string config = "[default]\nregion = us-east-1\n[profile prod]\nregion = eu-west-1\n"
                       "aws_access_key_id = AKIACONFIG\ns3 =\n  max_concurrent_requests = 20\n"
                       "[profile ci]\ncredential_process = /bin/creds --json\n"
                       "[profile eks]\nrole_arn = arn:aws:iam::1:role/r\nweb_identity_token_file = /var/token\n";
  auto prod = aws_profile(credentials, "credentials", config, "config", "prod");
  EXPECT_TRUE(prod.found);
  EXPECT_EQ(prod.access_key, "AKIAPROD");
  EXPECT_EQ(prod.secret_key, "p/+=");
  EXPECT_EQ(prod.region, "eu-west-1");
  auto fallback = aws_profile(credentials, "credentials", config, "config", "default");
  EXPECT_EQ(fallback.region, "us-east-1");
  EXPECT_EQ(aws_profile("", "c", config, "config", "ci").credential_process, "/bin/creds --json");
  auto eks = aws_profile("", "c", config, "config", "eks");
  EXPECT_EQ(eks.role_arn, "arn:aws:iam::1:role/r");
  EXPECT_EQ(eks.web_identity_token_file, "/var/token");
  EXPECT_FALSE(aws_profile(credentials, "c", config, "config", "nope").found);
}

TEST(AwsProfile, AMalformedLineIsNamedWithoutItsText) {
  try {
    aws_profile("[prod]\naws_secret_access_key hunter2\n", "/home/u/.aws/credentials", "", "config", "prod");
    FAIL();
  } catch (const UsageError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("/home/u/.aws/credentials:2"), std::string::npos) << what;
    EXPECT_EQ(what.find("hunter2"), std::string::npos) << what;
  }
}

TEST(AwsCredentials, ProcessOutputAndStsAnswersGiveKeysTokensAndWhenTheyLapse) {
  std::string error;
  auto process = parse_process_credentials(
      R"({"Version":1,"AccessKeyId":"ASIA1","SecretAccessKey":"s","SessionToken":"t","Expiration":"2026-11-28T13:00:00Z"})",
      error);
  ASSERT_TRUE(process) << error;
  EXPECT_EQ(process->session_token, "t");
  EXPECT_EQ(process->expires_at_ms, 1795870800000);
  EXPECT_TRUE(credentials_lapse(*process, 1795870800000 - 60'000, 300'000));
  EXPECT_FALSE(credentials_lapse(*process, 1795870800000 - 600'000, 300'000));
  EXPECT_FALSE(parse_process_credentials(R"({"Version":2,"AccessKeyId":"a","SecretAccessKey":"s"})", error));
  EXPECT_FALSE(parse_process_credentials(R"({"Version":1,"AccessKeyId":"a"})", error));
  EXPECT_EQ(error.find("a\""), std::string::npos);

  auto sts = parse_sts_credentials(
      "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIA2</"
      "AccessKeyId>"
      "<SecretAccessKey>x</SecretAccessKey><SessionToken>y</SessionToken><Expiration>2026-11-28T13:00:00.000Z"
      "</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>",
      error);
  ASSERT_TRUE(sts) << error;
  EXPECT_EQ(sts->access_key, "ASIA2");
  EXPECT_EQ(sts->expires_at_ms, 1795870800000);
  EXPECT_FALSE(parse_sts_credentials("<ErrorResponse/>", error));
  EXPECT_EQ(web_identity_form("arn:aws:iam::1:role/r", "s", "tok en\n"),
            "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&"
            "RoleSessionName=s&WebIdentityToken=tok%20en");
}
