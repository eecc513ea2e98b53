#include "connectors/file/digest_file.hpp"

#include "core/errors.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

Json example_json(const core::Example& ex) {
  return Json{{"event_id", ex.event_id}, {"topic", ex.topic}, {"partition", ex.partition},
              {"offset", ex.offset},     {"timestamp_ms", ex.timestamp_ms}, {"dedup_key", ex.dedup_key},
              {"note", ex.note},         {"seq", ex.seq}};
}

core::Example example_of_json(const Json& j) {
  core::Example ex;
  ex.event_id = j.at("event_id").get<std::string>();
  ex.topic = j.at("topic").get<std::string>();
  ex.partition = j.at("partition").get<std::int32_t>();
  ex.offset = j.at("offset").get<std::int64_t>();
  ex.timestamp_ms = j.at("timestamp_ms").get<std::int64_t>();
  ex.dedup_key = j.at("dedup_key").get<std::string>();
  ex.note = j.at("note").get<std::string>();
  ex.seq = j.at("seq").get<std::uint64_t>();
  return ex;
}

Json builder_json(const core::FindingBuilder& builder) {
  Json examples = Json::array();
  for (const auto& ex : builder.examples()) {
    examples.push_back(example_json(ex));
  }
  return Json{{"count", builder.count()}, {"partitions", builder.partitions()}, {"examples", std::move(examples)}};
}

core::FindingBuilder builder_of_json(const Json& j, std::size_t max_examples) {
  std::vector<core::Example> examples;
  for (const auto& ex : j.at("examples")) {
    examples.push_back(example_of_json(ex));
  }
  return core::FindingBuilder::restore(max_examples, j.at("count").get<std::int64_t>(),
                                       j.at("partitions").get<std::vector<std::int32_t>>(), std::move(examples));
}

Json source_json(const core::SourceInfo& source) {
  Json partitions = Json::array();
  for (const auto& r : source.partitions) {
    partitions.push_back(Json{{"topic", r.topic},
                              {"partition", r.partition},
                              {"from", r.from},
                              {"to", r.to},
                              {"log_start", opt(r.log_start)},
                              {"log_end", opt(r.log_end)},
                              {"committed", opt(r.committed)},
                              {"seek", opt(r.seek)},
                              {"seek_timestamp", opt(r.seek_timestamp)},
                              {"events", r.events},
                              {"first_timestamp", opt(r.first_timestamp)},
                              {"last_timestamp", opt(r.last_timestamp)},
                              {"clamped", r.clamped},
                              {"requested_from", r.requested_from},
                              {"from_timestamp", opt(r.from_timestamp)}});
  }
  return Json{{"kind", source.kind},
              {"topics", source.topics},
              {"path", source.path},
              {"bootstrap", source.bootstrap},
              {"group", opt(source.group)},
              {"isolation", source.isolation},
              {"partitions", std::move(partitions)},
              {"invalid_lines", source.invalid_lines},
              {"repeated_records", source.repeated_records}};
}

core::SourceInfo source_of_json(const Json& j) {
  core::SourceInfo source;
  source.kind = j.at("kind").get<std::string>();
  source.topics = j.at("topics").get<std::vector<std::string>>();
  source.path = j.at("path").get<std::string>();
  source.bootstrap = j.at("bootstrap").get<std::string>();
  source.group = opt_of<std::string>(j.at("group"));
  source.isolation = j.at("isolation").get<std::string>();
  for (const auto& p : j.at("partitions")) {
    core::PartitionRange r;
    r.topic = p.at("topic").get<std::string>();
    r.partition = p.at("partition").get<std::int32_t>();
    r.from = p.at("from").get<std::int64_t>();
    r.to = p.at("to").get<std::int64_t>();
    r.log_start = opt_of<std::int64_t>(p.at("log_start"));
    r.log_end = opt_of<std::int64_t>(p.at("log_end"));
    r.committed = opt_of<std::int64_t>(p.at("committed"));
    r.seek = opt_of<std::int64_t>(p.at("seek"));
    r.seek_timestamp = opt_of<std::int64_t>(p.at("seek_timestamp"));
    r.events = p.at("events").get<std::int64_t>();
    r.first_timestamp = opt_of<std::int64_t>(p.at("first_timestamp"));
    r.last_timestamp = opt_of<std::int64_t>(p.at("last_timestamp"));
    r.clamped = p.at("clamped").get<bool>();
    r.requested_from = p.at("requested_from").get<std::int64_t>();
    r.from_timestamp = opt_of<std::int64_t>(p.at("from_timestamp"));
    source.partitions.push_back(std::move(r));
  }
  source.invalid_lines = j.at("invalid_lines").get<std::int64_t>();
  source.repeated_records = j.at("repeated_records").get<std::int64_t>();
  return source;
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
              {"source", source_json(h.source)},
              {"log",
               Json{{"events", c.events},
                    {"no_id", c.no_id},
                    {"log_duplicates", c.log_duplicates},
                    {"id_reuse", c.id_reuse},
                    {"semantic_duplicates", c.semantic_duplicates},
                    {"no_id_binary", h.log.no_id_binary},
                    {"missing_id", builder_json(h.log.missing_id)}}},
              {"topics", topics}};
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
  h.source = source_of_json(j.at("source"));
  const Json& log = j.at("log");
  h.log = core::LogTally(h.log_options.max_examples);
  h.log.counters.events = log.at("events").get<std::int64_t>();
  h.log.counters.no_id = log.at("no_id").get<std::int64_t>();
  h.log.counters.log_duplicates = log.at("log_duplicates").get<std::int64_t>();
  h.log.counters.id_reuse = log.at("id_reuse").get<std::int64_t>();
  h.log.counters.semantic_duplicates = log.at("semantic_duplicates").get<std::int64_t>();
  h.log.no_id_binary = log.at("no_id_binary").get<std::int64_t>();
  h.log.missing_id = builder_of_json(log.at("missing_id"), h.log_options.max_examples);
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
    std::setvbuf(m_file, nullptr, _IOFBF, 1 << 20);
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
      throw UsageError(fmt::format("the digest {} ends inside a section: it is cut short or not a digest; write it again",
                                   m_path));
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
  std::uint32_t id_size;
  std::uint32_t key_size;
};
static_assert(sizeof(EventHead) == 40);

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
    if (head.topic >= m_topics.size() || head.id_size + std::uint64_t{head.key_size} > m_section.left()) {
      throw UsageError(fmt::format("the digest {} is damaged (an event names no topic or runs past its section); "
                                   "write it again",
                                   m_path));
    }
    event.seq = head.seq;
    event.topic = m_topics[head.topic];
    event.partition = head.partition;
    event.offset = head.offset;
    event.timestamp_ms = head.timestamp_ms;
    event.event_id.resize(head.id_size);
    m_section.read(event.event_id.data(), head.id_size);
    event.dedup_key.resize(head.key_size);
    m_section.read(event.dedup_key.data(), head.key_size);
    --m_left;
    return true;
  }

private:
  std::string m_path;
  FileSection m_section;
  std::uint64_t m_left;
  const std::vector<std::string>& m_topics;
};

} // namespace

DigestWriter::DigestWriter(const std::string& path) : m_path(path), m_output(path), m_out(m_output.stream()) {
  write(k_magic, sizeof k_magic);
}

DigestWriter::~DigestWriter() = default;

void DigestWriter::write(const void* data, std::size_t size) {
  if (size > 0 && std::fwrite(data, 1, size, m_out) != size) {
    throw UnreachableError(fmt::format("cannot write the digest {}: {}", m_path, std::strerror(errno)));
  }
  m_offset += size;
}

void DigestWriter::add_event(const core::Event& event, std::string_view event_id, std::string_view dedup_key) {
  auto it = m_topics.find(event.topic);
  if (it == m_topics.end()) {
    it = m_topics.emplace(std::string(event.topic), static_cast<std::uint32_t>(m_topics.size())).first;
  }
  EventHead head{event.seq,
                 it->second,
                 event.partition,
                 event.offset,
                 event.timestamp_ms,
                 static_cast<std::uint32_t>(event_id.size()),
                 static_cast<std::uint32_t>(dedup_key.size())};
  write(&head, sizeof head);
  write(event_id.data(), event_id.size());
  write(dedup_key.data(), dedup_key.size());
  ++m_events;
}

void DigestWriter::finish(std::vector<core::DigestRecord>& records, const core::DigestHeader& header) {
  std::uint64_t layout[k_layout_words] = {};
  layout[0] = sizeof k_magic;
  layout[1] = m_events;
  layout[2] = m_offset - sizeof k_magic; // the events' bytes
  layout[3] = records.size();
  auto section = [&](core::DigestOrder order) {
    std::sort(records.begin(), records.end(), [order](const core::DigestRecord& a, const core::DigestRecord& b) {
      return core::digest_before(a, b, order);
    });
    std::uint64_t at = m_offset;
    write(records.data(), records.size() * sizeof(core::DigestRecord));
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
    throw UsageError(fmt::format("{} is not a dedupctl digest ({}): give the files shards wrote with --digest", m_path,
                                 why));
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(m_path.c_str(), "rb"), std::fclose);
  if (!file) {
    throw UsageError(fmt::format("cannot read the digest {}: {}", m_path, std::strerror(errno)));
  }
  char magic[8];
  std::uint64_t layout[k_layout_words];
  char end[8];
  if (std::fread(magic, 1, sizeof magic, file.get()) != sizeof magic || std::memcmp(magic, k_magic, sizeof magic) != 0) {
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
  return std::make_unique<EventStream>(m_path, m_layout.events_at, m_layout.id_at - m_layout.events_at,
                                       m_layout.events, m_topics);
}

} // namespace dedupctl::connectors::file
