// POST /v1/embeddings and POST /embeddings: OpenAI's embeddings API as TEI serves it
// (openai_embeddings.h): always normalized, `dimensions` before normalizing, floats or base64,
// the usage's token counts; errors in TEI's OpenAI-compatible shape.
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "embed_inputs.h"
#include "padless/serve/http/http_server.h"
#include "padless/serve/http/openai_embeddings.h"

namespace padless::serve::http {

void HttpServer::HandleOpenAiEmbeddings(const HttpRequest& req, Reply reply) {
  const auto error_response = [this](const ApiError& e) {
    HttpResponse response = ErrorResponse(e);
    response.body = OpenAiErrorJson(e);
    return response;
  };
  OpenAiEmbeddingsParse parsed =
      ParseOpenAiEmbeddingsRequest(req.body, {options_.max_client_batch_size});
  if (!parsed.ok()) return reply->Send(error_response(*parsed.error));
  if (std::optional<ApiError> e = WrongKind(ModelKind::kEmbedding, req.path)) {
    return reply->Send(error_response(*e));
  }
  const OpenAiEmbeddingsRequest& request = parsed.request;
  const EmbeddingInfo& model = *engine_->embedding_info();
  if (std::optional<ApiError> e = CheckDimensions(request.dimensions, model)) {
    return reply->Send(error_response(*e));
  }
  // TEI's OpenAI route embeds without a prompt; the model's default prompt would change vectors
  // that an OpenAI client cannot ask for otherwise, so none is used here either.
  auto requests = EmbedEngineRequests(
      request.inputs,
      {options_.auto_truncate, std::nullopt, std::nullopt, false, /*prompts=*/false}, model,
      engine_->model().tokenizer);
  if (ApiError* e = std::get_if<ApiError>(&requests)) return reply->Send(error_response(*e));
  SubmitThenAnswer(
      std::move(std::get<0>(requests)), reply,
      [this, error_response, dims = request.dimensions.value_or(0),
       base64 = request.encoding_format == EmbeddingEncoding::kBase64](Results results) {
        std::vector<std::vector<float>> vectors;
        int64_t tokens = 0;
        for (absl::StatusOr<EngineResult>& r : results) {
          if (!r.ok()) return error_response(FromEngineStatus(r.status()));
          if (absl::Status s = FinishEmbedding(r->embedding, /*normalize=*/true, dims); !s.ok()) {
            return error_response(FromEngineStatus(s));
          }
          tokens += r->tokens;
          vectors.push_back(std::move(r->embedding));
        }
        absl::StatusOr<std::string> body =
            OpenAiEmbeddingsResponseJson(vectors, options_.model_name, tokens, base64);
        if (!body.ok()) return error_response(Internal("embedding is not a finite number"));
        HttpResponse response;
        response.body = *std::move(body);
        return response;
      });
}

}  // namespace padless::serve::http
