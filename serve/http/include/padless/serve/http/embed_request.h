// The bodies of POST /embed and POST /embed_all, as Hugging Face text-embeddings-inference (TEI)
// reads them (router/src/http/types.rs: EmbedRequest, EmbedAllRequest, Input, InputType):
//   {"inputs": "text"}                                  one text
//   {"inputs": [101, 2023, 102]}                        one input given as token ids (u32)
//   {"inputs": ["a", "b"]}                              a batch (unlike /predict: not a pair)
//   {"inputs": ["a", [101, 102]]}                       a batch may mix texts and token ids
//   "truncate": true | false | null                     null or absent: the server's default
//   "truncation_direction": "Right" | "Left"            TEI's serde names; lowercase accepted
//   "prompt_name": "query" | null                       a key of the model's prompts
//   "normalize": true | false                           /embed only; default true
//   "dimensions": n | null                              /embed only; n >= 1 (Matryoshka)
// /embed_all has no `normalize` nor `dimensions`: there, as any unknown key, they are ignored.
// Pure (no HTTP, no model): the server, the tests and the fuzzer call it on raw bytes; it never
// throws.
#ifndef PADLESS_SERVE_HTTP_EMBED_REQUEST_H_
#define PADLESS_SERVE_HTTP_EMBED_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/predict_request.h"
#include "padless/serve/http/truncation_direction.h"

namespace padless::serve::http {

// One input: a text, or (TEI's InputType::Ids) token ids that TEI decodes to a text and encodes
// again without special tokens (with them when a prompt is prepended): what the server must do.
struct EmbedInput {
  std::string text;                          // empty when `ids` is set
  std::optional<std::vector<uint32_t>> ids;  // never empty in a parsed request
};

struct EmbedRequest {
  std::vector<EmbedInput> inputs;  // one element unless `batch`
  bool batch = false;              // sent as a list; the answer is a list of vectors either way
  std::optional<bool> truncate;    // empty: the server's default (auto_truncate)
  std::optional<TruncationDirection> truncation_direction;  // empty: TEI's default, Right
  std::optional<std::string> prompt_name;                   // empty: the model's default prompt
  bool normalize = true;              // /embed: scale to unit L2 norm, after `dimensions`
  std::optional<int64_t> dimensions;  // /embed: keep the first n values (n >= 1)
};

// The request, or its error: 400 for a body that is not JSON (or not UTF-8, or nested deeper
// than kMaxJsonDepth), 422 for JSON of the wrong shape (a missing `inputs`, a number, an id that
// is not a u32, `normalize` null, `dimensions` 0 or negative, an unknown truncation_direction),
// 422 for a batch over max_client_batch_size (request_json.h, CheckBatchSize), then 400 Empty for
// an empty input ("" or [], alone or in a batch, and an empty batch), as TEI answers them. The Content-Type is the server's to check before.
struct EmbedParse {
  EmbedRequest request;
  std::optional<ApiError> error;
  bool ok() const { return !error.has_value(); }
};
EmbedParse ParseEmbedRequest(absl::string_view body, const PredictLimits& limits);
// /embed_all: the same fields but `normalize` and `dimensions`, which stay at their defaults
// (true and none) and mean nothing there: the answer is every token's vector, as the model gives
// it.
EmbedParse ParseEmbedAllRequest(absl::string_view body, const PredictLimits& limits);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_EMBED_REQUEST_H_
