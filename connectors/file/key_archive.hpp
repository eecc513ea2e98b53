#pragma once

#include "connectors/file/temp_file.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/util/key_filter.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

// A log analyzer's archive in a temporary file (TMPDIR): each run is appended as it comes, 16 bytes
// a key, with the first key of every 4 KiB block of it kept in memory (8 bytes a 256 keys); a key
// is looked up by reading one block of each run, newest first. The id rule's runs also keep a
// KeyFilter (about 1.5 bytes a key), so that a run is read only for a key it may hold.
namespace dedupctl::connectors::file {

class FileKeyArchive final : public core::KeyArchive {
public:
  enum class Use { SemanticKeys, Ids };
  // A UsageError naming TMPDIR when the file cannot be created.
  explicit FileKeyArchive(Use use = Use::SemanticKeys);
  // None when TMPDIR cannot hold the file (the analyzer then keeps every key in memory); with
  // `verbose`, says so on stderr.
  static std::unique_ptr<FileKeyArchive> try_create(bool verbose, Use use = Use::SemanticKeys);

  bool archive(std::span<const Entry> run) override;
  std::optional<std::uint64_t> latest(std::uint64_t key) override;

  std::size_t runs() const { return m_runs.size(); }
  // How many blocks were read from the file.
  std::uint64_t reads() const { return m_reads; }
  // With `verbose`, says on stderr how many keys it took and how many events asked it, if any.
  void note(bool verbose) const;

private:
  Use m_use;
  bool m_verbose = false;
  static constexpr std::size_t k_block = 256;
  struct Run {
    std::uint64_t at = 0;
    std::size_t count = 0;
    std::vector<std::uint64_t> firsts; // the first key of each block
    std::optional<core::KeyFilter> filter;
  };
  TempFile m_file;
  std::vector<Run> m_runs;
  std::vector<Entry> m_block;
  std::uint64_t m_keys = 0;
  std::uint64_t m_asked = 0;
  std::uint64_t m_found = 0;
  std::uint64_t m_reads = 0;
};

// The semantic rule's and the id rule's archives of one run, each none when TMPDIR cannot hold it.
struct AnalyzerArchives {
  std::unique_ptr<FileKeyArchive> semantic;
  std::unique_ptr<FileKeyArchive> ids;
  explicit AnalyzerArchives(bool verbose);
  void attach(core::LogAnalyzerOptions& options) const;
  void note(bool verbose) const;
};

} // namespace dedupctl::connectors::file
