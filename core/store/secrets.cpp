#include "core/store/secrets.hpp"

#include "core/util/text.hpp"

#include <algorithm>
#include <cctype>

namespace dedupctl::core {

namespace {

// Literal secrets shorter than this are left to the pattern redaction.
constexpr std::size_t k_min_scrubbed = 4;

struct Secret {
  std::size_t begin = 0; // the value's bytes in the text, quotes excluded
  std::size_t end = 0;
  std::string value; // as used: unquoted, unescaped
  bool uri = false;  // percent-encoded (a URI's userinfo or query)
};

bool key_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; }

// scheme://user:secret@host or, for Redis (whose AUTH takes a password alone), scheme://secret@host.
void uri_userinfo(std::string_view text, std::vector<Secret>& out) {
  for (std::size_t scheme = text.find("://"); scheme != std::string_view::npos; scheme = text.find("://", scheme + 3)) {
    std::size_t start = scheme + 3;
    std::size_t stop = text.find_first_of(" \t\r\n?#", start);
    std::string_view authority = text.substr(start, stop == std::string_view::npos ? text.npos : stop - start);
    auto at = authority.rfind('@');
    if (at == std::string_view::npos) {
      continue;
    }
    auto colon = authority.substr(0, at).find(':');
    std::size_t name = scheme;
    while (name > 0 && (std::isalnum(static_cast<unsigned char>(text[name - 1])) || text[name - 1] == '+')) {
      --name;
    }
    bool redis = ascii_lower(text.substr(name, scheme - name)).starts_with("redis");
    if (colon == std::string_view::npos && !redis) {
      continue; // postgres://user@host: a user, not a secret
    }
    std::size_t begin = start + (colon == std::string_view::npos ? 0 : colon + 1);
    if (start + at > begin) {
      out.push_back({begin, start + at, std::string(text.substr(begin, start + at - begin)), true});
    }
  }
}

// KEY = VALUE where KEY names a password or a secret; VALUE bare (to a space or '&') or quoted.
void keywords(std::string_view text, std::vector<Secret>& out) {
  std::string folded = ascii_lower(text);
  for (std::string_view word : {"password", "secret"}) {
    for (std::size_t hit = folded.find(word); hit != std::string::npos; hit = folded.find(word, hit + 1)) {
      std::size_t key_end = hit + word.size();
      while (key_end < text.size() && key_char(text[key_end])) {
        ++key_end;
      }
      std::size_t i = key_end;
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
        ++i;
      }
      if (i >= text.size() || text[i] != '=') {
        continue;
      }
      ++i;
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
        ++i;
      }
      Secret s;
      if (i < text.size() && (text[i] == '\'' || text[i] == '"')) {
        char quote = text[i];
        s.begin = ++i;
        while (i < text.size() && text[i] != quote) {
          if (text[i] == '\\' && i + 1 < text.size()) {
            ++i;
          }
          s.value += text[i++];
        }
        s.end = i;
      } else {
        s.begin = i;
        while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])) && text[i] != '&') {
          ++i;
        }
        s.end = i;
        s.value = std::string(text.substr(s.begin, s.end - s.begin));
        s.uri = s.begin > 0 && (folded.rfind('?', s.begin) != std::string::npos);
      }
      if (s.end > s.begin) {
        out.push_back(std::move(s));
      }
    }
  }
}

std::vector<Secret> find_secrets(std::string_view text) {
  std::vector<Secret> out;
  uri_userinfo(text, out);
  keywords(text, out);
  std::sort(out.begin(), out.end(), [](const Secret& a, const Secret& b) { return a.begin < b.begin; });
  return out;
}

std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

} // namespace

std::string redact_secrets(std::string_view text) {
  std::string out;
  std::size_t at = 0;
  for (const auto& s : find_secrets(text)) {
    if (s.begin < at) {
      continue; // overlapping forms: the first one covered it
    }
    out.append(text.substr(at, s.begin - at));
    out += "***";
    at = s.end;
  }
  out.append(text.substr(at));
  return out;
}

std::vector<std::string> secrets_in(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& s : find_secrets(text)) {
    out.push_back(s.value);
    if (s.uri) {
      if (auto decoded = percent_decoded(s.value); decoded != s.value) {
        out.push_back(decoded);
      }
    }
  }
  return out;
}

std::string scrub_secrets(std::string_view text, const std::vector<std::string>& known) {
  std::string out = redact_secrets(text);
  for (const auto& secret : known) {
    if (secret.size() < k_min_scrubbed || secret == "***") {
      continue; // "1" or "pw" would also take ids and words apart; the typed forms are redacted above
    }
    for (std::size_t pos = out.find(secret); pos != std::string::npos; pos = out.find(secret, pos + 3)) {
      out.replace(pos, secret.size(), "***");
    }
  }
  return out;
}

} // namespace dedupctl::core
