#include "connectors/file/semantic_archive.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <cstdio>

namespace dedupctl::connectors::file {

FileSemanticArchive::FileSemanticArchive()
    : m_file("dedupctl-semantic", "the semantic rule's temporary file",
             "16 bytes an event older than the semantic window") {}

std::unique_ptr<FileSemanticArchive> FileSemanticArchive::try_create(bool verbose) {
  try {
    auto archive = std::make_unique<FileSemanticArchive>();
    archive->m_verbose = verbose;
    return archive;
  } catch (const UsageError& e) {
    if (verbose) {
      std::fprintf(stderr, "dedupctl: the semantic rule keeps every key in memory: %s\n", e.what());
    }
    return nullptr;
  }
}

bool FileSemanticArchive::archive(std::span<const Entry> run) {
  Run kept;
  kept.at = m_file.size();
  kept.count = run.size();
  try {
    m_file.append(run.data(), run.size_bytes());
  } catch (const UnreachableError& e) {
    if (m_verbose) {
      std::fprintf(stderr, "dedupctl: the semantic rule keeps every key in memory from here on: %s\n", e.what());
    }
    return false; // the file is as it was; the analyzer holds on to these keys
  }
  m_keys += run.size();
  for (std::size_t i = 0; i < run.size(); i += k_block) {
    kept.firsts.push_back(run[i].key);
  }
  m_runs.push_back(std::move(kept));
  return true;
}

void FileSemanticArchive::note(bool verbose) const {
  if (verbose && m_keys > 0) {
    std::fprintf(stderr,
                 "dedupctl: the semantic rule moved %llu keys older than the window to %s; %llu events with a time "
                 "that far back asked there, %llu found their key\n",
                 static_cast<unsigned long long>(m_keys), m_file.describe().c_str(),
                 static_cast<unsigned long long>(m_asked), static_cast<unsigned long long>(m_found));
  }
}

std::optional<std::uint64_t> FileSemanticArchive::latest(std::uint64_t key) {
  ++m_asked;
  for (auto run = m_runs.rbegin(); run != m_runs.rend(); ++run) {
    auto after = std::upper_bound(run->firsts.begin(), run->firsts.end(), key);
    if (after == run->firsts.begin()) {
      continue; // below its first key
    }
    auto block = static_cast<std::size_t>(after - run->firsts.begin()) - 1;
    std::size_t begin = block * k_block;
    std::size_t count = std::min(k_block, run->count - begin);
    m_block.resize(count);
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

} // namespace dedupctl::connectors::file
