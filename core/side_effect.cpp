#include "core/side_effect.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

std::string_view to_string(SideEffect effect) {
  switch (effect) {
  case SideEffect::External:
    return "external";
  case SideEffect::Internal:
    return "internal";
  case SideEffect::Idempotent:
    return "idempotent";
  }
  return "external";
}

std::pair<std::string, SideEffect> parse_side_effect(std::string_view text) {
  auto eq = text.rfind('=');
  auto bad = [&]() -> std::pair<std::string, SideEffect> {
    throw UsageError(fmt::format("invalid --side-effects '{}': expected TYPE=external, TYPE=internal or "
                                 "TYPE=idempotent",
                                 text));
  };
  if (eq == std::string_view::npos || eq == 0) {
    return bad();
  }
  std::string_view value = text.substr(eq + 1);
  SideEffect effect = SideEffect::External;
  if (value == "external") {
    effect = SideEffect::External;
  } else if (value == "internal") {
    effect = SideEffect::Internal;
  } else if (value == "idempotent") {
    effect = SideEffect::Idempotent;
  } else {
    return bad();
  }
  return {std::string(text.substr(0, eq)), effect};
}

} // namespace dedupctl::core
