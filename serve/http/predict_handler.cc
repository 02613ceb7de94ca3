// POST /predict and POST /: parse the body (predict_request.h), classify every input in one
// engine submission, answer TEI's ranked labels (predict_response.h) or its error.
#include <httplib.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "padless/serve/http/http_server.h"
#include "padless/serve/http/predict_request.h"
#include "padless/serve/http/predict_response.h"
#include "request_trace.h"

namespace padless::serve::http {
namespace {

std::vector<EngineRequest> ToEngineRequests(const PredictRequest& request, bool auto_truncate) {
  std::vector<EngineRequest> out;
  out.reserve(request.inputs.size());
  const bool truncate = request.truncate.value_or(auto_truncate);
  for (const Sequence& s : request.inputs) out.push_back({s.text, s.pair, truncate, std::nullopt, false});
  return out;
}

// TEI's x-compute-* headers, which some clients log.
void SetComputeHeaders(const PredictRequest& request,
                       const std::vector<absl::StatusOr<EngineResult>>& results,
                       std::chrono::steady_clock::time_point start, httplib::Response& res) {
  int64_t tokens = 0, chars = 0;
  for (const absl::StatusOr<EngineResult>& r : results) tokens += r->tokens;
  for (const Sequence& s : request.inputs) chars += s.text.size() + (s.pair ? s.pair->size() : 0);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  res.set_header("x-compute-type", "padless");
  res.set_header("x-compute-tokens", std::to_string(tokens));
  res.set_header("x-compute-characters", std::to_string(chars));
  res.set_header("x-compute-time", std::to_string(ms));
  res.set_header("x-total-time", std::to_string(ms));
}

}  // namespace

void HttpServer::HandlePredict(const httplib::Request& req, httplib::Response& res) {
  const auto start = std::chrono::steady_clock::now();
  if (std::optional<ApiError> e = NotServing()) return SendError(*e, res);
  PredictParse parsed = ParsePredictRequest(req.body, {options_.max_client_batch_size});
  if (!parsed.ok()) return SendError(*parsed.error, res);
  const std::vector<EngineRequest> requests =
      ToEngineRequests(parsed.request, options_.auto_truncate);
  CurrentTrace().inputs = static_cast<int64_t>(requests.size());

  absl::StatusOr<RequestHandle> handle = engine_->Submit(requests);
  if (!handle.ok()) return SendError(FromEngineStatus(handle.status()), res);
  // The handler thread waits: httplib answers a connection's requests in order on one thread.
  const std::vector<absl::StatusOr<EngineResult>> results = handle->Wait();
  std::vector<std::vector<float>> scores;
  scores.reserve(results.size());
  for (const absl::StatusOr<EngineResult>& r : results) {
    if (!r.ok()) return SendError(FromEngineStatus(r.status()), res);
    scores.push_back(parsed.request.raw_scores ? r->scores : r->probabilities);
  }
  absl::StatusOr<std::string> body =
      PredictResponseJson(scores, info_.labels, parsed.request.batch);
  if (!body.ok()) return SendError(FromEngineStatus(body.status()), res);
  metrics_.RecordInputs(static_cast<int64_t>(results.size()));
  SetComputeHeaders(parsed.request, results, start, res);
  res.set_content(std::move(*body), "application/json");
}

}  // namespace padless::serve::http
