// Which POST bodies `padless serve` reads as JSON, by their Content-Type header, decided as
// Hugging Face text-embeddings-inference (TEI) decides it: its handlers take axum's `Json`
// extractor, which refuses a body with 415 Unsupported Media Type, before reading it, unless the
// header is present and names application/json or an application/<name>+json type. So a
// `text/plain` body, or curl's `-d` without a JSON header (application/x-www-form-urlencoded), is
// refused instead of being parsed as JSON; a request without a Content-Type is refused too, as TEI
// refuses it (JSON clients send the header: requests' `json=`, curl with `-H`).
// Pure: the server checks every POST route with it before the body is parsed.
#ifndef PADLESS_SERVE_HTTP_JSON_CONTENT_TYPE_H_
#define PADLESS_SERVE_HTTP_JSON_CONTENT_TYPE_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "padless/serve/http/api_error.h"

namespace padless::serve::http {

// True when `content_type`, a Content-Type header's value, names application/json or
// application/<name>+json (RFC 6838's structured syntax suffix, e.g. application/vnd.api+json).
// Type and subtype compare case-insensitively and must be RFC 9110 tokens; the parameters after
// the first ';' (`charset=utf-8`) are not looked at, and surrounding whitespace is ignored.
bool IsJsonContentType(absl::string_view content_type);

// The 415 to answer for a POST body whose Content-Type is `content_type` (nullopt: the request
// has no such header); none when the body is to be parsed as JSON.
std::optional<ApiError> CheckJsonContentType(std::optional<absl::string_view> content_type);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_JSON_CONTENT_TYPE_H_
