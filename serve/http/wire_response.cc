#include "wire_response.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace padless::serve::http {
namespace {

namespace beast_http = boost::beast::http;

// RFC 9110's token characters, the only ones a field name may hold.
bool IsToken(absl::string_view name) {
  if (name.empty()) return false;
  for (const char c : name) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && absl::string_view("!#$%&'*+-.^_`|~").find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool IsFieldValue(absl::string_view value) {
  return value.find_first_of(absl::string_view("\r\n\0", 3)) == absl::string_view::npos;
}

}  // namespace

HttpResponse ErrorResponse(const ApiError& error) {
  HttpResponse response;
  response.status = error.status;
  response.content_type = "application/json";
  response.body = error.ToJson();
  return response;
}

WireResponse ToWireResponse(HttpResponse response, unsigned version, bool keep_alive, bool head) {
  if (response.status < 200 || response.status > 599) {
    response =
        ErrorResponse(Internal(absl::StrCat("the handler answered status ", response.status)));
  }
  WireResponse wire;
  wire.version(version);
  wire.result(static_cast<unsigned>(response.status));
  if (IsFieldValue(response.content_type) && !response.content_type.empty()) {
    wire.set(beast_http::field::content_type, response.content_type);
  }
  for (const auto& [name, value] : response.headers) {
    if (IsToken(name) && IsFieldValue(value)) wire.set(name, value);
  }
  // 204 and 304 carry no body, and Beast refuses to frame one for them.
  if (response.status == 204 || response.status == 304) response.body.clear();
  wire.body() = std::move(response.body);
  wire.keep_alive(keep_alive);
  wire.prepare_payload();
  // HEAD: the Content-Length a GET would have, and no body.
  if (head) wire.body().clear();
  return wire;
}

}  // namespace padless::serve::http
