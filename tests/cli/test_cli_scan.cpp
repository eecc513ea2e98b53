#include <gtest/gtest.h>
TEST(Placeholder, Cli) {}
