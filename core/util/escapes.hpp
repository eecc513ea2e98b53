#pragma once

namespace dedupctl::core {

// The backslash escapes JSON and PostgreSQL's COPY text share (\b \f \n \r \t \\): true with the
// character `letter` stands for. Each reader adds its own (\" \/ \uXXXX, \xHH).
inline bool decode_c_escape(char letter, char& out) {
  switch (letter) {
  case 'b':
    out = '\b';
    return true;
  case 'f':
    out = '\f';
    return true;
  case 'n':
    out = '\n';
    return true;
  case 'r':
    out = '\r';
    return true;
  case 't':
    out = '\t';
    return true;
  case '\\':
    out = '\\';
    return true;
  default:
    return false;
  }
}

} // namespace dedupctl::core
