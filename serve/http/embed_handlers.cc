// POST /embed, /embed_all and /similarity (and POST / on an embedding model): parse the body,
// embed every input in one engine submission, answer TEI's vectors (embed_response.h) or
// similarities (similarity_api.h), or its error.
#include <chrono>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "compute_headers.h"
#include "embed_inputs.h"
#include "padless/serve/http/embed_request.h"
#include "padless/serve/http/embed_response.h"
#include "padless/serve/http/http_server.h"
#include "padless/serve/http/similarity_api.h"

namespace padless::serve::http {
namespace {

int64_t CharactersOf(const std::vector<EngineRequest>& requests) {
  int64_t chars = 0;
  for (const EngineRequest& r : requests) chars += r.text.size();
  return chars;
}

// Each result's embedding as the request asks (FinishEmbedding), or the first failure.
std::variant<std::vector<std::vector<float>>, ApiError> FinishedVectors(
    std::vector<absl::StatusOr<EngineResult>>& results, bool normalize, int64_t dimensions) {
  std::vector<std::vector<float>> vectors;
  vectors.reserve(results.size());
  for (absl::StatusOr<EngineResult>& r : results) {
    if (!r.ok()) return FromEngineStatus(r.status());
    if (absl::Status s = FinishEmbedding(r->embedding, normalize, dimensions); !s.ok()) {
      return FromEngineStatus(s);
    }
    vectors.push_back(std::move(r->embedding));
  }
  return vectors;
}

HttpResponse Json(absl::StatusOr<std::string> body, const HttpResponse& error) {
  if (!body.ok()) return error;
  HttpResponse response;
  response.body = *std::move(body);
  return response;
}

}  // namespace

void HttpServer::HandleEmbed(const HttpRequest& req, Reply reply) {
  const auto start = std::chrono::steady_clock::now();
  EmbedParse parsed = ParseEmbedRequest(req.body, {options_.max_client_batch_size});
  if (!parsed.ok()) return reply->Send(ErrorResponse(*parsed.error));
  if (std::optional<ApiError> e = WrongKind(ModelKind::kEmbedding, "/embed")) {
    return reply->Send(ErrorResponse(*e));
  }
  const EmbedRequest& request = parsed.request;
  const EmbeddingInfo& model = *engine_->embedding_info();
  if (std::optional<ApiError> e = CheckDimensions(request.dimensions, model)) {
    return reply->Send(ErrorResponse(*e));
  }
  auto requests = EmbedEngineRequests(
      request.inputs,
      {request.truncate.value_or(options_.auto_truncate), request.truncation_direction,
       request.prompt_name, /*token_embeddings=*/false, /*prompts=*/true},
      model, engine_->model().tokenizer);
  if (ApiError* e = std::get_if<ApiError>(&requests)) return reply->Send(ErrorResponse(*e));
  std::vector<EngineRequest>& engine_requests = std::get<0>(requests);
  const int64_t chars = CharactersOf(engine_requests);
  SubmitThenAnswer(std::move(engine_requests), reply,
                   [this, normalize = request.normalize, dims = request.dimensions.value_or(0),
                    chars, start](Results results) -> HttpResponse {
                     auto vectors = FinishedVectors(results, normalize, dims);
                     if (ApiError* e = std::get_if<ApiError>(&vectors)) return ErrorResponse(*e);
                     HttpResponse response =
                         Json(EmbedResponseJson(std::get<0>(vectors)),
                              ErrorResponse(Internal("embedding is not a finite number")));
                     SetComputeHeaders(results, chars, start, response);
                     return response;
                   });
}

void HttpServer::HandleEmbedAll(const HttpRequest& req, Reply reply) {
  EmbedParse parsed = ParseEmbedAllRequest(req.body, {options_.max_client_batch_size});
  if (!parsed.ok()) return reply->Send(ErrorResponse(*parsed.error));
  if (std::optional<ApiError> e = WrongKind(ModelKind::kEmbedding, "/embed_all")) {
    return reply->Send(ErrorResponse(*e));
  }
  const EmbedRequest& request = parsed.request;
  const EmbeddingInfo& model = *engine_->embedding_info();
  auto requests = EmbedEngineRequests(
      request.inputs,
      {request.truncate.value_or(options_.auto_truncate), request.truncation_direction,
       request.prompt_name, /*token_embeddings=*/true, /*prompts=*/true},
      model, engine_->model().tokenizer);
  if (ApiError* e = std::get_if<ApiError>(&requests)) return reply->Send(ErrorResponse(*e));
  SubmitThenAnswer(std::move(std::get<0>(requests)), reply,
                   [this, width = model.hidden_size](Results results) -> HttpResponse {
                     std::vector<std::vector<float>> matrices;
                     for (absl::StatusOr<EngineResult>& r : results) {
                       if (!r.ok()) return ErrorResponse(FromEngineStatus(r.status()));
                       matrices.push_back(std::move(r->token_embeddings));
                     }
                     return Json(EmbedAllResponseJson(matrices, width),
                                 ErrorResponse(Internal("embedding is not a finite number")));
                   });
}

// TEI embeds the source sentence and the others in one batch and answers their cosines.
void HttpServer::HandleSimilarity(const HttpRequest& req, Reply reply) {
  SimilarityParse parsed = ParseSimilarityRequest(req.body, {options_.max_client_batch_size});
  if (!parsed.ok()) return reply->Send(ErrorResponse(*parsed.error));
  if (std::optional<ApiError> e = WrongKind(ModelKind::kEmbedding, "/similarity")) {
    return reply->Send(ErrorResponse(*e));
  }
  const SimilarityRequest& request = parsed.request;
  std::vector<EmbedInput> inputs(1 + request.sentences.size());
  inputs[0].text = request.source_sentence;
  for (size_t i = 0; i < request.sentences.size(); ++i) inputs[i + 1].text = request.sentences[i];
  auto requests = EmbedEngineRequests(
      inputs,
      {request.truncate.value_or(options_.auto_truncate), request.truncation_direction,
       request.prompt_name, /*token_embeddings=*/false, /*prompts=*/true},
      *engine_->embedding_info(), engine_->model().tokenizer);
  if (ApiError* e = std::get_if<ApiError>(&requests)) return reply->Send(ErrorResponse(*e));
  SubmitThenAnswer(std::move(std::get<0>(requests)), reply,
                   [this](Results results) -> HttpResponse {
                     auto vectors = FinishedVectors(results, /*normalize=*/false, 0);
                     if (ApiError* e = std::get_if<ApiError>(&vectors)) return ErrorResponse(*e);
                     std::vector<std::vector<float>>& all = std::get<0>(vectors);
                     const std::vector<float> source = std::move(all.front());
                     all.erase(all.begin());
                     absl::StatusOr<std::vector<float>> cosines = CosineSimilarities(source, all);
                     if (!cosines.ok()) return ErrorResponse(FromEngineStatus(cosines.status()));
                     return Json(SimilarityResponseJson(*cosines),
                                 ErrorResponse(Internal("similarity is not a finite number")));
                   });
}

}  // namespace padless::serve::http
