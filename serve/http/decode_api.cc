#include "padless/serve/http/decode_api.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "request_json.h"

namespace padless::serve::http {
namespace {

// ids: a list of u32 (tried first, so `[]` is one empty list) or a list of such lists (TEI's
// untagged InputIds).
std::optional<ApiError> ReadDecodeIds(const nlohmann::json& doc, DecodeRequest* request) {
  const nlohmann::json* ids = nullptr;
  std::optional<ApiError> error = RequiredField(doc, "ids", &ids);
  if (error) return error;
  constexpr absl::string_view kShape =
      "`ids` must be a list of token ids (integers from 0 to 4294967295) or a list of such lists";
  std::vector<uint32_t> list;
  if (ReadTokenIds(*ids, &list)) {
    request->ids.push_back(std::move(list));
    return std::nullopt;
  }
  if (!ids->is_array()) return WrongShape(kShape);
  request->batch = true;
  request->ids.reserve(ids->size());
  for (size_t i = 0; i < ids->size(); ++i) {
    if (!ReadTokenIds((*ids)[i], &list)) {
      return WrongShape(absl::StrCat(kShape, "; batch element ", i, " is not"));
    }
    request->ids.push_back(std::move(list));
  }
  return std::nullopt;
}

std::optional<ApiError> FindEmptyIds(const DecodeRequest& request) {
  for (size_t i = 0; i < request.ids.size(); ++i) {
    if (!request.ids[i].empty()) continue;
    if (!request.batch) return EmptyText("`input_ids` cannot be empty");
    return EmptyText(absl::StrCat("`input_ids` cannot be empty: batch element ", i, " is empty"));
  }
  return std::nullopt;
}

}  // namespace

DecodeParse ParseDecodeRequest(absl::string_view body, const PredictLimits& limits) {
  DecodeParse result;
  nlohmann::json doc;
  std::optional<ApiError>& error = result.error;
  error = ParseJsonObject(body, "ids", &doc);
  if (!error) error = ReadDecodeIds(doc, &result.request);
  if (!error) error = ReadBool(doc, "skip_special_tokens", &result.request.skip_special_tokens);
  if (!error && result.request.batch) error = CheckBatchSize(result.request.ids.size(), limits);
  if (!error) error = FindEmptyIds(result.request);
  return result;
}

std::string DecodeResponseJson(const std::vector<std::string>& texts) {
  std::string body = "[";
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i > 0) body.push_back(',');
    body.append(
        nlohmann::json(texts[i]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  body.push_back(']');
  return body;
}

}  // namespace padless::serve::http
