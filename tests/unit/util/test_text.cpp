#include "core/identity/key_template.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;

TEST(Text, SplitKeepsEmptyPartsAndLowerIsAsciiOnly) {
  using dedupctl::core::split;
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string_view>{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string_view>{""}));
  EXPECT_EQ(split("schema.table", '.'), (std::vector<std::string_view>{"schema", "table"}));
  EXPECT_EQ(dedupctl::core::ascii_lower("Inbox_\xc3\x89"), "inbox_\xc3\x89");
}
