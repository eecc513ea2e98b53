// MD5() is deprecated in OpenSSL 3 in favour of EVP; see digest() for why md5 uses it still. First,
// before any header that may include OpenSSL's: they read the macro once.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "core/identity/template_filter.hpp"

#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/md5.h>

#include <array>
#include <cstdint>
#include <stdexcept>

namespace dedupctl::core {

namespace {

constexpr std::array<std::pair<std::string_view, TemplateFilter>, 12> k_filters{{
    {"json", TemplateFilter::Json},
    {"json-ascii", TemplateFilter::JsonAscii},
    {"md5", TemplateFilter::Md5},
    {"sha1", TemplateFilter::Sha1},
    {"sha256", TemplateFilter::Sha256},
    {"sha512", TemplateFilter::Sha512},
    {"hex", TemplateFilter::Hex},
    {"base64", TemplateFilter::Base64},
    {"base64url", TemplateFilter::Base64Url},
    {"lower", TemplateFilter::Lower},
    {"upper", TemplateFilter::Upper},
    {"java", TemplateFilter::Java},
}};

std::string filter_list() {
  std::string out;
  for (const auto& [name, filter] : k_filters) {
    out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

bool is_digest(TemplateFilter filter) {
  return filter == TemplateFilter::Md5 || filter == TemplateFilter::Sha1 || filter == TemplateFilter::Sha256 ||
         filter == TemplateFilter::Sha512;
}

// OpenSSL's implementation of each digest, fetched once (a fetch at every call costs more than an
// event id's digest).
const EVP_MD* digest_of(TemplateFilter filter) {
  static const EVP_MD* md5 = EVP_MD_fetch(nullptr, "MD5", nullptr);
  static const EVP_MD* sha1 = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  static const EVP_MD* sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  static const EVP_MD* sha512 = EVP_MD_fetch(nullptr, "SHA512", nullptr);
  const EVP_MD* md = filter == TemplateFilter::Md5      ? md5
                     : filter == TemplateFilter::Sha1   ? sha1
                     : filter == TemplateFilter::Sha256 ? sha256
                                                        : sha512;
  if (!md) {
    throw std::runtime_error(fmt::format("OpenSSL has no {} digest", to_string(filter)));
  }
  return md;
}

// md5, the digest the libraries' keys use (Powertools in every runtime), through OpenSSL's MD5():
// EVP's MD5 took 243 ns an event id, 100 of them in EVP's own bookkeeping (a context's state made
// and freed at each init), MD5() 145 ns, and rendering the keys is a fifth of an audit's main
// thread (tests/bench/layouts, tests/bench/micro BM_RenderKeyPowertools). MD5() also works where
// a FIPS configuration refuses EVP's MD5: a dedup key is no security digest.
// The others: one EVP context a thread, kept (EVP_Digest makes and frees one a call).
void digest(TemplateFilter filter, const std::string& in, std::string& out) {
  if (filter == TemplateFilter::Md5) {
    unsigned char md[MD5_DIGEST_LENGTH];
    MD5(reinterpret_cast<const unsigned char*>(in.data()), in.size(), md);
    out.assign(reinterpret_cast<const char*>(md), sizeof md);
    return;
  }
  struct Context {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Context() { EVP_MD_CTX_free(ctx); }
  };
  thread_local Context context;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (context.ctx == nullptr || EVP_DigestInit_ex2(context.ctx, digest_of(filter), nullptr) != 1 ||
      EVP_DigestUpdate(context.ctx, in.data(), in.size()) != 1 || EVP_DigestFinal_ex(context.ctx, md, &size) != 1) {
    throw std::runtime_error(fmt::format("OpenSSL's {} digest failed", to_string(filter)));
  }
  out.assign(reinterpret_cast<const char*>(md), size);
}

void hex(const std::string& in, std::string& out) { out = hex_encode(in); }

void escape_u(std::uint32_t unit, std::string& out) { fmt::format_to(std::back_inserter(out), "\\u{:04x}", unit); }

// The short escapes JSON has for '"', '\\' and five control characters; false for others.
bool short_escape(std::uint32_t c, std::string& out) {
  switch (c) {
  case '"':
    out += "\\\"";
    return true;
  case '\\':
    out += "\\\\";
    return true;
  case '\b':
    out += "\\b";
    return true;
  case '\f':
    out += "\\f";
    return true;
  case '\n':
    out += "\\n";
    return true;
  case '\r':
    out += "\\r";
    return true;
  case '\t':
    out += "\\t";
    return true;
  default:
    return false;
  }
}

// Where the bytes from `i` on that a JSON string literal keeps as they are end: all but control
// characters, '"' and '\\' (`ascii`: and all but printable ASCII). They are copied a run at a time.
std::size_t kept_run_end(const std::string& in, std::size_t i, bool ascii) {
  for (; i < in.size(); ++i) {
    auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x20 || c == '"' || c == '\\' || (ascii && c > 0x7e)) {
      break;
    }
  }
  return i;
}

// JSON.stringify: the short escapes, other control characters as \u00XX, every other byte as it is.
// (core::append_json_string writes every control character as \u00XX, "\n" too: not the bytes a
// library hashes.)
void json(const std::string& in, std::string& out) {
  out = "\"";
  for (std::size_t i = 0; i < in.size();) {
    std::size_t end = kept_run_end(in, i, false);
    out.append(in, i, end - i);
    if (end == in.size()) {
      break;
    }
    auto c = static_cast<unsigned char>(in[end]);
    if (!short_escape(c, out)) {
      escape_u(c, out); // a control character
    }
    i = end + 1;
  }
  out += '"';
}

// Python's json.dumps (ensure_ascii): printable ASCII as it is, the short escapes, every other
// character as \uXXXX, beyond the BMP as a surrogate pair.
void json_ascii(const std::string& in, std::string& out) {
  out = "\"";
  for (std::size_t i = 0; i < in.size();) {
    std::size_t end = kept_run_end(in, i, true);
    out.append(in, i, end - i);
    if (end == in.size()) {
      break;
    }
    i = end;
    std::uint32_t c = next_code_point(in, i);
    if (short_escape(c, out)) {
      continue;
    }
    if (c > 0xffff) {
      c -= 0x10000;
      escape_u(0xd800 + (c >> 10), out);
      escape_u(0xdc00 + (c & 0x3ff), out);
    } else {
      escape_u(c, out);
    }
  }
  out += '"';
}

} // namespace

std::string_view to_string(TemplateFilter filter) {
  for (const auto& [name, f] : k_filters) {
    if (f == filter) {
      return name;
    }
  }
  return "json";
}

std::vector<TemplateFilter> parse_template_filters(std::string_view text, std::string_view placeholder) {
  std::vector<TemplateFilter> out;
  std::size_t start = 0;
  for (;;) {
    auto bar = text.find('|', start);
    std::string_view name = text.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    bool known = false;
    for (const auto& [known_name, filter] : k_filters) {
      if (name == known_name) {
        out.push_back(filter);
        known = true;
      }
    }
    if (!known) {
      throw UsageError(fmt::format(
          "placeholder {{{}}}: {}; the filters are {}", placeholder,
          name.empty() ? std::string("a filter is empty") : fmt::format("unknown filter '{}'", name), filter_list()));
    }
    if (bar == std::string_view::npos) {
      return out;
    }
    start = bar + 1;
  }
}

void apply_template_filters(const std::vector<TemplateFilter>& filters, std::string_view value, std::string& out) {
  thread_local std::string current, next;
  current.assign(value);
  bool raw = false; // `current` holds a digest's bytes
  for (TemplateFilter filter : filters) {
    bool takes_bytes = is_digest(filter) || filter == TemplateFilter::Hex || filter == TemplateFilter::Base64 ||
                       filter == TemplateFilter::Base64Url;
    if (raw && !takes_bytes) { // a digest's bytes are text to the others: its hex
      hex(current, next);
      current.swap(next);
    }
    switch (filter) {
    case TemplateFilter::Json:
      json(current, next);
      break;
    case TemplateFilter::JsonAscii:
      json_ascii(current, next);
      break;
    case TemplateFilter::Hex:
      hex(current, next);
      break;
    case TemplateFilter::Base64:
    case TemplateFilter::Base64Url: {
      bool url = filter == TemplateFilter::Base64Url;
      next.clear();
      base64_encode(current, url ? Base64::Url : Base64::Standard, !url, next);
      break;
    }
    case TemplateFilter::Lower:
      next = ascii_lower(current);
      break;
    case TemplateFilter::Upper:
      next = ascii_upper(current);
      break;
    case TemplateFilter::Java: {
      next.clear();
      append_java_string(current, next);
      break;
    }
    default:
      digest(filter, current, next);
      break;
    }
    raw = is_digest(filter);
    current.swap(next);
  }
  if (raw) {
    hex(current, next);
    current.swap(next);
  }
  out += current;
}

} // namespace dedupctl::core
