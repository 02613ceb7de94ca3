// The errors of `padless serve`, in the shape and with the statuses of Hugging Face
// text-embeddings-inference (TEI), so that TEI clients read them unchanged:
//   {"error": "<message>", "error_type": "<ErrorType>"}
// TEI serializes its ErrorType enum by variant name ("Validation", "Overloaded", ...), and maps
// Validation to 413 (a batch or a text over a limit), Tokenizer to 422, Empty to 400, Overloaded to
// 429, Backend to 424 and Unhealthy to 503. Bodies that are not JSON get 400 and JSON of the wrong
// shape 422, as TEI's JSON extractor answers them; a body whose Content-Type is not JSON gets 415
// before it is parsed, as that extractor refuses it (json_content_type.h).
#ifndef PADLESS_SERVE_HTTP_API_ERROR_H_
#define PADLESS_SERVE_HTTP_API_ERROR_H_

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
// A text (or either text of a pair) is empty: 422 Validation, as issue 44 asks. TEI itself answers
// an empty text ("`inputs` cannot be empty") with 400 and error_type Empty since v1.8.3 (413
// Validation before), and a pair only when both texts are empty; this function decides ours.
ApiError EmptyText(absl::string_view why);
// The body's Content-Type is absent or not JSON: 415 (json_content_type.h).
ApiError UnsupportedMediaType(absl::string_view why);
// Over a size limit (the body, the client batch, a text with truncate false): 413.
ApiError TooLarge(absl::string_view why);
ApiError NotFound(absl::string_view method, absl::string_view path);          // 404
ApiError MethodNotAllowed(absl::string_view method, absl::string_view path);  // 405
ApiError Unavailable(absl::string_view why);                                  // 503
ApiError Internal(absl::string_view why);                                     // 500

// An InferenceEngine status as TEI would answer it: ResourceExhausted 429 (queue full),
// Unavailable 503 (shut down or draining), InvalidArgument 413 (a text longer than max_len with
// truncate false: TEI's Validation), Cancelled 503, anything else 424 (the backend failed).
ApiError FromEngineStatus(const absl::Status& status);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_API_ERROR_H_
