// POST /decode, as Hugging Face text-embeddings-inference (TEI) reads and answers it
// (router/src/http/types.rs: DecodeRequest, InputIds, DecodeResponse; server.rs: decode):
//   {"ids": [101, 7592, 102] | [[101, 7592, 102], [...]], "skip_special_tokens": true}
// answered with one text per list of ids, for a single list too:
//   ["hello", ...]
// The tokenizer side is the server's. Pure; never throws.
#ifndef PADLESS_SERVE_HTTP_DECODE_API_H_
#define PADLESS_SERVE_HTTP_DECODE_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/predict_request.h"

namespace padless::serve::http {

struct DecodeRequest {
  std::vector<std::vector<uint32_t>> ids;  // one list unless `batch`; none is empty
  bool batch = false;  // sent as a list of lists; the answer is a list of texts either way
  bool skip_special_tokens = true;
};

// The request, or its error: 400 for a body that is not JSON (or not UTF-8, or too deep), 422 for
// JSON of the wrong shape (a missing `ids`, an id that is not an integer from 0 to 2^32 - 1, a
// list mixing ids and lists, `skip_special_tokens` null), 422 for more lists than
// max_client_batch_size, then 400 Empty for an empty list of ids ("`input_ids` cannot be empty",
// TEI's message and status). As in TEI, `[]` is one empty list,
// not an empty batch.
struct DecodeParse {
  DecodeRequest request;
  std::optional<ApiError> error;
  bool ok() const { return !error.has_value(); }
};
DecodeParse ParseDecodeRequest(absl::string_view body, const PredictLimits& limits);

// `texts[i]` is the decoding of ids list i. Bytes that are not UTF-8 (a token cut in the middle
// of a character) are written as U+FFFD.
std::string DecodeResponseJson(const std::vector<std::string>& texts);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_DECODE_API_H_
