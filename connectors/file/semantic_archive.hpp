#pragma once

#include "connectors/file/temp_file.hpp"
#include "core/log_analyzer.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

// The semantic rule's archive in a temporary file (TMPDIR): each run is appended as it comes, 16
// bytes a key, with the first key of every 4 KiB block of it kept in memory (8 bytes a 256 keys);
// a key is looked up by reading one block of each run, newest first.
namespace dedupctl::connectors::file {

class FileSemanticArchive final : public core::SemanticArchive {
public:
  // A UsageError naming TMPDIR when the file cannot be created.
  FileSemanticArchive();
  // None when TMPDIR cannot hold the file (the analyzer then keeps every key in memory); with
  // `verbose`, says so on stderr.
  static std::unique_ptr<FileSemanticArchive> try_create(bool verbose);

  bool archive(std::span<const Entry> run) override;
  std::optional<std::uint64_t> latest(std::uint64_t key) override;

  std::size_t runs() const { return m_runs.size(); }
  // With `verbose`, says on stderr how many keys it took and how many events asked it, if any.
  void note(bool verbose) const;

private:
  bool m_verbose = false;
  static constexpr std::size_t k_block = 256;
  struct Run {
    std::uint64_t at = 0;
    std::size_t count = 0;
    std::vector<std::uint64_t> firsts; // the first key of each block
  };
  TempFile m_file;
  std::vector<Run> m_runs;
  std::vector<Entry> m_block;
  std::uint64_t m_keys = 0;
  std::uint64_t m_asked = 0;
  std::uint64_t m_found = 0;
};

} // namespace dedupctl::connectors::file
