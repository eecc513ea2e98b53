#include "core/side_effect.hpp"
#include "core/util/errors.hpp"

#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

TEST(SideEffect, ParsesTypeEqualsClass) {
  EXPECT_EQ(parse_side_effect("PaymentCharged=external"),
            std::make_pair(std::string("PaymentCharged"), SideEffect::External));
  EXPECT_EQ(parse_side_effect("AuditLogged=internal").second, SideEffect::Internal);
  EXPECT_EQ(parse_side_effect("CacheWarmed=idempotent").second, SideEffect::Idempotent);
  // The last '=' splits: a type may contain one.
  EXPECT_EQ(parse_side_effect("a=b=idempotent"), std::make_pair(std::string("a=b"), SideEffect::Idempotent));
}

TEST(SideEffect, RefusesWhatIsNotTypeEqualsAKnownClassNamingTheFlag) {
  for (const char* bad : {"PaymentCharged", "=external", "PaymentCharged=", "PaymentCharged=External", "x=maybe"}) {
    try {
      parse_side_effect(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--side-effects"), std::string::npos) << e.what();
    }
  }
}

TEST(SideEffect, NamesAreTheReportsWords) {
  EXPECT_EQ(to_string(SideEffect::External), "external");
  EXPECT_EQ(to_string(SideEffect::Internal), "internal");
  EXPECT_EQ(to_string(SideEffect::Idempotent), "idempotent");
}

} // namespace
} // namespace dedupctl::core
