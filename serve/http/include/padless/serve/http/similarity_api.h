// POST /similarity, as Hugging Face text-embeddings-inference (TEI) reads and answers it
// (router/src/http/types.rs: SimilarityRequest, SimilarityInput, SimilarityParameters,
// SimilarityResponse; server.rs: similarity), Hugging Face's sentence-similarity task:
//   {"inputs": {"source_sentence": "What is Deep Learning?",
//               "sentences": ["What is Machine Learning?", "..."]},
//    "parameters": {"truncate": null, "truncation_direction": "Right", "prompt_name": null}}
// ("parameters" optional, null allowed; its options are nested there, not at the top level)
// answered with the cosine similarity of each sentence's embedding to the source sentence's:
//   [0.87, 0.12]
// TEI embeds the source sentence and the sentences in one batch, without normalization or
// `dimensions`. Pure; never throws.
#ifndef PADLESS_SERVE_HTTP_SIMILARITY_API_H_
#define PADLESS_SERVE_HTTP_SIMILARITY_API_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/predict_request.h"
#include "padless/serve/http/truncation_direction.h"

namespace padless::serve::http {

struct SimilarityRequest {
  std::string source_sentence;
  std::vector<std::string> sentences;  // never empty in a parsed request
  // "parameters":
  std::optional<bool> truncate;  // empty: the server's default (auto_truncate)
  std::optional<TruncationDirection> truncation_direction;  // empty: TEI's default, Right
  std::optional<std::string> prompt_name;                   // empty: the model's default prompt
};

// The request, or its error: 400 for a body that is not JSON (or not UTF-8, or too deep), 422 for
// JSON of the wrong shape (`inputs` not an object with a string `source_sentence` and a list of
// strings `sentences`, `parameters` not an object or null, a bad option in it), 400 Empty for
// an empty `sentences` ("`inputs.sentences` cannot be empty", as TEI), 422 when the sentences and
// the source sentence are more than max_client_batch_size (TEI counts the source sentence), then
// 400 Empty for an empty text.
struct SimilarityParse {
  SimilarityRequest request;
  std::optional<ApiError> error;
  bool ok() const { return !error.has_value(); }
};
SimilarityParse ParseSimilarityRequest(absl::string_view body, const PredictLimits& limits);

// The cosine similarity of each of `sentences` to `source`, computed in double as TEI's simsimd
// does: 1 for two zero vectors, 0 when only one is zero. Internal (424) for vectors of different
// widths or a NaN or infinite value.
absl::StatusOr<std::vector<float>> CosineSimilarities(
    const std::vector<float>& source, const std::vector<std::vector<float>>& sentences);

// "[s0,s1,...]"; Internal for a NaN or infinite value.
absl::StatusOr<std::string> SimilarityResponseJson(const std::vector<float>& similarities);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_SIMILARITY_API_H_
