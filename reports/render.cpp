#include "core/util/errors.hpp"
#include "reports/printable.hpp"
#include "reports/report.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

namespace dedupctl::reports {

Format parse_format(std::string_view name) {
  if (name == "text") {
    return Format::Text;
  }
  if (name == "json") {
    return Format::Json;
  }
  if (name == "markdown" || name == "md") {
    return Format::Markdown;
  }
  if (name == "sarif") {
    return Format::Sarif;
  }
  if (name == "junit") {
    return Format::Junit;
  }
  if (name == "github") {
    return Format::Github;
  }
  if (name == "gitlab") {
    return Format::Gitlab;
  }
  if (name == "html") {
    return Format::Html;
  }
  throw UsageError(
      fmt::format("invalid --format '{}': expected text, json, markdown, sarif, junit, github, gitlab or html", name));
}

std::string_view to_string(Format format) {
  switch (format) {
  case Format::Text:
    return "text";
  case Format::Json:
    return "json";
  case Format::Markdown:
    return "markdown";
  case Format::Sarif:
    return "sarif";
  case Format::Junit:
    return "junit";
  case Format::Github:
    return "github";
  case Format::Gitlab:
    return "gitlab";
  case Format::Html:
    return "html";
  }
  return "text";
}

void render(const Report& report, Format format, std::FILE* out, const RenderOptions& options) {
  switch (format) {
  case Format::Text:
    render_text(printable(report), out, options);
    return;
  case Format::Json:
    render_json(report, out);
    return;
  case Format::Markdown:
    render_markdown(printable(report), out);
    return;
  case Format::Sarif:
    render_sarif(report, out);
    return;
  case Format::Junit:
    render_junit(report, out);
    return;
  case Format::Github:
    render_github(printable(report), out);
    return;
  case Format::Gitlab:
    render_gitlab(printable(report), out);
    return;
  case Format::Html:
    render_html(report, out);
    return;
  default:
    throw UsageError(fmt::format("--format {} is not available for {} yet; use text, json, markdown, sarif, junit, "
                                 "github or gitlab",
                                 to_string(format), report.command));
  }
}

std::string render_to_string(const Report& report, Format format, const RenderOptions& options) {
  char* data = nullptr;
  std::size_t size = 0;
  std::FILE* memory = ::open_memstream(&data, &size);
  if (!memory) {
    throw std::bad_alloc();
  }
  try {
    render(report, format, memory, options);
  } catch (...) {
    std::fclose(memory);
    std::free(data);
    throw;
  }
  std::fclose(memory);
  std::string out(data, size);
  std::free(data);
  return out;
}

} // namespace dedupctl::reports
