#include "core/store/dynamodb.hpp"

#include "core/store/layout.hpp"
#include "core/store/record_state.hpp"
#include "core/util/errors.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;

namespace {

RecordLayout python() { return find_layout("powertools-python"); }

RecordLayout sorted() {
  RecordLayout layout = python();
  apply_layout_option(layout, "sort-key=sk");
  apply_layout_option(layout, "static-partition-key=idempotency#billing");
  return layout;
}

} // namespace

TEST(DynamoLayout, ASortKeyNeedsItsStaticPartitionKeyAndOnlyJsonLayoutsReadTables) {
  EXPECT_NO_THROW(check_dynamodb_layout(python()));
  EXPECT_NO_THROW(check_dynamodb_layout(sorted()));
  RecordLayout half = python();
  apply_layout_option(half, "sort-key=sk");
  EXPECT_THROW(check_dynamodb_layout(half), UsageError);
  EXPECT_THROW(check_dynamodb_layout(find_layout("plain")), UsageError);
  EXPECT_THROW(check_dynamodb_layout(find_layout("spring-hash")), UsageError);
  // Java digests the id's text, not its JSON.
  EXPECT_EQ(find_layout("powertools-java").key_template, "{prefix}#{event_id|md5}");
  EXPECT_EQ(find_layout("powertools-java").home, LayoutHome::Dynamodb);
}

TEST(DynamoRequests, BatchGetNamesEveryKeyAndReadsOnlyTheRulesAttributesThroughPlaceholders) {
  std::string body = batch_get_body("t", python(), {"f#a", "f#\"b\""});
  EXPECT_EQ(body, R"({"RequestItems":{"t":{"Keys":[{"id":{"S":"f#a"}},{"id":{"S":"f#\"b\""}}],)"
                  R"("ProjectionExpression":"#a0,#a1,#a2,#a3","ExpressionAttributeNames":{"#a0":"id","#a1":"status",)"
                  R"("#a2":"expiration","#a3":"in_progress_expiration"}}},"ReturnConsumedCapacity":"TOTAL"})");
  std::string with_sort = batch_get_body("t", sorted(), {"k"});
  EXPECT_NE(with_sort.find(R"({"id":{"S":"idempotency#billing"},"sk":{"S":"k"}})"), std::string::npos) << with_sort;
}

TEST(DynamoAnswers, ItemsBecomeTheLayoutsJsonRecordsAndUnprocessedKeysAreAskedAgain) {
  std::string error;
  auto answer = parse_batch_get(
      R"({"Responses":{"t":[{"id":{"S":"f#a"},"status":{"S":"INPROGRESS"},"expiration":{"N":"1800000000"},)"
      R"("in_progress_expiration":{"N":"1700000000000"},"data":{"B":"AAEC"},"flag":{"BOOL":true}}]},)"
      R"("UnprocessedKeys":{"t":{"Keys":[{"id":{"S":"f#b"}}]}},"ConsumedCapacity":[{"TableName":"t","CapacityUnits":1.5}]})",
      "t", python(), error);
  ASSERT_TRUE(answer) << error;
  ASSERT_EQ(answer->records.size(), 1u);
  EXPECT_EQ(answer->records[0].key, "f#a");
  EXPECT_EQ(answer->records[0].value,
            R"({"status":"INPROGRESS","expiration":1800000000,"in_progress_expiration":1700000000000,"flag":true})");
  EXPECT_EQ(answer->unprocessed, std::vector<std::string>{"f#b"});
  EXPECT_DOUBLE_EQ(answer->consumed_units, 1.5);
  RecordState state = present_record(std::nullopt, answer->records[0].value);
  read_record_value(python(), answer->records[0].value, state);
  EXPECT_TRUE(state.claim);
  EXPECT_EQ(state.claim_until_ms, 1700000000000);
  EXPECT_EQ(state.expires_at_ms, 1800000001000) << "Python's int(time()) passes expiration a second later";

  EXPECT_FALSE(parse_batch_get("{}", "t", python(), error));
  EXPECT_FALSE(parse_batch_get("<html>", "t", python(), error));
}

TEST(DynamoAnswers, ItemsOfAnotherPartitionOrWithoutAStringKeyAreNotRecords) {
  std::string error;
  auto other = item_record(R"({"id":{"S":"idempotency#other"},"sk":{"S":"k"}})", sorted(), error);
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->key.empty());
  auto mine =
      item_record(R"({"id":{"S":"idempotency#billing"},"sk":{"S":"k"},"status":{"S":"COMPLETED"}})", sorted(), error);
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->key, "k");
  EXPECT_EQ(mine->value, R"({"status":"COMPLETED"})");
  auto numeric = item_record(R"({"id":{"N":"5"}})", python(), error);
  ASSERT_TRUE(numeric);
  EXPECT_TRUE(numeric->key.empty());
  // A number DynamoDB accepts but JSON does not is kept as text.
  auto odd = item_record(R"({"id":{"S":"x"},"expiration":{"N":"+5"}})", python(), error);
  EXPECT_EQ(odd->value, R"({"expiration":"+5"})");
}

TEST(DynamoFiles, AScanCutByMaxItemsAndLinesThatAreNotItemsAreRefused) {
  std::string error;
  auto scan = parse_scan_output(R"({"Items":[{"id":{"S":"a"}},{"id":{"S":"b"}}],"Count":2,"ScannedCount":2,)"
                                R"("ConsumedCapacity":null})",
                                python(), error);
  ASSERT_TRUE(scan) << error;
  EXPECT_EQ(scan->size(), 2u);
  EXPECT_FALSE(parse_scan_output(R"({"Items":[],"NextToken":"x"})", python(), error));
  EXPECT_NE(error.find("--max-items"), std::string::npos);
  EXPECT_FALSE(parse_scan_output(R"({"Count":0})", python(), error));
  // One page of a scan (--no-paginate, --limit, boto3's scan()) names where the next would start.
  EXPECT_FALSE(parse_scan_output(R"({"Items":[{"id":{"S":"a"}}],"Count":1,"LastEvaluatedKey":{"id":{"S":"a"}}})",
                                 python(), error));
  EXPECT_NE(error.find("LastEvaluatedKey"), std::string::npos) << error;
  EXPECT_NE(error.find("--no-paginate"), std::string::npos) << error;
  EXPECT_TRUE(parse_scan_output(R"({"Items":[{"id":{"S":"a"}}],"Count":1,"LastEvaluatedKey":null})", python(), error))
      << "a last page's null key: " << error;
  auto line = parse_export_line(R"({"Item":{"id":{"S":"a"},"status":{"S":"COMPLETED"}}})", python(), error);
  ASSERT_TRUE(line);
  EXPECT_EQ(line->key, "a");
  EXPECT_FALSE(parse_export_line(R"({"id":{"S":"a"}})", python(), error));
}

TEST(DynamoErrors, TheTypeIsReadFromJsonAndXmlAndSorted) {
  auto json = parse_dynamodb_error(
      R"({"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"})");
  EXPECT_EQ(json.type, "ProvisionedThroughputExceededException");
  EXPECT_EQ(json.message, "slow down");
  EXPECT_TRUE(is_throttling(json.type));
  auto xml =
      parse_dynamodb_error("<ErrorResponse><Errors><Error><Code>SignatureDoesNotMatch</Code><Message>no</Message>"
                           "</Error></Errors></ErrorResponse>");
  EXPECT_EQ(xml.type, "SignatureDoesNotMatch");
  EXPECT_TRUE(is_auth_refusal(xml.type));
  EXPECT_FALSE(is_throttling(xml.type));
  EXPECT_TRUE(is_expired_token("ExpiredTokenException"));
  EXPECT_TRUE(is_table_not_found("ResourceNotFoundException"));
}

TEST(DynamoRequests, TheClaimIsPowertoolsConditionalPutWithTheLayoutsUnits) {
  std::string body =
      claim_put_body("t", python(), "f#a", R"({"status":"INPROGRESS","expiration":1800000000})", 1'700'000'000'123);
  EXPECT_NE(body.find("attribute_not_exists(#id) OR #expiry < :now OR (#status = :inprogress AND "
                      "attribute_exists(#lease) AND #lease < :now_ms)"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find(R"(":now":{"N":"1700000000"})"), std::string::npos) << body;
  EXPECT_NE(body.find(R"(":now_ms":{"N":"1700000000123"})"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("Item":{"id":{"S":"f#a"},"status":{"S":"INPROGRESS"},"expiration":{"N":"1800000000"}})"),
            std::string::npos)
      << body;
}

TEST(DynamoCosts, ReadUnitsAreHalfAUnitPer4KiBOrPerItem) {
  EXPECT_DOUBLE_EQ(scan_read_units(0), 0);
  EXPECT_DOUBLE_EQ(scan_read_units(1), 0.5);
  EXPECT_DOUBLE_EQ(scan_read_units(4096 * 10 + 1), 5.5);
  EXPECT_DOUBLE_EQ(lookup_read_units(1'000'000), 500'000);
  std::string error;
  auto facts =
      parse_describe_table(R"({"Table":{"ItemCount":7,"TableSizeBytes":900,"KeySchema":[{"AttributeName":)"
                           R"("id","KeyType":"HASH"}],"BillingModeSummary":{"BillingMode":"PAY_PER_REQUEST"}}})",
                           error);
  ASSERT_TRUE(facts) << error;
  EXPECT_EQ(facts->item_count, 7);
  EXPECT_EQ(facts->key_schema, (std::vector<std::pair<std::string, std::string>>{{"id", "HASH"}}));
  auto ttl =
      parse_describe_ttl(R"({"TimeToLiveDescription":{"TimeToLiveStatus":"ENABLED","AttributeName":"exp"}})", error);
  ASSERT_TRUE(ttl);
  EXPECT_EQ(ttl->attribute, "exp");
}
