#include "core/identity/field_spec.hpp"
#include "core/identity/identify.hpp"
#include "core/util/errors.hpp"
#include "tests/unit/fakes.hpp"
#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;
using dedupctl::testing::OwnedEvent;

TEST(FieldSpec, ParsesAndRejects) {
  auto specs = parse_field_specs("header:event_id,json:/meta/eventId,key,offset", "--id");
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].kind, FieldKind::Header);
  EXPECT_EQ(specs[0].name, "event_id");
  EXPECT_EQ(specs[1].kind, FieldKind::Json);
  EXPECT_EQ(specs[1].name, "/meta/eventId");
  EXPECT_EQ(specs[2].kind, FieldKind::Key);
  EXPECT_EQ(specs[3].kind, FieldKind::Offset);
  EXPECT_EQ(to_string(specs), "header:event_id,json:/meta/eventId,key,offset");
  for (const char* bad : {"", "header:", "json:event_id", "json:", "body:/x", "key,", "json:/a~2b"}) {
    EXPECT_THROW(parse_field_specs(bad, "--id"), UsageError) << bad;
  }
}
