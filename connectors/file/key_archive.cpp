#include "connectors/file/key_archive.hpp"

#include "core/util/errors.hpp"

#include <algorithm>
#include <cstdio>

namespace dedupctl::connectors::file {

namespace {

const char* rule_of(FileKeyArchive::Use use) {
  return use == FileKeyArchive::Use::Ids ? "the id rule" : "the semantic rule";
}

TempFile open_file(FileKeyArchive::Use use) {
  if (use == FileKeyArchive::Use::Ids) {
    return TempFile("dedupctl-ids", "the id rule's temporary file", "16 bytes an event id beyond the first million");
  }
  return TempFile("dedupctl-semantic", "the semantic rule's temporary file",
                  "16 bytes an event older than the semantic window");
}

} // namespace

FileKeyArchive::FileKeyArchive(Use use) : m_use(use), m_file(open_file(use)) {}

std::unique_ptr<FileKeyArchive> FileKeyArchive::try_create(bool verbose, Use use) {
  try {
    auto archive = std::make_unique<FileKeyArchive>(use);
    archive->m_verbose = verbose;
    return archive;
  } catch (const UsageError& e) {
    if (verbose) {
      std::fprintf(stderr, "dedupctl: %s keeps every key in memory: %s\n", rule_of(use), e.what());
    }
    return nullptr;
  }
}

bool FileKeyArchive::archive(std::span<const Entry> run) {
  Run kept;
  kept.at = m_file.size();
  kept.count = run.size();
  try {
    m_file.append(run.data(), run.size_bytes());
  } catch (const UnreachableError& e) {
    if (m_verbose) {
      std::fprintf(stderr, "dedupctl: %s keeps every key in memory from here on: %s\n", rule_of(m_use), e.what());
    }
    return false; // the file is as it was; the analyzer holds on to these keys
  }
  m_keys += run.size();
  for (std::size_t i = 0; i < run.size(); i += k_block) {
    kept.firsts.push_back(run[i].key);
  }
  if (m_use == Use::Ids) {
    kept.filter.emplace(run.size());
    for (const auto& entry : run) {
      kept.filter->add(entry.key);
    }
  }
  m_runs.push_back(std::move(kept));
  return true;
}

void FileKeyArchive::note(bool verbose) const {
  if (!verbose || m_keys == 0) {
    return;
  }
  if (m_use == Use::Ids) {
    std::fprintf(stderr,
                 "dedupctl: the id rule moved %llu event ids to %s; %llu events with an id not in memory asked "
                 "there (%llu blocks read), %llu found theirs\n",
                 static_cast<unsigned long long>(m_keys), m_file.describe().c_str(),
                 static_cast<unsigned long long>(m_asked), static_cast<unsigned long long>(m_reads),
                 static_cast<unsigned long long>(m_found));
    return;
  }
  std::fprintf(stderr,
               "dedupctl: the semantic rule moved %llu keys older than the window to %s; %llu events with a time "
               "that far back asked there, %llu found their key\n",
               static_cast<unsigned long long>(m_keys), m_file.describe().c_str(),
               static_cast<unsigned long long>(m_asked), static_cast<unsigned long long>(m_found));
}

std::optional<std::uint64_t> FileKeyArchive::latest(std::uint64_t key) {
  ++m_asked;
  for (auto run = m_runs.rbegin(); run != m_runs.rend(); ++run) {
    if (run->filter && !run->filter->may_contain(key)) {
      continue;
    }
    auto after = std::upper_bound(run->firsts.begin(), run->firsts.end(), key);
    if (after == run->firsts.begin()) {
      continue; // below its first key
    }
    auto block = static_cast<std::size_t>(after - run->firsts.begin()) - 1;
    std::size_t begin = block * k_block;
    std::size_t count = std::min(k_block, run->count - begin);
    m_block.resize(count);
    ++m_reads;
    m_file.read(run->at + begin * sizeof(Entry), m_block.data(), count * sizeof(Entry));
    auto it = std::lower_bound(m_block.begin(), m_block.end(), key,
                               [](const Entry& e, std::uint64_t k) { return e.key < k; });
    if (it != m_block.end() && it->key == key) {
      ++m_found;
      return it->value;
    }
  }
  return std::nullopt;
}

AnalyzerArchives::AnalyzerArchives(bool verbose)
    : semantic(FileKeyArchive::try_create(verbose, FileKeyArchive::Use::SemanticKeys)),
      ids(FileKeyArchive::try_create(verbose, FileKeyArchive::Use::Ids)) {}

void AnalyzerArchives::attach(core::LogAnalyzerOptions& options) const {
  options.semantic_archive = semantic.get();
  options.id_archive = ids.get();
}

void AnalyzerArchives::note(bool verbose) const {
  for (const auto* archive : {semantic.get(), ids.get()}) {
    if (archive) {
      archive->note(verbose);
    }
  }
}

} // namespace dedupctl::connectors::file
