// POST /v1/embeddings (and POST /embeddings), OpenAI's embeddings API as Hugging Face
// text-embeddings-inference (TEI) serves it (router/src/http/types.rs: OpenAICompatRequest,
// Input, EncodingFormat, OpenAICompatResponse, OpenAICompatErrorResponse; server.rs:
// openai_embed), so that OpenAI's clients work unchanged:
//   {"input": "text" | ["text", ...] | [101, 2023] | [[101, 2023], ...] (texts and ids may mix),
//    "model": "name" | null, "user": "id" | null, "encoding_format": "float" | "base64",
//    "dimensions": n | null}
// answered with
//   {"object": "list",
//    "data": [{"object": "embedding", "embedding": [0.1, ...] or "<base64>", "index": 0}, ...],
//    "model": "<served model name>", "usage": {"prompt_tokens": n, "total_tokens": n}}
// As TEI does: `model` and `user` are read but choose nothing (TEI serves one model and only
// logs a `model` that is not its own), the embeddings are always normalized, truncated at the
// end when the server truncates (auto_truncate), without a prompt; base64 is the float32 values'
// little-endian bytes (TEI's f32 bytes on its x86 and ARM hosts; what OpenAI's client decodes).
// Errors: TEI answers this route's errors in its OpenAICompatErrorResponse shape
// {"message": "...", "code": 422, "type": "Validation"} with the status of its other routes, not
// OpenAI's {"error": {"message", "type": "invalid_request_error", "param", "code"}}; padless
// follows TEI (OpenAiErrorJson), so the statuses and the types are the other routes'. OpenAI's
// client reads either shape (the status decides the exception). Pure; never throws.
#ifndef PADLESS_SERVE_HTTP_OPENAI_EMBEDDINGS_H_
#define PADLESS_SERVE_HTTP_OPENAI_EMBEDDINGS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/embed_request.h"
#include "padless/serve/http/predict_request.h"

namespace padless::serve::http {

// encoding_format: "float" (the default) or "base64" (serde's snake_case names; case matters).
enum class EmbeddingEncoding { kFloat, kBase64 };

struct OpenAiEmbeddingsRequest {
  std::vector<EmbedInput> inputs;  // one element unless `batch`
  bool batch = false;              // sent as a list; `data` is a list either way
  std::optional<std::string> model;
  std::optional<std::string> user;
  EmbeddingEncoding encoding_format = EmbeddingEncoding::kFloat;
  std::optional<int64_t> dimensions;  // keep the first n values (n >= 1), then normalize
};

// The request, or its error (an ApiError as the other routes', for OpenAiErrorJson): 400 for a
// body that is not JSON (or not UTF-8, or too deep), 422 for JSON of the wrong shape (a missing
// `input`, an id that is not a u32, `model` not a string, an unknown `encoding_format`,
// `dimensions` 0 or negative), 422 for a batch over max_client_batch_size, then 400 Empty for an
// empty input ("", [], [[]] or an empty batch), as TEI answers them.
struct OpenAiEmbeddingsParse {
  OpenAiEmbeddingsRequest request;
  std::optional<ApiError> error;
  bool ok() const { return !error.has_value(); }
};
OpenAiEmbeddingsParse ParseOpenAiEmbeddingsRequest(absl::string_view body,
                                                   const PredictLimits& limits);

// The response body: `embeddings[i]` is input i's vector (already cut to `dimensions` and
// normalized), `model_name` the served model's name, `prompt_tokens` the tokens of every input
// together (usage.total_tokens repeats it, as TEI and OpenAI write it); base64 (encoding_format
// "base64") writes each vector as Float32Base64. Internal (424) for a NaN or infinite value.
absl::StatusOr<std::string> OpenAiEmbeddingsResponseJson(
    const std::vector<std::vector<float>>& embeddings, absl::string_view model_name,
    int64_t prompt_tokens, bool base64);

// Standard base64 (with padding) of the values as little-endian IEEE-754 float32 bytes, whatever
// the host's byte order: numpy.frombuffer(base64.b64decode(s), dtype="<f4") reads them back.
std::string Float32Base64(const float* values, size_t size);

// TEI's OpenAICompatErrorResponse: {"message": error.message, "code": error.status, "type":
// "<ErrorType name>"}, to answer with error.status on this route.
std::string OpenAiErrorJson(const ApiError& error);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_OPENAI_EMBEDDINGS_H_
