// The engine requests of the embedding routes (/embed, /embed_all, /similarity, /v1/embeddings):
// each input a text with the prompt put before it, as sentence-transformers does, or token ids
// used as given; cut per truncate and truncation_direction. Private to serve/http.
#ifndef PADLESS_SERVE_HTTP_EMBED_INPUTS_H_
#define PADLESS_SERVE_HTTP_EMBED_INPUTS_H_

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "padless/serve/http/api_error.h"
#include "padless/serve/http/embed_request.h"
#include "padless/serve/http/truncation_direction.h"
#include "padless/serve/inference_engine.h"

namespace padless::serve::http {

struct EmbedInputOptions {
  bool truncate = true;
  std::optional<TruncationDirection> direction;  // empty: Right (keep the first tokens)
  std::optional<std::string> prompt_name;        // empty: the model's default prompt, if any
  bool token_embeddings = false;
  bool prompts = true;  // false: no prompt at all, not even the model's default (OpenAI's route)
};

// 422 for a prompt_name the model does not have; 422 for an id that does not fit an int32.
std::variant<std::vector<EngineRequest>, ApiError> EmbedEngineRequests(
    const std::vector<EmbedInput>& inputs, const EmbedInputOptions& options,
    const EmbeddingInfo& model);

// 422 unless 1 <= dimensions <= the model's width (none given: fine).
std::optional<ApiError> CheckDimensions(const std::optional<int64_t>& dimensions,
                                        const EmbeddingInfo& model);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_EMBED_INPUTS_H_
