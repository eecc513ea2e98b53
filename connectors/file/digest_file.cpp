#include "connectors/file/digest_file.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace dedupctl::connectors::file {} // namespace dedupctl::connectors::file

// A std::optional as JSON: the value, or null (nlohmann-json 3.11 has no serializer of its own).
namespace nlohmann {
template <typename T> struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& value) {
    if (value) {
      j = *value;
    } else {
      j = nullptr;
    }
  }
  static void from_json(const json& j, std::optional<T>& value) {
    value = j.is_null() ? std::nullopt : std::optional<T>(j.get<T>());
  }
};
} // namespace nlohmann

// The digest header's parts as JSON, by their members' names (nlohmann-json's type macros; enums as
// their numbers). A span is null (unknown), "infinite", or its milliseconds.
namespace dedupctl::core {

void to_json(nlohmann::json& j, const Span& span) {
  if (!span.known()) {
    j = nullptr;
  } else if (span.is_infinite()) {
    j = "infinite";
  } else {
    j = *span.finite_ms();
  }
}

void from_json(const nlohmann::json& j, Span& span) {
  span = j.is_null() ? Span::unknown() : j.is_string() ? Span::infinite() : Span::finite(j.get<std::int64_t>());
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Example, event_id, topic, partition, offset, timestamp_ms, dedup_key, note, seq)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PartitionRange, topic, partition, from, to, log_start, log_end, committed, seek,
                                   seek_timestamp, events, first_timestamp, last_timestamp, clamped, requested_from,
                                   from_timestamp)
// As report-v1 names it, so that a digest reads as it did when the kind was a string.
NLOHMANN_JSON_SERIALIZE_ENUM(SourceKind, {{SourceKind::Kafka, "kafka"}, {SourceKind::File, "file"}})
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SourceInfo, kind, topics, path, bootstrap, group, isolation, partitions,
                                   invalid_lines, repeated_records)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Finding, id, severity, title, count, partitions, examples, advice, file, line,
                                   column, subject)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TtlDecision, span, source, origin, estimate_low, estimate_high)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RetentionDecision, span, source, origin, compacted)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WindowBounds, from, to, from_timestamp)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PartitionWindow, topic, partition, committed, window)

} // namespace dedupctl::core

namespace dedupctl::connectors::file {

namespace {

using Json = nlohmann::json;

constexpr char k_magic[8] = {'D', 'D', 'G', 'S', 'T', '0', '0', '1'};
constexpr char k_end_magic[8] = {'D', 'D', 'G', 'S', 'T', 'E', 'N', 'D'};
constexpr std::size_t k_layout_words = 9;

template <typename T> Json opt(const std::optional<T>& value) { return value ? Json(*value) : Json(nullptr); }
template <typename T> std::optional<T> opt_of(const Json& j) {
  return j.is_null() ? std::nullopt : std::optional<T>(j.get<T>());
}

Json builder_json(const core::FindingBuilder& builder) {
  return Json{{"count", builder.count()}, {"partitions", builder.partitions()}, {"examples", builder.examples()}};
}

core::FindingBuilder builder_of_json(const Json& j, std::size_t max_examples) {
  return core::FindingBuilder::restore(max_examples, j.at("count").get<std::int64_t>(),
                                       j.at("partitions").get<std::vector<std::int32_t>>(),
                                       j.at("examples").get<std::vector<core::Example>>());
}

// The audit's setup, its options' policy flat among the rest.
Json audit_json(const core::AuditDigest& a) {
  const auto& o = a.options;
  const auto& p = o.policy;
  return Json{{"now_ms", p.now_ms},
              {"policy_ttl", p.ttl},
              {"retention_span", p.retention},
              {"compacted", p.compacted},
              {"max_lag_ms", p.max_lag_ms},
              {"lease_ms", p.lease_ms},
              {"in_progress_values", p.in_progress_values},
              {"ttl", o.ttl},
              {"side_effects", o.side_effects},
              {"key_template", o.key_template.text()},
              {"max_examples", o.max_examples},
              {"window_label", o.window_label},
              {"default_window", o.default_window},
              {"has_seek", a.has_seek},
              {"windows", a.windows},
              {"kind", a.kind},
              {"store", a.store},
              {"consumer", a.consumer},
              {"retention", a.retention},
              {"placement_findings", a.placement_findings}};
}

core::AuditDigest audit_of_json(const Json& j) {
  core::AuditDigest a;
  auto& o = a.options;
  auto& p = o.policy;
  p.now_ms = j.at("now_ms").get<std::int64_t>();
  p.ttl = j.at("policy_ttl").get<core::Span>();
  p.retention = j.at("retention_span").get<core::Span>();
  p.compacted = j.at("compacted").get<bool>();
  p.max_lag_ms = j.at("max_lag_ms").get<std::int64_t>();
  p.lease_ms = j.at("lease_ms").get<std::int64_t>();
  p.in_progress_values = j.at("in_progress_values").get<std::vector<std::string>>();
  o.ttl = j.at("ttl").get<core::TtlDecision>();
  j.at("side_effects").get_to(o.side_effects);
  o.key_template = core::KeyTemplate::parse(j.at("key_template").get<std::string>());
  o.max_examples = j.at("max_examples").get<std::size_t>();
  o.window_label = j.at("window_label").get<std::string>();
  o.default_window = j.at("default_window").get<bool>();
  a.has_seek = j.at("has_seek").get<bool>();
  j.at("windows").get_to(a.windows);
  a.kind = j.at("kind").get<std::string>();
  a.store = j.at("store").get<std::string>();
  a.consumer = j.at("consumer").get<std::string>();
  j.at("retention").get_to(a.retention);
  j.at("placement_findings").get_to(a.placement_findings);
  return a;
}

Json header_json(const core::DigestHeader& h, const std::vector<std::string>& topics) {
  const auto& c = h.log.counters;
  return Json{{"command", h.command},
              {"shard", h.shard.index},
              {"shards", h.shard.count},
              {"generated_at_ms", h.generated_at_ms},
              {"complete", h.complete},
              {"exit_code", h.exit_code},
              {"error", opt(h.error)},
              {"settings_key", h.settings_key},
              {"range_key", h.range_key},
              {"settings", h.settings},
              {"settings_origin", h.settings_origin},
              {"fail_on", h.fail_on},
              {"semantic_window_ms", h.log_options.semantic_window_ms},
              {"max_examples", h.log_options.max_examples},
              {"id_specs", h.log_options.id_specs},
              {"check_keys", h.check_keys},
              {"range_order", h.range_order},
              {"source", h.source},
              {"log", Json{{"events", c.events},
                           {"no_id", c.no_id},
                           {"log_duplicates", c.log_duplicates},
                           {"id_reuse", c.id_reuse},
                           {"semantic_duplicates", c.semantic_duplicates},
                           {"no_id_binary", h.log.no_id_binary},
                           {"missing_id", builder_json(h.log.missing_id)}}},
              {"topics", topics},
              {"audit", h.audit ? audit_json(*h.audit) : Json(nullptr)}};
}

core::DigestHeader header_of_json(const Json& j) {
  core::DigestHeader h;
  h.command = j.at("command").get<std::string>();
  h.shard.index = j.at("shard").get<std::uint32_t>();
  h.shard.count = j.at("shards").get<std::uint32_t>();
  h.generated_at_ms = j.at("generated_at_ms").get<std::int64_t>();
  h.complete = j.at("complete").get<bool>();
  h.exit_code = j.at("exit_code").get<int>();
  h.error = opt_of<std::string>(j.at("error"));
  h.settings_key = j.at("settings_key").get<std::string>();
  h.range_key = j.at("range_key").get<std::string>();
  h.settings = j.at("settings").get<std::vector<std::pair<std::string, std::string>>>();
  h.settings_origin = j.at("settings_origin").get<std::map<std::string, std::string>>();
  h.fail_on = j.at("fail_on").get<std::string>();
  h.log_options.semantic_window_ms = j.at("semantic_window_ms").get<std::int64_t>();
  h.log_options.max_examples = j.at("max_examples").get<std::size_t>();
  h.log_options.id_specs = j.at("id_specs").get<std::string>();
  h.check_keys = j.at("check_keys").get<bool>();
  h.range_order = j.at("range_order").get<std::vector<std::string>>();
  h.source = j.at("source").get<core::SourceInfo>();
  const Json& log = j.at("log");
  h.log = core::LogTally(h.log_options.max_examples);
  h.log.counters.events = log.at("events").get<std::int64_t>();
  h.log.counters.no_id = log.at("no_id").get<std::int64_t>();
  h.log.counters.log_duplicates = log.at("log_duplicates").get<std::int64_t>();
  h.log.counters.id_reuse = log.at("id_reuse").get<std::int64_t>();
  h.log.counters.semantic_duplicates = log.at("semantic_duplicates").get<std::int64_t>();
  h.log.no_id_binary = log.at("no_id_binary").get<std::int64_t>();
  h.log.missing_id = builder_of_json(log.at("missing_id"), h.log_options.max_examples);
  if (!j.at("audit").is_null()) {
    h.audit = audit_of_json(j.at("audit"));
  }
  return h;
}

// Reads a section from its own handle, a buffer at a time.
class FileSection {
public:
  FileSection(const std::string& path, std::uint64_t at, std::uint64_t size) : m_path(path), m_left(size) {
    m_file = std::fopen(path.c_str(), "rb");
    if (!m_file || ::fseeko(m_file, static_cast<off_t>(at), SEEK_SET) != 0) {
      throw UsageError(fmt::format("cannot read the digest {}: {}", path, std::strerror(errno)));
    }
    std::setvbuf(m_file, nullptr, _IOFBF, 64 << 10);
  }
  ~FileSection() {
    if (m_file) {
      std::fclose(m_file);
    }
  }
  FileSection(const FileSection&) = delete;
  FileSection& operator=(const FileSection&) = delete;

  void read(void* data, std::size_t size) {
    if (size > m_left || std::fread(data, 1, size, m_file) != size) {
      throw UsageError(
          fmt::format("the digest {} ends inside a section: it is cut short or not a digest; write it again", m_path));
    }
    m_left -= size;
  }
  std::uint64_t left() const { return m_left; }

private:
  std::string m_path;
  std::FILE* m_file = nullptr;
  std::uint64_t m_left;
};

class RecordStream final : public core::DigestRecords {
public:
  RecordStream(const std::string& path, std::uint64_t at, std::uint64_t count)
      : m_section(path, at, count * sizeof(core::DigestRecord)), m_left(count) {}
  bool next(core::DigestRecord& record) override {
    if (m_left == 0) {
      return false;
    }
    m_section.read(&record, sizeof record);
    --m_left;
    return true;
  }

private:
  FileSection m_section;
  std::uint64_t m_left;
};

struct EventHead {
  std::uint64_t seq;
  std::uint32_t topic;
  std::int32_t partition;
  std::int64_t offset;
  std::int64_t timestamp_ms;
  std::int64_t pttl_ms;
  std::int64_t processed_at_ms;
  std::uint32_t id_size;
  std::uint32_t type_size;
  std::uint32_t key_size;
  std::uint32_t value_size;
  std::uint32_t flags;
  std::uint32_t reserved;
};
static_assert(sizeof(EventHead) == 72);

enum : std::uint32_t { k_has_id = 1, k_present = 2, k_has_pttl = 4, k_has_processed_at = 8 };

class EventStream final : public core::DigestEvents {
public:
  EventStream(const std::string& path, std::uint64_t at, std::uint64_t size, std::uint64_t count,
              const std::vector<std::string>& topics)
      : m_path(path), m_section(path, at, size), m_left(count), m_topics(topics) {}
  bool next(core::DigestEvent& event) override {
    if (m_left == 0) {
      return false;
    }
    EventHead head{};
    m_section.read(&head, sizeof head);
    if (head.topic >= m_topics.size() ||
        std::uint64_t{head.id_size} + head.key_size + head.type_size + head.value_size > m_section.left()) {
      throw UsageError(fmt::format("the digest {} is damaged (an event names no topic or runs past its section); "
                                   "write it again",
                                   m_path));
    }
    event.seq = head.seq;
    event.topic = m_topics[head.topic];
    event.partition = head.partition;
    event.offset = head.offset;
    event.timestamp_ms = head.timestamp_ms;
    event.has_id = (head.flags & k_has_id) != 0;
    event.present = (head.flags & k_present) != 0;
    event.pttl_ms = (head.flags & k_has_pttl) ? std::optional<std::int64_t>(head.pttl_ms) : std::nullopt;
    event.processed_at_ms =
        (head.flags & k_has_processed_at) ? std::optional<std::int64_t>(head.processed_at_ms) : std::nullopt;
    read_string(event.event_id, head.id_size);
    read_string(event.type, head.type_size);
    read_string(event.dedup_key, head.key_size);
    read_string(event.value, head.value_size);
    --m_left;
    return true;
  }

private:
  void read_string(std::string& out, std::uint32_t size) {
    out.resize(size);
    m_section.read(out.data(), size);
  }

  std::string m_path;
  FileSection m_section;
  std::uint64_t m_left;
  const std::vector<std::string>& m_topics;
};

} // namespace

DigestWriter::DigestWriter(const std::string& path, std::size_t run_records)
    : m_path(path), m_output(path), m_out(m_output.stream()), m_records(run_records) {
  write(k_magic, sizeof k_magic);
}

DigestWriter::~DigestWriter() = default;

void DigestWriter::write(const void* data, std::size_t size) {
  if (size > 0 && std::fwrite(data, 1, size, m_out) != size) {
    throw UnreachableError(fmt::format("cannot write the digest {}: {}", m_path, std::strerror(errno)));
  }
  m_offset += size;
}

void DigestWriter::add_event(const core::Event& event, const core::Identity& identity, std::string_view dedup_key,
                             const core::RecordState* record) {
  auto it = m_topics.find(event.topic);
  if (it == m_topics.end()) {
    it = m_topics.emplace(std::string(event.topic), static_cast<std::uint32_t>(m_topics.size())).first;
  }
  std::string_view value = record ? record->value : std::string_view{};
  EventHead head{};
  head.seq = event.seq;
  head.topic = it->second;
  head.partition = event.partition;
  head.offset = event.offset;
  head.timestamp_ms = event.timestamp_ms;
  head.id_size = static_cast<std::uint32_t>(identity.id.size());
  head.type_size = static_cast<std::uint32_t>(identity.type.size());
  head.key_size = static_cast<std::uint32_t>(dedup_key.size());
  head.value_size = static_cast<std::uint32_t>(value.size());
  head.flags = identity.has_id ? std::uint32_t{k_has_id} : 0U;
  if (record && record->kind == core::RecordState::Kind::Present) {
    head.flags |= k_present;
  }
  if (record && record->pttl_ms) {
    head.flags |= k_has_pttl;
    head.pttl_ms = *record->pttl_ms;
  }
  if (record && record->processed_at_ms) {
    head.flags |= k_has_processed_at;
    head.processed_at_ms = *record->processed_at_ms;
  }
  write(&head, sizeof head);
  write(identity.id.data(), identity.id.size());
  write(identity.type.data(), identity.type.size());
  write(dedup_key.data(), dedup_key.size());
  write(value.data(), value.size());
  ++m_events;
}

void DigestWriter::finish(const core::DigestHeader& header) {
  std::uint64_t layout[k_layout_words] = {};
  layout[0] = sizeof k_magic;
  layout[1] = m_events;
  layout[2] = m_offset - sizeof k_magic; // the events' bytes
  layout[3] = m_records.count();
  if (header.check_keys && m_records.keyed() != m_records.count()) {
    throw std::logic_error("a digest that compares dedup keys has records without one");
  }
  auto section = [&](core::DigestOrder order) {
    std::uint64_t at = m_offset;
    m_records.write_sorted(order, [this](const void* data, std::size_t size) { write(data, size); });
    return at;
  };
  layout[4] = section(core::DigestOrder::Id);
  layout[5] = section(core::DigestOrder::Semantic);
  layout[6] = header.check_keys ? section(core::DigestOrder::Key) : m_offset;
  std::vector<std::string> topics(m_topics.size());
  for (const auto& [name, index] : m_topics) {
    topics[index] = name;
  }
  std::string text = header_json(header, topics).dump();
  layout[7] = m_offset;
  layout[8] = text.size();
  write(text.data(), text.size());
  write(layout, sizeof layout);
  write(k_end_magic, sizeof k_end_magic);
  m_output.commit();
}

DigestFile::DigestFile(std::string path) : m_path(std::move(path)) {
  auto refuse = [&](const std::string& why) {
    throw UsageError(
        fmt::format("{} is not a dedupctl digest ({}): give the files shards wrote with --digest", m_path, why));
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(m_path.c_str(), "rb"), std::fclose);
  if (!file) {
    throw UsageError(fmt::format("cannot read the digest {}: {}", m_path, std::strerror(errno)));
  }
  char magic[8];
  std::uint64_t layout[k_layout_words];
  char end[8];
  if (std::fread(magic, 1, sizeof magic, file.get()) != sizeof magic ||
      std::memcmp(magic, k_magic, sizeof magic) != 0) {
    refuse("it does not start as one");
  }
  if (::fseeko(file.get(), -static_cast<off_t>(sizeof layout + sizeof end), SEEK_END) != 0 ||
      std::fread(layout, 1, sizeof layout, file.get()) != sizeof layout ||
      std::fread(end, 1, sizeof end, file.get()) != sizeof end || std::memcmp(end, k_end_magic, sizeof end) != 0) {
    refuse("its end is missing: it was cut short");
  }
  m_layout.events_at = layout[0];
  m_layout.events = layout[1];
  std::uint64_t event_bytes = layout[2];
  m_layout.records = layout[3];
  m_layout.id_at = layout[4];
  m_layout.semantic_at = layout[5];
  m_layout.key_at = layout[6];
  m_layout.header_at = layout[7];
  m_layout.header_size = layout[8];
  m_layout.key_records = m_layout.header_at > m_layout.key_at ? m_layout.records : 0;
  if (m_layout.events_at + event_bytes != m_layout.id_at || m_layout.header_size > (64U << 20)) {
    refuse("its sections do not add up");
  }
  std::string text(m_layout.header_size, '\0');
  if (::fseeko(file.get(), static_cast<off_t>(m_layout.header_at), SEEK_SET) != 0 ||
      std::fread(text.data(), 1, text.size(), file.get()) != text.size()) {
    refuse("its header cannot be read");
  }
  try {
    Json j = Json::parse(text);
    m_header = header_of_json(j);
    m_topics = j.at("topics").get<std::vector<std::string>>();
  } catch (const Json::exception& e) {
    refuse(fmt::format("its header does not parse: {}", e.what()));
  }
}

std::unique_ptr<core::DigestRecords> DigestFile::records(core::DigestOrder order) const {
  switch (order) {
  case core::DigestOrder::Id:
    return std::make_unique<RecordStream>(m_path, m_layout.id_at, m_layout.records);
  case core::DigestOrder::Semantic:
    return std::make_unique<RecordStream>(m_path, m_layout.semantic_at, m_layout.records);
  case core::DigestOrder::Key:
    return std::make_unique<RecordStream>(m_path, m_layout.key_at, m_layout.key_records);
  }
  return nullptr;
}

std::unique_ptr<core::DigestEvents> DigestFile::events() const {
  return std::make_unique<EventStream>(m_path, m_layout.events_at, m_layout.id_at - m_layout.events_at, m_layout.events,
                                       m_topics);
}

} // namespace dedupctl::connectors::file
