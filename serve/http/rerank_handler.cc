// POST /rerank (and POST / on a reranker): every (query, text) pair through the cross-encoder in
// one engine submission, answered with TEI's ranks, highest score first (rerank_api.h).
#include <string>
#include <utility>
#include <vector>

#include "padless/serve/http/http_server.h"
#include "padless/serve/http/rerank_api.h"

namespace padless::serve::http {

void HttpServer::HandleRerank(const HttpRequest& req, Reply reply) {
  RerankParse parsed = ParseRerankRequest(req.body, {options_.max_client_batch_size});
  if (!parsed.ok()) return reply->Send(ErrorResponse(*parsed.error));
  if (std::optional<ApiError> e = WrongKind(ModelKind::kReranker, "/rerank")) {
    return reply->Send(ErrorResponse(*e));
  }
  std::vector<EngineRequest> pairs(parsed.request.texts.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    pairs[i].text = parsed.request.query;
    pairs[i].pair = parsed.request.texts[i];
    pairs[i].truncate = parsed.request.truncate.value_or(options_.auto_truncate);
  }
  SubmitThenAnswer(std::move(pairs), reply,
                   [this, request = std::move(parsed.request)](Results results) -> HttpResponse {
                     std::vector<float> scores;
                     scores.reserve(results.size());
                     for (const absl::StatusOr<EngineResult>& r : results) {
                       if (!r.ok()) return ErrorResponse(FromEngineStatus(r.status()));
                       scores.push_back(request.raw_scores ? r->scores[0] : r->probabilities[0]);
                     }
                     absl::StatusOr<std::string> body = RerankResponseJson(scores, request);
                     if (!body.ok()) return ErrorResponse(FromEngineStatus(body.status()));
                     HttpResponse response;
                     response.body = *std::move(body);
                     return response;
                   });
}

}  // namespace padless::serve::http
