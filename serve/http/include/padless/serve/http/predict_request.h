// The body of POST /predict (and POST /), as Hugging Face text-embeddings-inference (TEI) reads it
// (router/src/http/types.rs, PredictRequest), so that TEI clients work unchanged:
//   {"inputs": "text"}                                a single text
//   {"inputs": ["text", "second"]}                    a pair ("text" alone in a list: a single)
//   {"inputs": [["a"], ["b", "b2"], ...]}             a batch of singles and pairs
//   "truncate": true | false | null                   null or absent: the server's default
//   "truncation_direction": "Right" | "Left"          TEI's serde names; lowercase accepted
//   "raw_scores": true | false                        logits instead of probabilities
// Other keys are ignored, as serde does. Pure (no HTTP, no model): the server, the tests and the
// fuzzer call it on raw bytes; it never throws.
#ifndef PADLESS_SERVE_HTTP_PREDICT_REQUEST_H_
#define PADLESS_SERVE_HTTP_PREDICT_REQUEST_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "padless/serve/http/api_error.h"

namespace padless::serve::http {

// One text, or a pair.
struct Sequence {
  std::string text;
  std::optional<std::string> pair;
};

struct PredictRequest {
  std::vector<Sequence> inputs;  // one element unless `batch`
  bool batch = false;            // answer with a list of lists
  std::optional<bool> truncate;  // empty: the server's default
  bool raw_scores = false;
};

struct PredictLimits {
  size_t max_client_batch_size = 32;  // TEI's default
};

// Nesting deeper than this is rejected before the JSON is parsed (a valid request nests 3 deep),
// so that no input can make the parser or the document's destructor recurse without bound.
inline constexpr int kMaxJsonDepth = 16;

// The request, or its error: 400 for a body that is not JSON (or not UTF-8, or nested deeper than
// kMaxJsonDepth), 422 for JSON of the wrong shape (including an empty batch and
// truncation_direction Left, which padless does not do: it keeps a long text's head and tail),
// 422 for a batch over max_client_batch_size (TEI's Validation error), then 400 Empty for an
// empty text: "" alone, either text of a pair, or any of a batch (api_error.h, EmptyText). The
// Content-Type is the server's to check before (json_content_type.h).
struct PredictParse {
  PredictRequest request;
  std::optional<ApiError> error;
  bool ok() const { return !error.has_value(); }
};
PredictParse ParsePredictRequest(absl::string_view body, const PredictLimits& limits);

// The deepest nesting of arrays and objects in `body`, strings skipped; stops counting past
// `limit` + 1. Used before parsing; exposed for the tests.
int JsonNestingDepth(absl::string_view body, int limit);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_PREDICT_REQUEST_H_
