// POST /predict (and POST / on a classifier): parse the body (predict_request.h), classify every
// input in one engine submission, answer TEI's ranked labels (predict_response.h) or its error.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "compute_headers.h"
#include "padless/serve/http/http_server.h"
#include "padless/serve/http/predict_request.h"
#include "padless/serve/http/predict_response.h"

namespace padless::serve::http {
namespace {

std::vector<EngineRequest> ToEngineRequests(const PredictRequest& request, bool auto_truncate) {
  std::vector<EngineRequest> out(request.inputs.size());
  const bool truncate = request.truncate.value_or(auto_truncate);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].text = request.inputs[i].text;
    out[i].pair = request.inputs[i].pair;
    out[i].truncate = truncate;
  }
  return out;
}

}  // namespace

void HttpServer::HandlePredict(const HttpRequest& req, Reply reply) {
  const auto start = std::chrono::steady_clock::now();
  PredictParse parsed = ParsePredictRequest(req.body, {options_.max_client_batch_size});
  if (!parsed.ok()) return reply->Send(ErrorResponse(*parsed.error));
  if (engine_->kind() == ModelKind::kEmbedding) {
    return reply->Send(ErrorResponse(*WrongKind(ModelKind::kClassifier, "/predict")));
  }
  std::vector<EngineRequest> requests = ToEngineRequests(parsed.request, options_.auto_truncate);
  SubmitThenAnswer(
      std::move(requests), reply,
      [this, request = std::move(parsed.request), start](Results results) -> HttpResponse {
        std::vector<std::vector<float>> scores;
        scores.reserve(results.size());
        for (const absl::StatusOr<EngineResult>& r : results) {
          if (!r.ok()) return ErrorResponse(FromEngineStatus(r.status()));
          scores.push_back(request.raw_scores ? r->scores : r->probabilities);
        }
        absl::StatusOr<std::string> body = PredictResponseJson(scores, info_.labels, request.batch);
        if (!body.ok()) return ErrorResponse(FromEngineStatus(body.status()));
        HttpResponse response;
        response.body = *std::move(body);
        SetComputeHeaders(results, CharactersOf(request), start, response);
        return response;
      });
}

}  // namespace padless::serve::http
