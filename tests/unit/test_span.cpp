#include "core/span.hpp"

#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

constexpr std::int64_t k_day = 24 * 3'600'000;

TEST(Span, HasExactlyThreeStates) {
  EXPECT_FALSE(Span().known());
  EXPECT_EQ(Span(), Span::unknown());
  EXPECT_FALSE(Span::unknown().finite_ms());
  EXPECT_TRUE(Span::infinite().known());
  EXPECT_TRUE(Span::infinite().is_infinite());
  EXPECT_FALSE(Span::infinite().finite_ms()) << "an infinite span has no milliseconds to misuse";
  EXPECT_EQ(Span::finite(0).finite_ms(), 0);
  EXPECT_TRUE(Span::finite(5).is_finite());
  EXPECT_NE(Span::finite(5), Span::finite(6));
  EXPECT_EQ(to_text(Span::finite(7 * k_day)), "7d");
  EXPECT_EQ(to_text(Span::infinite()), "infinite");
  EXPECT_EQ(to_text(Span::unknown()), "unknown");
}

} // namespace
} // namespace dedupctl::core
