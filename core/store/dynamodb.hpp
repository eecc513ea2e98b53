#pragma once

#include "core/store/layout.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// DynamoDB's JSON protocol as a layout's records need it, pure: the bodies of the requests
// (BatchGetItem, Scan, PutItem, DeleteItem, DescribeTimeToLive, DescribeTable) and what their
// answers, the AWS CLI's scan output and an export's lines say. A record's value is its item's
// scalar attributes as one JSON object ({"status":"COMPLETED","expiration":1795…}), which the
// layout's JSON rules (read_record_value) read as they read Powertools' Redis values.
namespace dedupctl::core {

// A layout's DynamoDB key schema, checked: a sort key needs the static partition key's value.
// Throws UsageError naming the option.
void check_dynamodb_layout(const RecordLayout& layout);
// The same check, then the layout marked as reading DynamoDB items (JsonRecordFields::conditional_put).
void as_dynamodb_layout(RecordLayout& layout);

// An item as a record: the dedup key (the partition key's value, or the sort key's under the static
// partition key) and the value. `key` is empty for an item that is not one of the layout's (another
// partition, no key attribute, not a string).
struct DynamoRecord {
  std::string key;
  std::string value;
};

// The attributes a lookup reads: the key's and the layout's JSON fields (data, kilobytes, is left).
// BatchGetItem's body for `keys` (at most 100, no two the same).
std::string batch_get_body(std::string_view table, const RecordLayout& layout,
                           const std::vector<std::string_view>& keys);

struct BatchGetAnswer {
  std::vector<DynamoRecord> records;
  std::vector<std::string> unprocessed; // keys DynamoDB did not read: ask again
  double consumed_units = 0;
};
// Nullopt with `error` set when the body is not BatchGetItem's answer.
std::optional<BatchGetAnswer> parse_batch_get(std::string_view body, std::string_view table, const RecordLayout& layout,
                                              std::string& error);

// Scan's body for one segment of `total` (parallel scan), from `start_key` (the last answer's
// LastEvaluatedKey as JSON; "" for the first page).
std::string scan_body(std::string_view table, const RecordLayout& layout, int segment, int total,
                      std::string_view start_key);
struct ScanAnswer {
  std::vector<DynamoRecord> records;
  std::string last_key; // LastEvaluatedKey as JSON; "" when the segment is done
  std::int64_t scanned = 0;
  double consumed_units = 0;
};
std::optional<ScanAnswer> parse_scan(std::string_view body, const RecordLayout& layout, std::string& error);

// An item in DynamoDB's JSON ({"id":{"S":"…"},"expiration":{"N":"…"}}) as a record.
std::optional<DynamoRecord> item_record(std::string_view item_json, const RecordLayout& layout, std::string& error);

// The records of `aws dynamodb scan --output json` (its "Items"); an output cut by --max-items
// (it carries "NextToken") is an error: it does not hold the whole table.
std::optional<std::vector<DynamoRecord>> parse_scan_output(std::string_view text, const RecordLayout& layout,
                                                           std::string& error);
// One line of an export to S3 in DYNAMODB_JSON ({"Item":{…}}).
std::optional<DynamoRecord> parse_export_line(std::string_view line, const RecordLayout& layout, std::string& error);

// An error answer: its type (the part after '#', "ProvisionedThroughputExceededException") and message,
// from DynamoDB's JSON or an XML error document.
struct DynamoError {
  std::string type;
  std::string message;
};
DynamoError parse_dynamodb_error(std::string_view body);
bool is_throttling(std::string_view type);      // retried with backoff
bool is_expired_token(std::string_view type);   // credentials to refresh
bool is_auth_refusal(std::string_view type);    // refused: exit 3
bool is_table_not_found(std::string_view type); // a wrong table or region

std::string describe_ttl_body(std::string_view table);
// DescribeTimeToLive's status ("ENABLED", "DISABLED", …) and attribute.
struct TableTtl {
  std::string status;
  std::string attribute;
};
std::optional<TableTtl> parse_describe_ttl(std::string_view body, std::string& error);

std::string describe_table_body(std::string_view table);
struct TableFacts {
  std::int64_t item_count = 0; // DynamoDB's estimate, renewed about every six hours
  std::int64_t size_bytes = 0;
  std::vector<std::pair<std::string, std::string>> key_schema; // attribute, HASH|RANGE
  std::string billing_mode;                                    // PROVISIONED or PAY_PER_REQUEST
};
std::optional<TableFacts> parse_describe_table(std::string_view body, std::string& error);
// The read units reading a whole table costs, eventually consistent: half a unit per 4 KiB a Scan
// reads, half a unit per item (each at most 4 KiB) a BatchGetItem reads.
double scan_read_units(std::int64_t size_bytes);
double lookup_read_units(std::int64_t items);

// The replay's writes, as Powertools makes them: the claim a conditional PutItem takes
// (attribute_not_exists(id) OR expiration < :now OR (status = INPROGRESS AND in_progress_expiration
// < :now_ms)), the completed record put over it, and a failed delivery's release (DeleteItem).
// `record` is the layout's JSON record (json_claim_record, json_completed_record).
std::string claim_put_body(std::string_view table, const RecordLayout& layout, std::string_view key,
                           std::string_view record, std::int64_t now_ms);
std::string put_body(std::string_view table, const RecordLayout& layout, std::string_view key, std::string_view record);
std::string delete_body(std::string_view table, const RecordLayout& layout, std::string_view key);
// GetItem's body for one key (strongly consistent), for a claim refused to say what holds it.
std::string get_body(std::string_view table, const RecordLayout& layout, std::string_view key);
std::optional<DynamoRecord> parse_get(std::string_view body, const RecordLayout& layout, std::string& error);

} // namespace dedupctl::core
