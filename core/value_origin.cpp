#include "core/value_origin.hpp"

namespace dedupctl::core {

std::string_view origin_name(ValueOrigin origin) {
  switch (origin) {
  case ValueOrigin::Flag:
    return "flag";
  case ValueOrigin::Config:
    return "config";
  case ValueOrigin::Environment:
    return "environment";
  case ValueOrigin::Default:
    return "default";
  }
  return "default";
}

} // namespace dedupctl::core
