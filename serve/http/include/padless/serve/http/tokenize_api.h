// POST /tokenize, as Hugging Face text-embeddings-inference (TEI) reads and answers it
// (router/src/http/types.rs: TokenizeRequest, TokenizeInput, SimpleToken, TokenizeResponse;
// server.rs: tokenize; core/src/tokenization.rs: into_tokens):
//   {"inputs": "text" | ["text", ...], "add_special_tokens": true, "prompt_name": null}
// answered with a list of tokens per input, for a single input too:
//   [[{"id": 101, "text": "[CLS]", "special": true, "start": null, "stop": null},
//     {"id": 7592, "text": "hello", "special": false, "start": 0, "stop": 5}, ...]]
// `start` and `stop` are byte offsets into the input (the prompt prepended, when there is one),
// null for special tokens, whose `text` is the token itself; a normal token's `text` is the
// input's bytes from start to stop. The tokenizer side is the server's: these functions only read
// the body and write the tokens given. Pure; never throws.
#ifndef PADLESS_SERVE_HTTP_TOKENIZE_API_H_
#define PADLESS_SERVE_HTTP_TOKENIZE_API_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/predict_request.h"

namespace padless::serve::http {

struct TokenizeRequest {
  std::vector<std::string> inputs;  // one element unless `batch`; no empty text
  bool batch = false;               // sent as a list; the answer is a list of lists either way
  bool add_special_tokens = true;
  std::optional<std::string> prompt_name;  // empty: the model's default prompt
};

// The request, or its error: 400 for a body that is not JSON (or not UTF-8, or too deep), 422 for
// JSON of the wrong shape (`inputs` not a string or a list of strings, `add_special_tokens` null),
// 400 Empty for an empty batch, 422 for a batch over max_client_batch_size, then 400 Empty for an
// empty text, as TEI answers them.
struct TokenizeParse {
  TokenizeRequest request;
  std::optional<ApiError> error;
  bool ok() const { return !error.has_value(); }
};
TokenizeParse ParseTokenizeRequest(absl::string_view body, const PredictLimits& limits);

// One token as TEI's SimpleToken reports it.
struct TokenPiece {
  uint32_t id = 0;
  std::string text;  // written with U+FFFD for bytes that are not UTF-8, as TEI's lossy decode
  bool special = false;
  std::optional<size_t> start;  // null when absent (TEI: special tokens)
  std::optional<size_t> stop;
};

// `tokens[i]` is input i's tokens; the body is a list of them (one list for a single input).
std::string TokenizeResponseJson(const std::vector<std::vector<TokenPiece>>& tokens);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_TOKENIZE_API_H_
