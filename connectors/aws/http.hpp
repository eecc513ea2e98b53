#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <string>

// What every AWS request of connectors/aws sets on its curl handle: a POST of `body` to `url`,
// the answer appended to `answer`, http(s) only, no signals.
namespace dedupctl::connectors::aws {

void prepare_post(CURL* curl, const std::string& url, const std::string& body, std::string& answer,
                  std::int64_t timeout_ms);

} // namespace dedupctl::connectors::aws
