// The errors of `padless serve`, in the shape and with the statuses of Hugging Face
// text-embeddings-inference (TEI), so that TEI clients read them unchanged:
//   {"error": "<message>", "error_type": "<ErrorType>"}
// TEI serializes its ErrorType enum by variant name ("Validation", "Overloaded", ...), and maps
// (router/src/http/server.rs, `impl From<&ErrorType> for StatusCode`) Validation to 422 (too many
// inputs, a text over max_input_length with truncate false; 413 before v1.9.0, PR #818), Tokenizer
// to 422, Empty to 400, Overloaded to 429, Backend to 424 and Unhealthy to 503. Bodies that are not
// JSON get 400 and JSON of the wrong shape 422, as TEI's JSON extractor (axum's Json) answers them;
// a body whose Content-Type is not JSON gets 415 before it is parsed, and a body over the limit
// 413, as axum refuses them (json_content_type.h). axum writes those four as plain text; padless
// keeps its JSON shape for them too, with axum's messages, so that a client reads every error one
// way.
#ifndef PADLESS_SERVE_HTTP_API_ERROR_H_
#define PADLESS_SERVE_HTTP_API_ERROR_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace padless::serve::http {

enum class ErrorType { kValidation, kTokenizer, kEmpty, kOverloaded, kBackend, kUnhealthy };

// TEI's spelling: "Validation", "Tokenizer", "Empty", "Overloaded", "Backend", "Unhealthy".
absl::string_view ErrorTypeName(ErrorType type);

struct ApiError {
  int status = 500;
  ErrorType type = ErrorType::kBackend;
  std::string message;

  std::string ToJson() const;  // the response body
};

// The body is not JSON (syntax, bad UTF-8, nesting too deep): 400.
ApiError MalformedBody(absl::string_view why);
// JSON, but not a predict request (wrong type, missing field, bad pair): 422.
ApiError WrongShape(absl::string_view why);
// An empty input (a text, a list of ids, a batch): 400 Empty, as TEI answers "`inputs` cannot be
// empty" (since v1.8.3, PR #413). TEI refuses a pair only when both texts are empty; padless
// refuses either side empty (predict_request.h).
ApiError EmptyText(absl::string_view why);
// The body's Content-Type is absent or not JSON: 415 (json_content_type.h).
ApiError UnsupportedMediaType(absl::string_view why);
// The body is over --body-limit: 413, as axum's DefaultBodyLimit answers it.
ApiError TooLarge(absl::string_view why);
// More inputs than max_client_batch_size: 422 Validation with TEI's message
// ("batch size N > maximum allowed batch size M").
ApiError TooManyInputs(size_t size, size_t max_client_batch_size);
// An input TEI's validation refuses (an input over max_input_length with truncate false, a token
// id outside the vocabulary, an unknown prompt): 422 Validation.
ApiError InvalidInput(absl::string_view why);
ApiError NotFound(absl::string_view method, absl::string_view path);          // 404
ApiError MethodNotAllowed(absl::string_view method, absl::string_view path);  // 405
ApiError Unavailable(absl::string_view why);                                  // 503
ApiError Internal(absl::string_view why);                                     // 500

// An InferenceEngine status as TEI would answer it: ResourceExhausted 429 (queue full),
// Unavailable 503 (shut down or draining), InvalidArgument 422 (a text longer than max_len with
// truncate false, an id outside the vocabulary: TEI's Validation), Cancelled 503, anything else 424
// (the backend failed).
ApiError FromEngineStatus(const absl::Status& status);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_API_ERROR_H_
