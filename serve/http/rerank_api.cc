#include "padless/serve/http/rerank_api.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "padless/serve/http/float_json.h"
#include "request_json.h"

namespace padless::serve::http {
namespace {

std::optional<ApiError> ReadRerankFields(const nlohmann::json& doc, RerankRequest* request) {
  const nlohmann::json* query = nullptr;
  const nlohmann::json* texts = nullptr;
  std::optional<ApiError> error = RequiredField(doc, "query", &query);
  if (!error && !query->is_string()) error = WrongShape("`query` must be a string");
  if (!error) request->query = query->get<std::string>();
  if (!error) error = RequiredField(doc, "texts", &texts);
  if (!error && !ReadStrings(*texts, &request->texts)) {
    error = WrongShape("`texts` must be a list of strings");
  }
  if (!error) error = ReadOptionalBool(doc, "truncate", &request->truncate);
  if (!error) error = ReadTruncationDirection(doc, &request->truncation_direction);
  if (!error) error = ReadBool(doc, "raw_scores", &request->raw_scores);
  if (!error) error = ReadBool(doc, "return_text", &request->return_text);
  return error;
}

// An empty query or text (EmptyText, 422), naming which.
std::optional<ApiError> FindEmptyRerankText(const RerankRequest& request) {
  if (request.query.empty()) return EmptyText("`query` cannot be empty");
  for (size_t i = 0; i < request.texts.size(); ++i) {
    if (request.texts[i].empty()) {
      return EmptyText(
          absl::StrCat("`texts` cannot contain an empty text: element ", i, " is empty"));
    }
  }
  return std::nullopt;
}

}  // namespace

RerankParse ParseRerankRequest(absl::string_view body, const PredictLimits& limits) {
  RerankParse result;
  nlohmann::json doc;
  std::optional<ApiError>& error = result.error;
  error = ParseJsonObject(body, "query", &doc);
  if (!error) error = ReadRerankFields(doc, &result.request);
  // TEI's order: no texts, then the batch size, then the tokenizer's empty inputs.
  if (!error && result.request.texts.empty()) error = EmptyText("`texts` cannot be empty");
  if (!error) error = CheckBatchSize(result.request.texts.size(), limits);
  if (!error) error = FindEmptyRerankText(result.request);
  return result;
}

absl::StatusOr<std::string> RerankResponseJson(const std::vector<float>& scores,
                                               const RerankRequest& request) {
  if (scores.size() != request.texts.size()) {
    return absl::InternalError(absl::StrCat("the model gave ", scores.size(), " scores for ",
                                            request.texts.size(), " texts"));
  }
  for (float s : scores) {
    if (std::isnan(s)) return absl::InternalError("score is NaN");  // TEI's message
    if (std::isinf(s)) return absl::InternalError("score is infinite");
  }
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::string body = "[";
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    absl::StrAppend(&body, k > 0 ? ",{\"index\":" : "{\"index\":", i);
    if (request.return_text) {
      // The text came in as valid UTF-8; `replace` only guards the invariant.
      absl::StrAppend(&body, ",\"text\":",
                      nlohmann::json(request.texts[i])
                          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    body.append(",\"score\":");
    AppendJsonFloat(scores[i], &body);  // finite: checked above
    body.push_back('}');
  }
  body.push_back(']');
  return body;
}

}  // namespace padless::serve::http
