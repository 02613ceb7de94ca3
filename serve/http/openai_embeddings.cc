#include "padless/serve/http/openai_embeddings.h"

#include <cmath>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "padless/serve/http/float_json.h"
#include "request_json.h"

namespace padless::serve::http {
namespace {

std::optional<ApiError> ReadEncodingFormat(const nlohmann::json& doc, EmbeddingEncoding* value) {
  const auto it = doc.find("encoding_format");
  if (it == doc.end()) return std::nullopt;
  const std::string name = it->is_string() ? it->get<std::string>() : "";
  if (name == "float") {
    *value = EmbeddingEncoding::kFloat;
  } else if (name == "base64") {
    *value = EmbeddingEncoding::kBase64;
  } else {
    return WrongShape("`encoding_format` must be \"float\" or \"base64\"");
  }
  return std::nullopt;
}

// A JSON string, bytes that are not UTF-8 replaced (the model name comes from the command line).
std::string JsonString(absl::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

OpenAiEmbeddingsParse ParseOpenAiEmbeddingsRequest(absl::string_view body,
                                                   const PredictLimits& limits) {
  OpenAiEmbeddingsParse result;
  OpenAiEmbeddingsRequest& request = result.request;
  nlohmann::json doc;
  std::optional<ApiError>& error = result.error;
  error = ParseJsonObject(body, "input", &doc);
  const nlohmann::json* input = nullptr;
  if (!error) error = RequiredField(doc, "input", &input);
  if (!error) error = ReadEmbedInputs(*input, "input", &request.inputs, &request.batch);
  if (!error) error = ReadOptionalString(doc, "model", &request.model);
  if (!error) error = ReadOptionalString(doc, "user", &request.user);
  if (!error) error = ReadEncodingFormat(doc, &request.encoding_format);
  if (!error) error = ReadDimensions(doc, &request.dimensions);
  if (!error && request.batch) error = CheckBatchSize(request.inputs.size(), limits);
  if (!error) error = FindEmptyEmbedInput(request.inputs, request.batch, "input");
  return result;
}

std::string Float32Base64(const float* values, size_t size) {
  std::string bytes(size * 4, '\0');
  for (size_t i = 0; i < size; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof(bits));
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  return absl::Base64Escape(bytes);
}

absl::StatusOr<std::string> OpenAiEmbeddingsResponseJson(
    const std::vector<std::vector<float>>& embeddings, absl::string_view model_name,
    int64_t prompt_tokens, bool base64) {
  size_t values = 0;
  for (const std::vector<float>& e : embeddings) values += e.size();
  std::string body;
  body.reserve(128 + model_name.size() + embeddings.size() * 48 + values * 16);
  body.append("{\"object\":\"list\",\"data\":[");
  for (size_t i = 0; i < embeddings.size(); ++i) {
    const std::vector<float>& e = embeddings[i];
    body.append(i > 0 ? ",{\"object\":\"embedding\",\"embedding\":"
                      : "{\"object\":\"embedding\",\"embedding\":");
    bool finite = true;
    if (base64) {
      for (float x : e) finite = finite && std::isfinite(x);
      if (finite) absl::StrAppend(&body, "\"", Float32Base64(e.data(), e.size()), "\"");
    } else {
      finite = AppendJsonFloatArray(e.data(), e.size(), &body);
    }
    if (!finite) {
      return absl::InternalError(
          absl::StrCat("the embedding of input ", i, " has a NaN or infinite value"));
    }
    absl::StrAppend(&body, ",\"index\":", i, "}");
  }
  absl::StrAppend(&body, "],\"model\":", JsonString(model_name),
                  ",\"usage\":{\"prompt_tokens\":", prompt_tokens,
                  ",\"total_tokens\":", prompt_tokens, "}}");
  return body;
}

std::string OpenAiErrorJson(const ApiError& error) {
  return absl::StrCat("{\"message\":", JsonString(error.message), ",\"code\":", error.status,
                      ",\"type\":\"", ErrorTypeName(error.type), "\"}");
}

}  // namespace padless::serve::http
