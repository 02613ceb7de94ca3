#include "compute_headers.h"

#include <string>

namespace padless::serve::http {

int64_t CharactersOf(const PredictRequest& request) {
  int64_t chars = 0;
  for (const Sequence& s : request.inputs) chars += s.text.size() + (s.pair ? s.pair->size() : 0);
  return chars;
}

void SetComputeHeaders(const std::vector<absl::StatusOr<EngineResult>>& results, int64_t characters,
                       std::chrono::steady_clock::time_point start, HttpResponse& response) {
  int64_t tokens = 0;
  for (const absl::StatusOr<EngineResult>& r : results) {
    if (r.ok()) tokens += r->tokens;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  response.headers.emplace_back("x-compute-type", "padless");
  response.headers.emplace_back("x-compute-tokens", std::to_string(tokens));
  response.headers.emplace_back("x-compute-characters", std::to_string(characters));
  response.headers.emplace_back("x-compute-time", std::to_string(ms));
  response.headers.emplace_back("x-total-time", std::to_string(ms));
}

}  // namespace padless::serve::http
