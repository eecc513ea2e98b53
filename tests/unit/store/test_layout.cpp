// Record layouts: how the idempotency libraries shape their records, read from the bytes they write.
// The Powertools values below were written by aws-lambda-powertools 3.37.0's CachePersistenceLayer
// against redis-server (a completed record and the claim it writes while the handler runs).
#include "core/audit/coverage.hpp"
#include "core/store/dynamodb.hpp"
#include "core/store/layout.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

using namespace dedupctl;
using namespace dedupctl::core;

namespace {

constexpr std::int64_t k_now = 1795803000000; // between the records' times below
constexpr const char* k_completed = R"({"data": "{\"amount\": 12, \"charged\": \"\\u00e9vt-1\"}", "status": )"
                                    R"("COMPLETED", "expiration": 1795806842})";
constexpr const char* k_claim =
    R"({"status": "INPROGRESS", "expiration": 1795806846, "in_progress_expiration": 1795803251703})";

RecordState read(const RecordLayout& layout, std::string_view value, std::optional<std::int64_t> pttl = 3600000) {
  RecordState state = present_record(pttl, value);
  read_record_value(layout, value, state);
  return state;
}

Coverage state_of(const RecordState& record, std::int64_t now, bool orphans_reapplied = true) {
  CoveragePolicy policy;
  policy.now_ms = now;
  policy.ttl = Span::finite(3600000);
  policy.retention = Span::finite(60000); // the records outlive it: covered, not expiring
  policy.orphans_reapplied = orphans_reapplied;
  return classify(record, EventFacts{now - 1000, 5, 10}, policy).state;
}

} // namespace

TEST(Layout, PowertoolsJsonGivesTheStatusTheExpiryAndTheClaimsLease) {
  RecordLayout layout = find_layout("powertools-python");
  RecordState done = read(layout, k_completed);
  EXPECT_FALSE(done.claim);
  EXPECT_FALSE(done.unreadable);
  EXPECT_EQ(done.expires_at_ms, 1795806843000) << "expired once now's whole seconds exceed it";
  RecordState claim = read(layout, k_claim);
  EXPECT_TRUE(claim.claim);
  EXPECT_EQ(claim.claim_until_ms, 1795803251703);
}

// Powertools treats a record past its expiration as expired although Redis still has the key, and
// takes a claim past in_progress_expiration over (applies the event again); before it the claim
// makes every delivery fail (in progress).
TEST(Layout, ThePowertoolsRulesDecideTheCoverage) {
  RecordLayout layout = find_layout("powertools-python");
  EXPECT_EQ(state_of(read(layout, k_completed), k_now), Coverage::Covered);
  EXPECT_EQ(state_of(read(layout, k_completed), 1795806842999), Coverage::Expiring)
      << "a millisecond left, not expired";
  EXPECT_EQ(state_of(read(layout, k_completed), 1795806843000), Coverage::Expired) << "the key is still there";
  EXPECT_EQ(state_of(read(layout, k_claim), k_now), Coverage::InProgress);
  EXPECT_EQ(state_of(read(layout, k_claim), 1795803251703), Coverage::Orphaned);
  CoveragePolicy policy;
  policy.orphans_reapplied = true;
  EXPECT_TRUE(reapplied_on_seek(Coverage::Orphaned, policy));
  policy.orphans_reapplied = false;
  EXPECT_FALSE(reapplied_on_seek(Coverage::Orphaned, policy)) << "a plain claim is skipped by every delivery";
  // A claim written outside Lambda has no lease: it blocks every delivery until the key expires,
  // however long ago its event was consumed.
  RecordState no_lease = read(layout, R"({"status": "INPROGRESS", "expiration": 1795806846})");
  EXPECT_FALSE(no_lease.claim_until_ms);
  EXPECT_EQ(state_of(no_lease, k_now), Coverage::InProgress);
}

TEST(Layout, TheRemainingTimeIsTheLibrarysExpiryOrTheKeysTtlWhicheverComesFirst) {
  RecordLayout layout = find_layout("powertools-python");
  CoveragePolicy policy;
  policy.now_ms = k_now;
  EXPECT_EQ(remaining_ms(read(layout, k_completed, 5000000), policy), 3843000);
  EXPECT_EQ(remaining_ms(read(layout, k_completed, 3600000), policy), 3600000);
  EXPECT_EQ(remaining_ms(read(layout, k_completed, 1000), policy), 1000);
  EXPECT_EQ(remaining_ms(read(layout, k_completed, std::nullopt), policy), 3843000);
}

// A value Powertools cannot use is judged as the library judges it (tests/real-kafka's
// PowertoolsRecords runs the library itself over these values): one its parser refuses, or a status
// EXPIRED, is taken over and the event applied again (expired); one it raises on (no status, a status
// it does not know, a list) fails every delivery and applies nothing, as a claim without a lease.
TEST(Layout, AValueTheLibraryCannotUseIsTakenOverOrFailsAsTheLibraryDoes) {
  RecordLayout python = find_layout("powertools-python");
  RecordLayout typescript = find_layout("powertools-typescript");
  for (const RecordLayout& layout : {python, typescript}) {
    SCOPED_TRACE(layout.name);
    for (std::string_view taken : {"done", R"({"status": "COMPLETED", "expiration": 1)",
                                   R"({"status": "EXPIRED", "expiration": 1795806842})", "{} x"}) {
      EXPECT_TRUE(read(layout, taken).taken_over) << taken;
      EXPECT_EQ(state_of(read(layout, taken), k_now), Coverage::Expired) << taken;
    }
    for (std::string_view fails : {R"([1,2])", R"({"status": 1, "expiration": 1795806842})",
                                   R"({"status": "completed", "expiration": 1795806842})", R"("done")"}) {
      EXPECT_TRUE(read(layout, fails).fails) << fails;
      EXPECT_EQ(state_of(read(layout, fails), k_now), Coverage::InProgress) << fails;
    }
    EXPECT_EQ(state_of(read(layout, R"({"status": "nonsense", "expiration": 17})"), k_now), Coverage::Expired)
        << "expired first: the library's status reads EXPIRED before it is checked";
  }
  EXPECT_TRUE(read(python, "").fails) << "Python: an empty value is no record, raised mid-put";
  EXPECT_TRUE(read(typescript, "").taken_over) << "TypeScript: JSON.parse('') raises";
  EXPECT_TRUE(read(python, "null").fails);
  EXPECT_TRUE(read(typescript, "null").taken_over) << "null[field] raises inside the parse's try";
  EXPECT_EQ(state_of(read(python, R"({"expiration": 17})"), k_now), Coverage::InProgress)
      << "Python: item['status'] raises before any expiry";
  EXPECT_EQ(state_of(read(typescript, R"({"expiration": 17})"), k_now), Coverage::Expired);
  EXPECT_EQ(state_of(read(python, "\xEF\xBB\xBF" + std::string(k_completed)), k_now), Coverage::Covered)
      << "json.loads of bytes drops a byte-order mark";
  EXPECT_TRUE(read(typescript, "\xEF\xBB\xBF" + std::string(k_completed)).taken_over);
  RecordLayout generic = find_layout("json");
  EXPECT_TRUE(read(generic, R"({"status": "UNKNOWN"})").taken_over) << "the generic layout takes it over";
}

// Powertools' numbers as the library compares them: Python's bool(x and int(now) > x) and
// in_progress_expiration > now_ms, JavaScript's Date.now() / 1000 > x with Number's coercions.
TEST(Layout, PowertoolsNumbersAreComparedAsTheLibraryComparesThem) {
  RecordLayout python = find_layout("powertools-python");
  RecordLayout typescript = find_layout("powertools-typescript");
  auto completed = [](std::string_view expiration) {
    return fmt::format(R"({{"status": "COMPLETED", "expiration": {}}})", expiration);
  };
  auto claim = [](std::string_view lease) {
    return fmt::format(R"({{"status": "INPROGRESS", "expiration": 1795806846, "in_progress_expiration": {}}})", lease);
  };
  struct Row {
    std::string value;
    Coverage python;
    Coverage typescript;
  };
  std::vector<Row> rows{
      {completed("1e30"), Coverage::Covered, Coverage::Covered},
      {completed("9223372036854775807"), Coverage::Covered, Coverage::Covered},
      {completed("123456789012345678901234567890"), Coverage::Covered, Coverage::Covered},
      {completed("1e300"), Coverage::Covered, Coverage::Covered},
      {completed("0"), Coverage::Covered, Coverage::Expired},
      {completed("null"), Coverage::Covered, Coverage::Expired},
      {completed("-5"), Coverage::Expired, Coverage::Expired},
      {completed("-1e300"), Coverage::Expired, Coverage::Expired},
      {completed("true"), Coverage::Expired, Coverage::Expired},
      {completed("false"), Coverage::Covered, Coverage::Expired},
      {completed("\"1795806842\""), Coverage::InProgress, Coverage::Covered},
      {completed("\"1795802000\""), Coverage::InProgress, Coverage::Expired},
      {completed("\"\""), Coverage::Covered, Coverage::Expired},
      {completed("\"soon\""), Coverage::InProgress, Coverage::Covered},
      {completed("1795802999.5"), Coverage::Expired, Coverage::Expired},
      {completed("1795803000"), Coverage::Expiring, Coverage::Expiring}, // a second left
      {claim("1e300"), Coverage::InProgress, Coverage::InProgress},
      {claim("0"), Coverage::Orphaned, Coverage::Orphaned},
      {claim("null"), Coverage::InProgress, Coverage::Orphaned},
      {claim("-1"), Coverage::Orphaned, Coverage::Orphaned},
      {claim("true"), Coverage::Orphaned, Coverage::Orphaned},
      {claim("\"1795803251703\""), Coverage::InProgress, Coverage::InProgress},
      {claim("\"1795802000000\""), Coverage::InProgress, Coverage::Orphaned},
      {claim("1795803000000.5"), Coverage::InProgress, Coverage::InProgress},
      {claim("1795803000000"), Coverage::Orphaned, Coverage::Orphaned},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(state_of(read(python, row.value), k_now), row.python) << "python " << row.value;
    EXPECT_EQ(state_of(read(typescript, row.value), k_now), row.typescript) << "typescript " << row.value;
  }
}

// Powertools' DynamoDB layers claim with a conditional PutItem: any number expiration past now takes
// the item over (0 too), a claim without a number lease never lapses, and EXPIRED or an unknown
// status fails rather than being taken over.
TEST(Layout, ADynamoDbItemIsJudgedByThePutsConditionThenByTheItem) {
  for (std::string name : {"powertools-python", "powertools-typescript"}) {
    SCOPED_TRACE(name);
    RecordLayout layout = find_layout(name);
    as_dynamodb_layout(layout);
    auto state = [&](std::string_view value) { return state_of(read(layout, value), k_now); };
    EXPECT_EQ(state(R"({"status": "COMPLETED", "expiration": 0})"), Coverage::Expired) << "0 < now";
    EXPECT_EQ(state(R"({"status": "COMPLETED", "expiration": 1e30})"), Coverage::Covered);
    EXPECT_EQ(state(R"({"status": "COMPLETED", "expiration": null})"),
              name == "powertools-python" ? Coverage::Covered : Coverage::InProgress)
        << "no number: no takeover; TypeScript then reads Number(null), 0, as long past: EXPIRED, inconsistent";
    EXPECT_EQ(state(R"({"status": "COMPLETED"})"),
              name == "powertools-python" ? Coverage::InProgress : Coverage::Covered)
        << "Python reads item['expiration']: a KeyError";
    EXPECT_EQ(state(R"({"status": "EXPIRED", "expiration": 1795806842})"), Coverage::InProgress)
        << "an inconsistent state at every delivery";
    EXPECT_EQ(state(R"({"status": "EXPIRED", "expiration": 17})"), Coverage::Expired);
    EXPECT_EQ(state(R"({"expiration": 1795806842})"), Coverage::InProgress);
    EXPECT_EQ(state(R"({"status": "INPROGRESS", "expiration": 1795806842})"), Coverage::InProgress)
        << "no lease: the put's condition never holds";
    EXPECT_EQ(state(R"({"status": "INPROGRESS", "expiration": 1795806842, "in_progress_expiration": 1795803000000})"),
              Coverage::InProgress)
        << "lease < now_in_millis: not yet";
    EXPECT_EQ(state(R"({"status": "INPROGRESS", "expiration": 1795806842, "in_progress_expiration": 1795802999999})"),
              Coverage::Orphaned);
  }
}

// The record is read as the library's json.loads / JSON.parse reads it, although only the fields
// that decide are looked at: a value that is not one whole JSON object is unreadable, wherever its
// fault lies; a repeated name counts by its last value.
TEST(Layout, AJsonRecordIsReadWholeThoughOnlyItsDecidingFieldsAreKept) {
  RecordLayout layout = find_layout("powertools-python");
  std::string data(4096, 'r');
  std::string big = R"({"data": ")" + data + R"(\"}", "status": "COMPLETED", "expiration": 1795806842})";
  RecordState read_big = read(layout, big);
  EXPECT_FALSE(read_big.unreadable);
  EXPECT_EQ(read_big.expires_at_ms, 1795806843000);
  EXPECT_TRUE(read(layout, std::string(k_completed) + " {}").unreadable) << "trailing content";
  EXPECT_TRUE(read(layout, std::string(k_completed) + "x").unreadable) << "trailing content";
  EXPECT_TRUE(read(layout, R"({"data": "unterminated, "status": "COMPLETED", "expiration": 1})").unreadable);
  EXPECT_TRUE(read(layout, R"({"data": [1, 2, "status": "COMPLETED", "expiration": 1})").unreadable);
  EXPECT_TRUE(read(layout, R"({"status": "COMPLETED", "expiration": 1)").unreadable) << "cut short";
  EXPECT_TRUE(read(layout, R"({"data": tru, "status": "COMPLETED", "expiration": 1})").unreadable);
  EXPECT_TRUE(read(layout, R"({"data": {"a": [1, nul]}, "status": "COMPLETED", "expiration": 1})").unreadable);
  EXPECT_TRUE(read(layout, R"({"data": 1.2.3, "status": "COMPLETED", "expiration": 1})").unreadable);
  RecordState twice = read(layout, R"({"status": "INPROGRESS", "expiration": 1, "status": "COMPLETED", )"
                                   R"("expiration": 1795806842, "expiration": null})");
  EXPECT_FALSE(twice.claim) << "the last status";
  EXPECT_EQ(twice.expires_at_ms, std::nullopt) << "the last expiration, null";
  RecordState text = read(layout, R"({"status": "INPROGRESS", "expiration": "1795806842", )"
                                  R"("in_progress_expiration": 1795803251703.9, "data": {"nested": [1, {"a": "}"}]}})");
  EXPECT_TRUE(text.fails) << "Python's int(now) > str raises";
  RecordState ts_text =
      read(find_layout("powertools-typescript"), R"({"status": "INPROGRESS", "expiration": "1795806842", )"
                                                 R"("in_progress_expiration": 1795803251703.9})");
  EXPECT_EQ(ts_text.expires_at_ms, 1795806842001) << "JavaScript converts a number written as text";
  EXPECT_EQ(ts_text.claim_until_ms, 1795803251704) << "in progress while the fraction is above now";
}

// Claim markers (--in-progress-value) are for values a layout cannot read: a record the layout read
// is a claim by its library's status alone, whatever marker its text begins with.
TEST(Layout, MarkersAreForValuesTheLayoutCannotRead) {
  RecordLayout layout = find_layout("powertools-python");
  std::vector<std::string> markers{"processing", R"({"data")"};
  EXPECT_FALSE(is_claim(read(layout, k_completed), markers)) << "read: COMPLETED, though it begins with a marker";
  EXPECT_TRUE(is_claim(read(layout, k_claim), markers)) << "read: INPROGRESS";
  EXPECT_TRUE(is_claim(read(layout, "processing"), markers)) << "not JSON: a marker";
  EXPECT_TRUE(is_claim(read(layout, R"({"data":"x")"), markers)) << "not whole JSON, begins with a marker";
  EXPECT_FALSE(is_claim(read(layout, "done"), markers));
  RecordState plain = present_record(3600000, R"({"data":"x"})");
  EXPECT_TRUE(is_claim(plain, {R"({"data")"})) << "no layout read it";
  RecordLayout spring = find_layout("spring-hash");
  EXPECT_TRUE(is_claim(read(spring, "processing:run-1"), markers)) << "a replay's claim on a Spring field";
  EXPECT_FALSE(is_claim(read(spring, "1795806842000"), {"1795806842000"})) << "a time, read";
}

// A lookup keeps k_record_padding spare bytes after each value so that a JSON record is parsed where
// it lies, not copied first: the value's length still bounds the record, whatever the spare bytes
// hold (here, the rest of a record that would read as complete).
TEST(Layout, AJsonRecordReadWhereItLiesEndsAtItsLength) {
  RecordLayout layout = find_layout("powertools-python");
  std::string buffer(k_completed);
  buffer.reserve(buffer.size() + k_record_padding);
  auto read_in_place = [&](std::size_t length) {
    RecordState state = present_record(3600000, std::string_view(buffer).substr(0, length));
    read_record_value(layout, state.value, state, buffer.capacity() - length);
    return state;
  };
  RecordState whole = read_in_place(buffer.size());
  EXPECT_FALSE(whole.unreadable);
  EXPECT_EQ(whole.expires_at_ms, 1795806843000);
  std::size_t cut = buffer.find("1795806842");
  RecordState cut_short = read_in_place(cut + 4);
  EXPECT_TRUE(cut_short.unreadable) << "the value ends inside its expiration";
  EXPECT_EQ(cut_short.expires_at_ms, std::nullopt);
  EXPECT_TRUE(read_in_place(buffer.size() - 1).unreadable) << "the closing brace lies past the value";
  std::string after = R"( {"status": "COMPLETED"})"; // spare bytes that are JSON themselves
  buffer += after;
  buffer.reserve(buffer.size() + k_record_padding);
  EXPECT_FALSE(read_in_place(buffer.size() - after.size()).unreadable) << "trailing content is past the value";
  EXPECT_EQ(read_in_place(buffer.size() - after.size()).expires_at_ms, 1795806843000);
}

TEST(Layout, TheGenericJsonLayoutTakesItsFieldNamesAsOptions) {
  RecordLayout layout = find_layout("json");
  apply_layout_option(layout, "status-field=state");
  apply_layout_option(layout, "in-progress=IN_PROGRESS");
  apply_layout_option(layout, "completed=COMPLETE, DONE");
  apply_layout_option(layout, "expiration-field=expiresAt");
  apply_layout_option(layout, "expiration-unit=ms");
  apply_layout_option(layout, "in-progress-expiration-field=");
  RecordState done = read(layout, R"({"state":"DONE","expiresAt":1795803000500})");
  EXPECT_FALSE(done.unreadable);
  EXPECT_EQ(done.expires_at_ms, 1795803000501);
  RecordState claim = read(layout, R"({"state":"IN_PROGRESS","in_progress_expiration":1})");
  EXPECT_TRUE(claim.claim);
  EXPECT_FALSE(claim.claim_until_ms) << "its lease field was switched off";
  EXPECT_THROW(apply_layout_option(layout, "status"), UsageError);
  EXPECT_THROW(apply_layout_option(layout, "expiration-unit=h"), UsageError);
  RecordLayout plain = find_layout("plain");
  EXPECT_THROW(apply_layout_option(plain, "status-field=s"), UsageError);
}

TEST(Layout, KeysComeFromTheLayoutsTemplateWithThePrefix) {
  EXPECT_EQ(layout_key_template(find_layout("powertools-python"), "test-func.__main__.charge", ""),
            "test-func.__main__.charge#{event_id|json-ascii|md5}");
  EXPECT_EQ(layout_key_template(find_layout("powertools-typescript"), "fn", ""), "fn#{event_id|json|md5|base64}");
  EXPECT_EQ(layout_key_template(find_layout("camel-string"), "orders{x}", ""), "orders{{x}}:{event_id}")
      << "a prefix's braces stay literal";
  EXPECT_EQ(layout_key_template(find_layout("plain"), "", ""), "{event_id}");
  EXPECT_EQ(layout_key_template(find_layout("powertools-python"), "", "mine#{event_id|md5}"), "mine#{event_id|md5}");
  try {
    layout_key_template(find_layout("powertools-python"), "", "");
    FAIL() << "a Powertools layout needs a prefix";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--key-prefix"), std::string::npos) << e.what();
  }
}

TEST(Layout, OneKeyLayoutsNameTheirCollectionAsTheServerHoldsIt) {
  using namespace std::string_literals;
  EXPECT_EQ(collection_key(find_layout("spring-hash"), ""), "MetaData");
  EXPECT_EQ(collection_key(find_layout("spring-hash"), "dedup"), "dedup");
  EXPECT_EQ(collection_key(find_layout("camel-set"), "orders"), "\xac\xed\x00\x05\x74\x00\x06orders"s);
  EXPECT_THROW(collection_key(find_layout("camel-set"), ""), UsageError) << "Camel's repository has no default name";
  EXPECT_TRUE(one_key(find_layout("zset")));
  EXPECT_FALSE(one_key(find_layout("camel-string")));
}

TEST(Layout, HashTimesAndScoresAreRead) {
  RecordState spring = read(find_layout("spring-hash"), "1795803000123", std::nullopt);
  EXPECT_FALSE(spring.unreadable);
  EXPECT_FALSE(spring.expires_at_ms) << "Spring's metadata store never expires an entry";
  EXPECT_TRUE(read(find_layout("spring-hash"), "yesterday", std::nullopt).unreadable);
  RecordState scored = read(find_layout("zset"), "1795803600.5", std::nullopt);
  EXPECT_EQ(scored.expires_at_ms, 1795803600500);
  EXPECT_EQ(state_of(scored, k_now), Coverage::Covered);
  EXPECT_EQ(state_of(scored, 1795803600500), Coverage::Expired);
  EXPECT_FALSE(read(find_layout("zset"), "inf", std::nullopt).expires_at_ms);
}

TEST(Layout, TraceShowsTheFieldsTheLibraryWroteButNotItsResponse) {
  auto fields = record_fields(find_layout("powertools-python"), k_completed);
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0], (std::pair<std::string, std::string>{"status", "COMPLETED"}));
  EXPECT_EQ(fields[1], (std::pair<std::string, std::string>{"expiration", "1795806842"}));
  EXPECT_EQ(record_fields(find_layout("spring-hash"), "17").at(0).first, "time_ms");
  EXPECT_TRUE(record_fields(find_layout("plain"), "done").empty());
}

TEST(Layout, ASnapshotKeepsOnlyTheFieldsTheRulesRead) {
  EXPECT_EQ(snapshot_value(find_layout("powertools-python"), k_completed),
            R"({"status":"COMPLETED","expiration":1795806842})");
  EXPECT_EQ(snapshot_value(find_layout("powertools-python"), k_claim),
            R"({"status":"INPROGRESS","expiration":1795806846,"in_progress_expiration":1795803251703})");
  RecordLayout layout = find_layout("powertools-python");
  EXPECT_EQ(snapshot_value(layout, snapshot_value(layout, k_claim)), snapshot_value(layout, k_claim));
  EXPECT_EQ(snapshot_value(find_layout("plain"), "processing:run-1"), "processing:run-1");
}

TEST(Layout, AnUnknownLayoutIsAUsageErrorListingThem) {
  try {
    find_layout("powertools");
    FAIL();
  } catch (const UsageError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("powertools-python"), std::string::npos) << what;
    EXPECT_NE(what.find("camel-set"), std::string::npos) << what;
  }
}

// Powertools for TypeScript compares Date.now() / 1000 with expiration (a millisecond after it is
// expired), and takes an INPROGRESS record without in_progress_expiration over as an orphan.
TEST(Layout, PowertoolsTypeScriptDiffersInTheLastSecondAndInClaimsWithoutALease) {
  RecordLayout layout = find_layout("powertools-typescript");
  EXPECT_EQ(read(layout, k_completed).expires_at_ms, 1795806842001);
  EXPECT_EQ(state_of(read(layout, k_completed), 1795806842001), Coverage::Expired);
  RecordState no_lease = read(layout, R"({"status":"INPROGRESS","expiration":1795806846})");
  EXPECT_EQ(state_of(no_lease, k_now), Coverage::Orphaned);
  EXPECT_EQ(
      state_of(read(find_layout("powertools-python"), R"({"status":"INPROGRESS","expiration":1795806846})"), k_now),
      Coverage::InProgress);
}

// replay --via writes the records the library writes: its claim (with the lease and this run's id,
// which the library ignores) and its completed record, both read back by the layout's own rules.
TEST(Layout, ReplayWritesTheLibrarysClaimAndCompletedRecords) {
  RecordLayout layout = find_layout("powertools-python");
  std::string claim = json_claim_record(layout, 1795806846500, 1795803251703, "r1-2");
  EXPECT_EQ(claim, R"({"status":"INPROGRESS","expiration":1795806846,"in_progress_expiration":1795803251703,)"
                   R"("dedupctl_run":"r1-2"})");
  RecordState read_claim = read(layout, claim);
  EXPECT_TRUE(read_claim.claim);
  EXPECT_EQ(read_claim.claim_until_ms, 1795803251703);
  EXPECT_TRUE(is_own_json_claim(claim, "r1-2"));
  EXPECT_FALSE(is_own_json_claim(claim, "r1-20"));
  EXPECT_FALSE(is_own_json_claim(k_claim, "r1-2")) << "the library's own claim";
  std::string done = json_completed_record(layout, 1795806842000);
  EXPECT_EQ(done, R"({"status":"COMPLETED","expiration":1795806842})");
  EXPECT_EQ(read(layout, done).expires_at_ms, read(layout, k_completed).expires_at_ms) << "as the library's";
  // The generic layout writes the fields and units it was told.
  RecordLayout json = find_layout("json");
  apply_layout_option(json, "status-field=state");
  apply_layout_option(json, "completed=COMPLETE");
  apply_layout_option(json, "in-progress=IN_PROGRESS");
  apply_layout_option(json, "expiration-field=expiresAt");
  apply_layout_option(json, "expiration-unit=ms");
  apply_layout_option(json, "in-progress-expiration-field=");
  EXPECT_EQ(json_claim_record(json, 1000500, 900, "r"),
            R"({"state":"IN_PROGRESS","expiresAt":1000500,"dedupctl_run":"r"})");
  EXPECT_EQ(json_completed_record(json, 1000500), R"({"state":"COMPLETE","expiresAt":1000500})");
}
