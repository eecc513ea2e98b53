// The window layouts: an in-process window of ids (memory:), which an audit simulates against the
// log (core/window) rather than reads. Their options size the window as the consumer sized it.
#include "core/store/layout.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dedupctl::core {

namespace {

RecordLayout window_layout(WindowKind kind, std::string library) {
  RecordLayout layout;
  layout.name = std::string(to_string(kind));
  layout.home = LayoutHome::Window;
  layout.library = std::move(library);
  layout.window.kind = kind;
  return layout;
}

constexpr std::string_view k_window_options =
    "capacity=N, bloom-items=N, bloom-fp=P (0 < P < 1), bloom-impl=bits-and-blooms|guava, "
    "scope=partition|consumer";

constexpr std::uint64_t k_max_window_capacity = 4'294'967'294;

} // namespace

std::string_view to_string(WindowKind kind) {
  switch (kind) {
  case WindowKind::Lru:
    return "lru";
  case WindowKind::LruBloom:
    return "lru-bloom";
  case WindowKind::BloomExact:
    return "bloom-exact";
  case WindowKind::None:
    break;
  }
  return "";
}

std::string_view to_string(BloomImpl impl) { return impl == BloomImpl::Guava ? "guava" : "bits-and-blooms"; }

std::string_view to_string(WindowScope scope) { return scope == WindowScope::Consumer ? "consumer" : "partition"; }

std::vector<RecordLayout> window_layouts() {
  return {
      window_layout(WindowKind::Lru, "an in-process LRU of the last `capacity` ids (memory:)"),
      window_layout(WindowKind::LruBloom,
                    "an in-process LRU, then a Bloom filter whose \"maybe\" means skip (memory:)"),
      window_layout(WindowKind::BloomExact,
                    "an in-process Bloom filter whose \"maybe\" a bounded set of `capacity` ids decides (memory:)"),
  };
}

void apply_window_option(WindowSpec& spec, std::string_view option) {
  auto eq = option.find('=');
  std::string_view name = eq == std::string_view::npos ? std::string_view() : option.substr(0, eq);
  std::string_view value = eq == std::string_view::npos ? std::string_view() : option.substr(eq + 1);
  auto count = [&](std::uint64_t& out) {
    if (!parse_whole(value, out) || out == 0) {
      throw UsageError(fmt::format("--layout-option {}: {} is a whole number above 0", option, name));
    }
  };
  if (name == "capacity") {
    count(spec.capacity);
    if (spec.capacity > k_max_window_capacity) { // the window's slots are 32-bit, one kept for "none"
      throw UsageError(fmt::format("--layout-option {}: capacity is at most {} ids", option, k_max_window_capacity));
    }
  } else if (name == "bloom-items") {
    count(spec.bloom_items);
  } else if (name == "bloom-fp") {
    double fp = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), fp);
    if (ec != std::errc{} || ptr != value.data() + value.size() || !(fp > 0.0 && fp < 1.0)) {
      throw UsageError(fmt::format("--layout-option {}: bloom-fp is a rate above 0 and below 1 (0.01)", option));
    }
    spec.bloom_fp = fp;
  } else if (name == "bloom-impl" && (value == "bits-and-blooms" || value == "guava")) {
    spec.bloom_impl = value == "guava" ? BloomImpl::Guava : BloomImpl::BitsAndBlooms;
    spec.bloom_impl_named = true;
  } else if (name == "scope" && (value == "partition" || value == "consumer")) {
    spec.scope = value == "consumer" ? WindowScope::Consumer : WindowScope::Partition;
  } else {
    throw UsageError(
        fmt::format("--layout-option {}: --layout {} takes {}", option, to_string(spec.kind), k_window_options));
  }
  if (!spec.has_bloom() && name.starts_with("bloom-")) {
    throw UsageError(fmt::format("--layout-option {}: --layout lru has no Bloom filter (lru-bloom and bloom-exact "
                                 "have)",
                                 option));
  }
}

void check_window_options(const RecordLayout& layout) {
  const WindowSpec& spec = layout.window;
  std::vector<std::string> missing;
  if (spec.capacity == 0) {
    missing.emplace_back("capacity=N");
  }
  if (spec.has_bloom() && spec.bloom_items == 0) {
    missing.emplace_back("bloom-items=N");
  }
  if (spec.has_bloom() && spec.bloom_fp == 0) {
    missing.emplace_back("bloom-fp=P");
  }
  if (!missing.empty()) {
    throw UsageError(fmt::format("--layout {} needs --layout-option {}: the window's sizes as the consumer sets "
                                 "them",
                                 layout.name, fmt::join(missing, " --layout-option ")));
  }
}

} // namespace dedupctl::core
