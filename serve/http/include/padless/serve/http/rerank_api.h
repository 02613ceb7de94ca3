// POST /rerank, as Hugging Face text-embeddings-inference (TEI) reads and answers it
// (router/src/http/types.rs: RerankRequest, Rank, RerankResponse; server.rs: rerank):
//   {"query": "What is Deep Learning?", "texts": ["Deep Learning is ...", "..."],
//    "truncate": null, "truncation_direction": "Right", "raw_scores": false, "return_text": false}
// answered with every text's score for the pair (query, text), highest first:
//   [{"index": 1, "score": 0.98}, {"index": 0, "text": "...", "score": 0.02}]
// ("text" only with return_text). Pure: the server, the tests and the fuzzer call it; it never
// throws.
#ifndef PADLESS_SERVE_HTTP_RERANK_API_H_
#define PADLESS_SERVE_HTTP_RERANK_API_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/predict_request.h"
#include "padless/serve/http/truncation_direction.h"

namespace padless::serve::http {

struct RerankRequest {
  std::string query;
  std::vector<std::string> texts;  // never empty in a parsed request
  std::optional<bool> truncate;    // empty: the server's default (auto_truncate)
  std::optional<TruncationDirection> truncation_direction;  // empty: TEI's default, Right
  bool raw_scores = false;                                  // the logit instead of its sigmoid
  bool return_text = false;                                 // echo each text in its result
};

// The request, or its error: 400 for a body that is not JSON (or not UTF-8, or too deep), 422 for
// JSON of the wrong shape (a missing or non-string `query`, `texts` not a list of strings,
// `raw_scores` null), 400 Empty for an empty `texts` ("`texts` cannot be empty", as TEI),
// 422 for more texts than max_client_batch_size (each text is one pair),
// then 400 Empty for an empty query or text: padless refuses a pair with an empty side, as /predict
// does (TEI only refuses a pair whose two sides are empty).
struct RerankParse {
  RerankRequest request;
  std::optional<ApiError> error;
  bool ok() const { return !error.has_value(); }
};
RerankParse ParseRerankRequest(absl::string_view body, const PredictLimits& limits);

// `scores[i]` is the score of (query, texts[i]). Sorted by score, highest first; equal scores
// keep index order (TEI sorts ascending, stably, then reverses the list, which puts equal scores
// in descending index order: padless keeps the order /predict uses for equal scores). Internal
// (TEI's Backend error "score is NaN", 424) for a NaN or infinite score, or a count that is not
// the texts'.
absl::StatusOr<std::string> RerankResponseJson(const std::vector<float>& scores,
                                               const RerankRequest& request);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_RERANK_API_H_
