#include "core/store/dynamodb.hpp"
#include "core/store/aws_config.hpp"

#include "core/util/errors.hpp"
#include "core/util/json_text.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>

namespace dedupctl::core {

namespace {

simdjson::dom::parser& parser() {
  thread_local simdjson::dom::parser instance;
  return instance;
}

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

// The attributes a record's rules read, each once: the key's, then the layout's JSON fields.
std::vector<std::string> read_attributes(const RecordLayout& layout) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) {
      out.push_back(name);
    }
  };
  add(layout.dynamodb.partition);
  add(layout.dynamodb.sort);
  add(layout.json.status);
  add(layout.json.expiration);
  add(layout.json.in_progress_expiration);
  return out;
}

// ,"ProjectionExpression":"#a0,#a1","ExpressionAttributeNames":{"#a0":"id",…} (names such as
// `status` are reserved words in DynamoDB's expressions, so every one goes through a placeholder).
std::string projection(const RecordLayout& layout) {
  auto names = read_attributes(layout);
  std::string expression;
  std::string map;
  for (std::size_t i = 0; i < names.size(); ++i) {
    expression += fmt::format("{}#a{}", i ? "," : "", i);
    map += fmt::format("{}\"#a{}\":{}", i ? "," : "", i, json_string(names[i]));
  }
  return fmt::format(",\"ProjectionExpression\":\"{}\",\"ExpressionAttributeNames\":{{{}}}", expression, map);
}

// {"id":{"S":"…"}} or {"pk":{"S":"idempotency#f"},"sk":{"S":"…"}}
std::string key_object(const RecordLayout& layout, std::string_view key) {
  const auto& schema = layout.dynamodb;
  if (schema.sort.empty()) {
    return fmt::format("{{{}:{{\"S\":{}}}}}", json_string(schema.partition), json_string(key));
  }
  return fmt::format("{{{}:{{\"S\":{}}},{}:{{\"S\":{}}}}}", json_string(schema.partition),
                     json_string(schema.static_partition), json_string(schema.sort), json_string(key));
}

// An attribute's string value ({"S":"…"}), or nullopt.
std::optional<std::string_view> string_attribute(simdjson::dom::object item, std::string_view name) {
  std::string_view text;
  if (item[name]["S"].get(text)) {
    return std::nullopt;
  }
  return text;
}

DynamoRecord record_of(simdjson::dom::object item, const RecordLayout& layout) {
  DynamoRecord out;
  const auto& schema = layout.dynamodb;
  auto partition = string_attribute(item, schema.partition);
  if (!partition) {
    return out;
  }
  if (!schema.sort.empty()) {
    auto sort = string_attribute(item, schema.sort);
    if (!sort || *partition != schema.static_partition) {
      return out;
    }
    out.key = std::string(*sort);
  } else {
    out.key = std::string(*partition);
  }
  // The scalar attributes, in the item's order.
  std::vector<std::pair<std::string, std::string>> fields;
  for (auto [name, typed] : item) {
    if (name == schema.partition || name == schema.sort) {
      continue;
    }
    simdjson::dom::object attribute;
    if (typed.get(attribute) || attribute.size() != 1) {
      continue;
    }
    auto [type, value] = *attribute.begin();
    std::string_view text;
    bool flag = false;
    if (type == "S" && !value.get(text)) {
      fields.emplace_back(std::string(name), json_string(text));
    } else if (type == "N" && !value.get(text) && !text.empty()) {
      fields.emplace_back(std::string(name), std::string(text));
    } else if (type == "BOOL" && !value.get(flag)) {
      fields.emplace_back(std::string(name), flag ? "true" : "false");
    } else if (type == "NULL") {
      fields.emplace_back(std::string(name), "null");
    }
  }
  out.value = "{";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const auto& [name, value] = fields[i];
    bool json = value[0] == '"' || value == "true" || value == "false" || value == "null" || valid_json_number(value);
    out.value += fmt::format("{}{}:{}", i ? "," : "", json_string(name), json ? value : json_string(value));
  }
  out.value += "}";
  return out;
}

std::optional<simdjson::dom::object> parse_object(std::string_view body, std::string_view what, std::string& error) {
  auto parsed = parser().parse(body.data(), body.size(), true);
  simdjson::dom::object object;
  if (parsed.error() || parsed.value_unsafe().get(object)) {
    error = fmt::format("{} is not a JSON object", what);
    return std::nullopt;
  }
  return object;
}

// Records of an array of items; items not the layout's are left out.
bool records_of(simdjson::dom::array items, const RecordLayout& layout, std::vector<DynamoRecord>& out,
                std::string& error) {
  for (auto element : items) {
    simdjson::dom::object item;
    if (element.get(item)) {
      error = "an item is not a JSON object";
      return false;
    }
    auto record = record_of(item, layout);
    if (!record.key.empty()) {
      out.push_back(std::move(record));
    }
  }
  return true;
}

double consumed(simdjson::dom::object answer) {
  double total = 0;
  simdjson::dom::element capacity;
  if (answer["ConsumedCapacity"].get(capacity)) {
    return 0;
  }
  simdjson::dom::array list;
  double units = 0;
  if (!capacity.get(list)) {
    for (auto item : list) {
      if (!item["CapacityUnits"].get(units)) {
        total += units;
      }
    }
  } else if (!capacity["CapacityUnits"].get(units)) {
    total = units;
  }
  return total;
}

std::string condition_names(const RecordLayout& layout) {
  return fmt::format("\"#id\":{},\"#expiry\":{},\"#status\":{},\"#lease\":{}", json_string(layout.dynamodb.partition),
                     json_string(layout.json.expiration.empty() ? "expiration" : layout.json.expiration),
                     json_string(layout.json.status),
                     json_string(layout.json.in_progress_expiration.empty() ? "in_progress_expiration"
                                                                            : layout.json.in_progress_expiration));
}

// The layout's JSON record as an item's attributes (strings as S, numbers as N, the rest left out).
std::string item_of(const RecordLayout& layout, std::string_view key, std::string_view record) {
  std::string key_json = key_object(layout, key);
  std::string out = key_json.substr(0, key_json.size() - 1); // without its closing brace
  auto parsed = parser().parse(record.data(), record.size(), true);
  simdjson::dom::object object;
  if (!parsed.error() && !parsed.value_unsafe().get(object)) {
    for (auto [name, value] : object) {
      std::string_view text;
      if (!value.get(text)) {
        out += fmt::format(",{}:{{\"S\":{}}}", json_string(name), json_string(text));
      } else if (value.is_int64() || value.is_uint64() || value.is_double()) {
        out += fmt::format(",{}:{{\"N\":\"{}\"}}", json_string(name), simdjson::minify(value));
      }
    }
  }
  return out + "}";
}

} // namespace

void as_dynamodb_layout(RecordLayout& layout) {
  check_dynamodb_layout(layout);
  layout.json.conditional_put = true;
}

void check_dynamodb_layout(const RecordLayout& layout) {
  if (layout.value != RecordValue::Json || layout.shape != RecordShape::Key) {
    throw UsageError(fmt::format("--layout {} is not a DynamoDB layout: dynamodb:// reads powertools-python, "
                                 "powertools-typescript, powertools-java or json (with --layout-option for the "
                                 "attribute names)",
                                 layout.name));
  }
  if (!layout.dynamodb.sort.empty() && layout.dynamodb.static_partition.empty()) {
    throw UsageError(fmt::format("--layout-option sort-key={} needs static-partition-key=VALUE, the partition key "
                                 "every record shares (Powertools' static_pk_value: by default "
                                 "idempotency#<the function's name>)",
                                 layout.dynamodb.sort));
  }
  if (layout.dynamodb.sort.empty() && !layout.dynamodb.static_partition.empty()) {
    throw UsageError("--layout-option static-partition-key needs sort-key=NAME: with a static partition key the "
                     "records are told apart by their sort key");
  }
}

std::string batch_get_body(std::string_view table, const RecordLayout& layout,
                           const std::vector<std::string_view>& keys) {
  std::string out = fmt::format("{{\"RequestItems\":{{{}:{{\"Keys\":[", json_string(table));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    out += key_object(layout, keys[i]);
  }
  return out + "]" + projection(layout) + "}},\"ReturnConsumedCapacity\":\"TOTAL\"}";
}

std::optional<BatchGetAnswer> parse_batch_get(std::string_view body, std::string_view table, const RecordLayout& layout,
                                              std::string& error) {
  auto answer = parse_object(body, "BatchGetItem's answer", error);
  if (!answer) {
    return std::nullopt;
  }
  BatchGetAnswer out;
  simdjson::dom::array items;
  if (auto responses = (*answer)["Responses"][table]; !responses.error()) {
    if (responses.get(items) || !records_of(items, layout, out.records, error)) {
      error = fmt::format("BatchGetItem's Responses.{} is not a list of items", table);
      return std::nullopt;
    }
  } else if ((*answer)["Responses"].error()) {
    error = "BatchGetItem's answer has no Responses";
    return std::nullopt;
  }
  simdjson::dom::array keys;
  if (!(*answer)["UnprocessedKeys"][table]["Keys"].get(keys)) {
    for (auto key : keys) {
      simdjson::dom::object object;
      if (key.get(object)) {
        continue;
      }
      auto text =
          string_attribute(object, layout.dynamodb.sort.empty() ? layout.dynamodb.partition : layout.dynamodb.sort);
      if (!text) {
        error = "BatchGetItem's UnprocessedKeys holds a key that is not one it was asked";
        return std::nullopt;
      }
      out.unprocessed.emplace_back(*text);
    }
  }
  out.consumed_units = consumed(*answer);
  return out;
}

std::string scan_body(std::string_view table, const RecordLayout& layout, int segment, int total,
                      std::string_view start_key) {
  std::string out = fmt::format("{{\"TableName\":{}", json_string(table));
  if (total > 1) {
    out += fmt::format(",\"Segment\":{},\"TotalSegments\":{}", segment, total);
  }
  if (!start_key.empty()) {
    out += fmt::format(",\"ExclusiveStartKey\":{}", start_key);
  }
  return out + projection(layout) + ",\"ReturnConsumedCapacity\":\"TOTAL\"}";
}

std::optional<ScanAnswer> parse_scan(std::string_view body, const RecordLayout& layout, std::string& error) {
  auto answer = parse_object(body, "Scan's answer", error);
  if (!answer) {
    return std::nullopt;
  }
  ScanAnswer out;
  simdjson::dom::array items;
  if ((*answer)["Items"].get(items) || !records_of(items, layout, out.records, error)) {
    error = "Scan's answer has no list of Items";
    return std::nullopt;
  }
  simdjson::dom::element last;
  if (!(*answer)["LastEvaluatedKey"].get(last)) {
    out.last_key = simdjson::minify(last);
  }
  std::int64_t scanned = 0;
  if (!(*answer)["ScannedCount"].get(scanned)) {
    out.scanned = scanned;
  }
  out.consumed_units = consumed(*answer);
  return out;
}

std::optional<DynamoRecord> item_record(std::string_view item_json, const RecordLayout& layout, std::string& error) {
  auto item = parse_object(item_json, "the item", error);
  if (!item) {
    return std::nullopt;
  }
  return record_of(*item, layout);
}

std::optional<std::vector<DynamoRecord>> parse_scan_output(std::string_view text, const RecordLayout& layout,
                                                           std::string& error) {
  auto answer = parse_object(text, "the file", error);
  if (!answer) {
    error = "not the JSON of `aws dynamodb scan --output json` (an object with \"Items\")";
    return std::nullopt;
  }
  if (!(*answer)["NextToken"].error()) {
    error = "it ends with a NextToken: the scan stopped at --max-items and does not hold the whole table; scan "
            "again without --max-items (the AWS CLI follows every page itself)";
    return std::nullopt;
  }
  if (auto last = (*answer)["LastEvaluatedKey"]; !last.error() && !last.is_null()) {
    error = "it ends with a LastEvaluatedKey: it is one page of the scan (--no-paginate, --limit without the CLI's "
            "paging, or one call of boto3's scan()) and does not hold the whole table; scan again with `aws dynamodb "
            "scan --output json` and no --no-paginate or --max-items (the AWS CLI follows every page itself)";
    return std::nullopt;
  }
  simdjson::dom::array items;
  if ((*answer)["Items"].get(items)) {
    error = "it has no \"Items\" list: not the output of `aws dynamodb scan --output json`";
    return std::nullopt;
  }
  std::vector<DynamoRecord> out;
  if (!records_of(items, layout, out, error)) {
    return std::nullopt;
  }
  return out;
}

std::optional<DynamoRecord> parse_export_line(std::string_view line, const RecordLayout& layout, std::string& error) {
  auto answer = parse_object(line, "the line", error);
  simdjson::dom::object item;
  if (!answer || (*answer)["Item"].get(item)) {
    error = "not a line of a DynamoDB export in DYNAMODB_JSON ({\"Item\":{…}})";
    return std::nullopt;
  }
  return record_of(item, layout);
}

DynamoError parse_dynamodb_error(std::string_view body) {
  DynamoError out;
  auto parsed = parser().parse(body.data(), body.size(), true);
  simdjson::dom::object object;
  if (!parsed.error() && !parsed.value_unsafe().get(object)) {
    std::string_view type;
    if (object["__type"].get(type) && object["code"].get(type)) {
      type = "";
    }
    out.type = std::string(type.substr(type.rfind('#') == std::string_view::npos ? 0 : type.rfind('#') + 1));
    std::string_view message;
    if (!object["message"].get(message) || !object["Message"].get(message)) {
      out.message = std::string(message);
    }
    return out;
  }
  // XML (an STS or IAM refusal, a proxy's): <Code>…</Code>, <Message>…</Message>.
  out.type = xml_element(body, "Code");
  out.message = xml_element(body, "Message");
  return out;
}

bool is_throttling(std::string_view type) {
  return type == "ProvisionedThroughputExceededException" || type == "ThrottlingException" ||
         type == "RequestLimitExceeded" || type == "Throttling" || type == "TooManyRequestsException";
}

bool is_expired_token(std::string_view type) {
  return type == "ExpiredTokenException" || type == "ExpiredToken" || type == "RequestExpired";
}

bool is_auth_refusal(std::string_view type) {
  return type == "UnrecognizedClientException" || type == "InvalidSignatureException" ||
         type == "SignatureDoesNotMatch" || type == "AccessDeniedException" || type == "AccessDenied" ||
         type == "IncompleteSignatureException" || type == "MissingAuthenticationTokenException" ||
         type == "InvalidClientTokenId" || is_expired_token(type);
}

bool is_table_not_found(std::string_view type) { return type == "ResourceNotFoundException"; }

std::string describe_ttl_body(std::string_view table) {
  return fmt::format("{{\"TableName\":{}}}", json_string(table));
}

std::optional<TableTtl> parse_describe_ttl(std::string_view body, std::string& error) {
  auto answer = parse_object(body, "DescribeTimeToLive's answer", error);
  simdjson::dom::object description;
  if (!answer || (*answer)["TimeToLiveDescription"].get(description)) {
    error = "DescribeTimeToLive's answer has no TimeToLiveDescription";
    return std::nullopt;
  }
  TableTtl out;
  std::string_view text;
  if (!description["TimeToLiveStatus"].get(text)) {
    out.status = std::string(text);
  }
  if (!description["AttributeName"].get(text)) {
    out.attribute = std::string(text);
  }
  return out;
}

std::string describe_table_body(std::string_view table) { return describe_ttl_body(table); }

std::optional<TableFacts> parse_describe_table(std::string_view body, std::string& error) {
  auto answer = parse_object(body, "DescribeTable's answer", error);
  simdjson::dom::object table;
  if (!answer || (*answer)["Table"].get(table)) {
    error = "DescribeTable's answer has no Table";
    return std::nullopt;
  }
  TableFacts out;
  std::int64_t n = 0;
  if (!table["ItemCount"].get(n)) {
    out.item_count = n;
  }
  if (!table["TableSizeBytes"].get(n)) {
    out.size_bytes = n;
  }
  simdjson::dom::array schema;
  if (!table["KeySchema"].get(schema)) {
    for (auto element : schema) {
      std::string_view name;
      std::string_view type;
      if (!element["AttributeName"].get(name) && !element["KeyType"].get(type)) {
        out.key_schema.emplace_back(std::string(name), std::string(type));
      }
    }
  }
  std::string_view mode;
  if (!table["BillingModeSummary"]["BillingMode"].get(mode)) {
    out.billing_mode = std::string(mode);
  }
  return out;
}

double scan_read_units(std::int64_t size_bytes) { return std::ceil(static_cast<double>(size_bytes) / 4096.0) * 0.5; }

double lookup_read_units(std::int64_t items) { return static_cast<double>(items) * 0.5; }

std::string claim_put_body(std::string_view table, const RecordLayout& layout, std::string_view key,
                           std::string_view record, std::int64_t now_ms) {
  const auto& json = layout.json;
  std::string in_progress = json.in_progress.empty() ? "INPROGRESS" : json.in_progress.front();
  return fmt::format("{{\"TableName\":{},\"Item\":{},\"ConditionExpression\":\"attribute_not_exists(#id) OR "
                     "#expiry < :now OR (#status = :inprogress AND attribute_exists(#lease) AND #lease < :now_ms)\","
                     "\"ExpressionAttributeNames\":{{{}}},\"ExpressionAttributeValues\":{{\":now\":{{\"N\":\"{}\"}},"
                     "\":now_ms\":{{\"N\":\"{}\"}},\":inprogress\":{{\"S\":{}}}}}}}",
                     json_string(table), item_of(layout, key, record), condition_names(layout),
                     json.expiration_ms ? now_ms : now_ms / 1000,
                     json.in_progress_expiration_ms ? now_ms : now_ms / 1000, json_string(in_progress));
}

std::string put_body(std::string_view table, const RecordLayout& layout, std::string_view key,
                     std::string_view record) {
  return fmt::format("{{\"TableName\":{},\"Item\":{}}}", json_string(table), item_of(layout, key, record));
}

std::string delete_body(std::string_view table, const RecordLayout& layout, std::string_view key) {
  return fmt::format("{{\"TableName\":{},\"Key\":{}}}", json_string(table), key_object(layout, key));
}

std::string get_body(std::string_view table, const RecordLayout& layout, std::string_view key) {
  return fmt::format("{{\"TableName\":{},\"Key\":{},\"ConsistentRead\":true}}", json_string(table),
                     key_object(layout, key));
}

std::optional<DynamoRecord> parse_get(std::string_view body, const RecordLayout& layout, std::string& error) {
  auto answer = parse_object(body, "GetItem's answer", error);
  if (!answer) {
    return std::nullopt;
  }
  simdjson::dom::object item;
  if ((*answer)["Item"].get(item)) {
    return DynamoRecord{};
  }
  return record_of(item, layout);
}

} // namespace dedupctl::core
