#include "connectors/aws/aws.hpp"

#include "core/replay/replay.hpp"
#include "core/store/record_state.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

namespace dedupctl::connectors::aws {

namespace {

class DynamoReplayPlacement final : public core::ReplayPlacement {
public:
  DynamoReplayPlacement(OpenedTable table, const core::Span& ttl, std::int64_t lease_ms,
                        std::vector<std::string> markers, std::function<std::int64_t()> now_ms)
      : m_client(std::move(table.client)), m_store(m_client),
        m_ttl_ms(std::max<std::int64_t>(1, ttl.finite_ms().value_or(1))), m_lease_ms(lease_ms),
        m_markers(std::move(markers)), m_now(std::move(now_ms)) {}

  std::string kind() const override { return "dynamodb"; }
  bool settles_apart() const override { return true; } // the client's handles and credentials are shared safely

  void plan(const std::vector<std::string>& keys, std::vector<core::Claim>& out) override {
    m_store.lookup(keys, m_states);
    std::int64_t now = m_now();
    out.clear();
    for (const auto& state : m_states) {
      out.push_back(core::judge_record(layout(), state, m_markers, now));
    }
  }

  // A conditional PutItem a key, as Powertools' _put_in_progress_record; one refused is read back.
  void claim(const std::vector<std::string>& keys, const std::string& run_id, std::vector<core::Claim>& out) override {
    std::int64_t now = m_now();
    std::string mine = core::json_claim_record(layout(), now + m_ttl_ms, now + m_lease_ms, run_id);
    const std::string& table = m_client->settings().uri.table;
    out.assign(keys.size(), core::Claim::Claimed);
    parallel_for(keys.size(), in_flight(), [&](std::size_t i) {
      if (m_client->call("PutItem", core::claim_put_body(table, layout(), keys[i], mine, now), true)) {
        return;
      }
      auto body = m_client->call("GetItem", core::get_body(table, layout(), keys[i]));
      std::string error;
      auto record = core::parse_get(*body, layout(), error);
      if (!record) {
        throw UnreachableError(fmt::format("DynamoDB at {}: {}", m_client->endpoint(), error));
      }
      if (record->key.empty()) {
        out[i] = core::Claim::HeldByOther; // gone since the refusal: whoever deleted it holds the event
        return;
      }
      core::RecordState state = core::present_record(std::nullopt, record->value);
      core::read_record_value(layout(), record->value, state);
      auto found = core::claim_found(state, core::is_own_json_claim(record->value, run_id), now);
      // Claimed here means the condition would pass now: another writer raced this claim.
      out[i] = found == core::Claim::Claimed ? core::Claim::HeldByOther : found;
    });
  }

  void settle(const std::vector<std::string>& keys, const std::vector<core::Claim>& claims,
              const std::vector<bool>& delivered) override {
    std::string done = core::json_completed_record(layout(), m_now() + m_ttl_ms);
    const std::string& table = m_client->settings().uri.table;
    parallel_for(keys.size(), in_flight(), [&](std::size_t i) {
      if (claims[i] != core::Claim::Claimed && claims[i] != core::Claim::OwnStale) {
        return;
      }
      if (delivered[i]) {
        m_client->call("PutItem", core::put_body(table, layout(), keys[i], done));
      } else {
        m_client->call("DeleteItem", core::delete_body(table, layout(), keys[i]));
      }
    });
  }

private:
  const core::RecordLayout& layout() const { return m_client->settings().layout; }
  std::size_t in_flight() const { return static_cast<std::size_t>(std::max(1, m_client->settings().in_flight)); }

  std::shared_ptr<DynamoClient> m_client;
  DynamoStore m_store;
  std::int64_t m_ttl_ms;
  std::int64_t m_lease_ms;
  std::vector<std::string> m_markers;
  std::function<std::int64_t()> m_now;
  std::vector<core::RecordState> m_states;
};

} // namespace

std::unique_ptr<core::ReplayPlacement> open_dynamo_replay(const AwsSettings& settings, const core::Span& ttl,
                                                          std::int64_t lease_ms, std::vector<std::string> markers,
                                                          std::function<std::int64_t()> now_ms) {
  return std::make_unique<DynamoReplayPlacement>(open_table(settings), ttl, lease_ms, std::move(markers),
                                                 std::move(now_ms));
}

} // namespace dedupctl::connectors::aws
