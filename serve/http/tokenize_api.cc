#include "padless/serve/http/tokenize_api.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "request_json.h"

namespace padless::serve::http {
namespace {

// inputs: a string or a list of strings (TEI's untagged TokenizeInput).
std::optional<ApiError> ReadTokenizeInputs(const nlohmann::json& doc, TokenizeRequest* request) {
  const nlohmann::json* inputs = nullptr;
  std::optional<ApiError> error = RequiredField(doc, "inputs", &inputs);
  if (error) return error;
  if (inputs->is_string()) {
    request->inputs.push_back(inputs->get<std::string>());
    return std::nullopt;
  }
  if (!ReadStrings(*inputs, &request->inputs)) {
    return WrongShape("`inputs` must be a string or a list of strings");
  }
  request->batch = true;
  return std::nullopt;
}

std::optional<ApiError> FindEmptyTokenizeText(const TokenizeRequest& request) {
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    if (!request.inputs[i].empty()) continue;
    if (!request.batch) return EmptyText("`inputs` cannot be empty");
    return EmptyText(
        absl::StrCat("`inputs` cannot contain an empty text: batch element ", i, " is empty"));
  }
  return std::nullopt;
}

void AppendOffset(const std::optional<size_t>& offset, std::string* out) {
  if (offset) {
    absl::StrAppend(out, *offset);
  } else {
    out->append("null");
  }
}

}  // namespace

TokenizeParse ParseTokenizeRequest(absl::string_view body, const PredictLimits& limits) {
  TokenizeParse result;
  nlohmann::json doc;
  std::optional<ApiError>& error = result.error;
  error = ParseJsonObject(body, "inputs", &doc);
  if (!error) error = ReadTokenizeInputs(doc, &result.request);
  if (!error) error = ReadBool(doc, "add_special_tokens", &result.request.add_special_tokens);
  if (!error) error = ReadOptionalString(doc, "prompt_name", &result.request.prompt_name);
  if (!error && result.request.inputs.empty()) error = EmptyText("`inputs` cannot be empty");
  if (!error && result.request.batch) {
    error = CheckBatchSize(result.request.inputs.size(), limits);
  }
  if (!error) error = FindEmptyTokenizeText(result.request);
  return result;
}

std::string TokenizeResponseJson(const std::vector<std::vector<TokenPiece>>& tokens) {
  std::string body = "[";
  for (size_t i = 0; i < tokens.size(); ++i) {
    body.append(i > 0 ? ",[" : "[");
    for (size_t k = 0; k < tokens[i].size(); ++k) {
      const TokenPiece& t = tokens[i][k];
      absl::StrAppend(
          &body, k > 0 ? ",{\"id\":" : "{\"id\":", t.id, ",\"text\":",
          nlohmann::json(t.text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          ",\"special\":", t.special ? "true" : "false", ",\"start\":");
      AppendOffset(t.start, &body);
      body.append(",\"stop\":");
      AppendOffset(t.stop, &body);
      body.push_back('}');
    }
    body.push_back(']');
  }
  body.push_back(']');
  return body;
}

}  // namespace padless::serve::http
