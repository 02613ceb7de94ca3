// TEI's x-compute-* response headers (tokens, characters, time), which some clients log. Private
// to serve/http.
#ifndef PADLESS_SERVE_HTTP_COMPUTE_HEADERS_H_
#define PADLESS_SERVE_HTTP_COMPUTE_HEADERS_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/serve/http/http_message.h"
#include "padless/serve/http/predict_request.h"
#include "padless/serve/inference_engine.h"

namespace padless::serve::http {

// The characters of a predict request's texts (pairs: both texts).
int64_t CharactersOf(const PredictRequest& request);

// Adds the headers to `response`: the results' model input tokens, `characters`, and the time
// since `start` in milliseconds.
void SetComputeHeaders(const std::vector<absl::StatusOr<EngineResult>>& results, int64_t characters,
                       std::chrono::steady_clock::time_point start, HttpResponse& response);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_COMPUTE_HEADERS_H_
