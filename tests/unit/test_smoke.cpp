#include "core/time.hpp"

#include <gtest/gtest.h>

TEST(Smoke, FormatsEpoch) { EXPECT_EQ(dedupctl::core::format_time(0), "1970-01-01T00:00:00.000Z"); }
