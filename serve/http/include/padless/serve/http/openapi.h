// GET /openapi.json: an OpenAPI 3 description of `padless serve`'s routes, in the shapes of Hugging
// Face text-embeddings-inference's predict API (predict_request.h, predict_response.h,
// api_error.h). Written by hand in serve/http/openapi.json beside the code it describes, and
// compiled in (CMakeLists.txt generates the definition); the server test checks that it parses
// and names every route the server answers.
#ifndef PADLESS_SERVE_HTTP_OPENAPI_H_
#define PADLESS_SERVE_HTTP_OPENAPI_H_

#include "absl/strings/string_view.h"

namespace padless::serve::http {

absl::string_view OpenApiJson();

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_OPENAPI_H_
