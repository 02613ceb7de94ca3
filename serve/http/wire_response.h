// From the transport/route interface's HttpResponse (http_message.h) to the message Beast writes,
// and the transport's own error answers in TEI's JSON shape (api_error.h). Private to serve/http.
#ifndef PADLESS_SERVE_HTTP_WIRE_RESPONSE_H_
#define PADLESS_SERVE_HTTP_WIRE_RESPONSE_H_

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "padless/serve/http/api_error.h"
#include "padless/serve/http/http_message.h"

namespace padless::serve::http {

using WireResponse = boost::beast::http::response<boost::beast::http::string_body>;

// `response` for a request of HTTP/1.`version % 10`: Content-Type, the extra headers, and
// Content-Length; `Connection` as `keep_alive` says. A HEAD request gets the headers only. A
// status outside 200-599 (a handler's bug) becomes a 500, and an extra header whose name or value
// could split the header block (CR, LF, an empty or non-token name) is dropped.
WireResponse ToWireResponse(HttpResponse response, unsigned version, bool keep_alive, bool head);

// `error` as TEI answers it: its status and {"error": ..., "error_type": ...}.
HttpResponse ErrorResponse(const ApiError& error);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_WIRE_RESPONSE_H_
