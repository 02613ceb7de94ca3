#include "padless/serve/http/api_error.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "padless/base/enum_names.h"

namespace padless::serve::http {
namespace {

// TEI's variant names (api_error.h).
constexpr base::EnumName<ErrorType> kErrorTypes[] = {
    {"Validation", ErrorType::kValidation}, {"Tokenizer", ErrorType::kTokenizer},
    {"Empty", ErrorType::kEmpty},           {"Overloaded", ErrorType::kOverloaded},
    {"Backend", ErrorType::kBackend},       {"Unhealthy", ErrorType::kUnhealthy}};

}  // namespace

absl::string_view ErrorTypeName(ErrorType type) { return base::EnumToName(type, kErrorTypes); }

std::string ApiError::ToJson() const {
  // error_handler_t::replace: a message that quotes bad input (invalid UTF-8) still serializes.
  nlohmann::json j = {{"error", message}, {"error_type", std::string(ErrorTypeName(type))}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError MalformedBody(absl::string_view why) {
  return {400, ErrorType::kValidation, std::string(why)};
}
ApiError WrongShape(absl::string_view why) {
  return {422, ErrorType::kValidation, std::string(why)};
}
ApiError EmptyText(absl::string_view why) { return {400, ErrorType::kEmpty, std::string(why)}; }
ApiError UnsupportedMediaType(absl::string_view why) {
  return {415, ErrorType::kValidation, std::string(why)};
}
ApiError TooLarge(absl::string_view why) { return {413, ErrorType::kValidation, std::string(why)}; }
ApiError TooManyInputs(size_t size, size_t max_client_batch_size) {
  return {
      422, ErrorType::kValidation,
      absl::StrCat("batch size ", size, " > maximum allowed batch size ", max_client_batch_size)};
}
ApiError InvalidInput(absl::string_view why) {
  return {422, ErrorType::kValidation, std::string(why)};
}
ApiError NotFound(absl::string_view method, absl::string_view path) {
  return {404, ErrorType::kValidation, absl::StrCat("no route ", method, " ", path)};
}
ApiError MethodNotAllowed(absl::string_view method, absl::string_view path) {
  return {405, ErrorType::kValidation, absl::StrCat("method ", method, " not allowed on ", path)};
}
ApiError Unavailable(absl::string_view why) {
  return {503, ErrorType::kUnhealthy, std::string(why)};
}
ApiError Internal(absl::string_view why) { return {500, ErrorType::kBackend, std::string(why)}; }

ApiError FromEngineStatus(const absl::Status& status) {
  const std::string message(status.message());
  switch (status.code()) {
    case absl::StatusCode::kResourceExhausted:
      return {429, ErrorType::kOverloaded, message};
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kCancelled:
      return {503, ErrorType::kUnhealthy, message};
    case absl::StatusCode::kInvalidArgument:
      return InvalidInput(message);
    default:
      return {424, ErrorType::kBackend, message};
  }
}

}  // namespace padless::serve::http
