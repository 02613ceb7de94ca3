#include "padless/serve/http/similarity_api.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "padless/serve/http/float_json.h"
#include "request_json.h"

namespace padless::serve::http {
namespace {

// inputs: {"source_sentence": string, "sentences": [string, ...]} (both required).
std::optional<ApiError> ReadSimilarityInputs(const nlohmann::json& doc,
                                             SimilarityRequest* request) {
  const nlohmann::json* inputs = nullptr;
  std::optional<ApiError> error = RequiredField(doc, "inputs", &inputs);
  if (error) return error;
  if (!inputs->is_object()) {
    return WrongShape(
        "`inputs` must be an object {\"source_sentence\": string, \"sentences\": [string, ...]}");
  }
  const nlohmann::json* source = nullptr;
  const nlohmann::json* sentences = nullptr;
  error = RequiredField(*inputs, "source_sentence", &source);
  if (!error && !source->is_string()) {
    error = WrongShape("`inputs.source_sentence` must be a string");
  }
  if (!error) request->source_sentence = source->get<std::string>();
  if (!error) error = RequiredField(*inputs, "sentences", &sentences);
  if (!error && !ReadStrings(*sentences, &request->sentences)) {
    error = WrongShape("`inputs.sentences` must be a list of strings");
  }
  return error;
}

// parameters: absent, null, or {"truncate", "truncation_direction", "prompt_name"}.
std::optional<ApiError> ReadSimilarityParameters(const nlohmann::json& doc,
                                                 SimilarityRequest* request) {
  const auto parameters = doc.find("parameters");
  if (parameters == doc.end() || parameters->is_null()) return std::nullopt;
  if (!parameters->is_object()) return WrongShape("`parameters` must be an object or null");
  std::optional<ApiError> error = ReadOptionalBool(*parameters, "truncate", &request->truncate);
  if (!error) error = ReadTruncationDirection(*parameters, &request->truncation_direction);
  if (!error) error = ReadOptionalString(*parameters, "prompt_name", &request->prompt_name);
  return error;
}

std::optional<ApiError> FindEmptySentence(const SimilarityRequest& request) {
  if (request.source_sentence.empty()) {
    return EmptyText("`inputs.source_sentence` cannot be empty");
  }
  for (size_t i = 0; i < request.sentences.size(); ++i) {
    if (request.sentences[i].empty()) {
      return EmptyText(absl::StrCat("`inputs.sentences` cannot contain an empty text: element ", i,
                                    " is empty"));
    }
  }
  return std::nullopt;
}

bool AllFinite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

}  // namespace

SimilarityParse ParseSimilarityRequest(absl::string_view body, const PredictLimits& limits) {
  SimilarityParse result;
  nlohmann::json doc;
  std::optional<ApiError>& error = result.error;
  error = ParseJsonObject(body, "inputs", &doc);
  if (!error) error = ReadSimilarityInputs(doc, &result.request);
  if (!error) error = ReadSimilarityParameters(doc, &result.request);
  // TEI's order: no sentences, then the batch size (the source sentence included), then the
  // tokenizer's empty inputs.
  if (!error && result.request.sentences.empty()) {
    error = EmptyText("`inputs.sentences` cannot be empty");
  }
  if (!error) error = CheckBatchSize(result.request.sentences.size() + 1, limits);
  if (!error) error = FindEmptySentence(result.request);
  return result;
}

absl::StatusOr<std::vector<float>> CosineSimilarities(
    const std::vector<float>& source, const std::vector<std::vector<float>>& sentences) {
  if (!AllFinite(source)) return absl::InternalError("the source embedding is not finite");
  double source_norm2 = 0;
  for (float x : source) source_norm2 += static_cast<double>(x) * x;
  std::vector<float> similarities;
  similarities.reserve(sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    const std::vector<float>& v = sentences[i];
    if (v.size() != source.size() || !AllFinite(v)) {
      return absl::InternalError(absl::StrCat("the embedding of sentence ", i, " has ", v.size(),
                                              " values (the source's ", source.size(),
                                              ") or is not finite"));
    }
    double dot = 0, norm2 = 0;
    for (size_t k = 0; k < v.size(); ++k) {
      dot += static_cast<double>(source[k]) * v[k];
      norm2 += static_cast<double>(v[k]) * v[k];
    }
    double similarity = 0;  // simsimd: distance 1 when the dot product is 0 (a zero vector)
    if (source_norm2 == 0 && norm2 == 0) {
      similarity = 1;  // simsimd: distance 0
    } else if (dot != 0) {
      similarity = std::clamp(dot / (std::sqrt(source_norm2) * std::sqrt(norm2)), -1.0, 1.0);
    }
    similarities.push_back(static_cast<float>(similarity));
  }
  return similarities;
}

absl::StatusOr<std::string> SimilarityResponseJson(const std::vector<float>& similarities) {
  std::string body;
  if (!AppendJsonFloatArray(similarities.data(), similarities.size(), &body)) {
    return absl::InternalError("a similarity is NaN or infinite");
  }
  return body;
}

}  // namespace padless::serve::http
