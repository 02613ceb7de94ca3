#include "request_json.h"

#include <exception>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

// serde's u32: JSON integers only (1.0 is refused), from 0 to 2^32 - 1.
bool IsTokenId(const json& value) {
  if (value.is_number_unsigned()) {
    return value.get<uint64_t>() <= std::numeric_limits<uint32_t>::max();
  }
  return value.is_number_integer() && value.get<int64_t>() == 0;  // "-0"
}

std::string EmbedInputShape(absl::string_view field) {
  return absl::StrCat("`", field,
                      "` must be a string, a list of token ids (integers from 0 to 4294967295), "
                      "or a batch of strings and lists of token ids");
}

}  // namespace

std::optional<ApiError> ParseJsonObject(absl::string_view body, absl::string_view required_field,
                                        json* out) {
  if (body.empty()) {
    return MalformedBody(
        absl::StrCat("empty body: expected a JSON object with `", required_field, "`"));
  }
  if (JsonNestingDepth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    return MalformedBody(absl::StrCat("JSON nested deeper than ", kMaxJsonDepth));
  }
  try {
    *out = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  } catch (const std::exception& e) {  // bad_alloc on a huge document; nothing else throws
    return Internal(absl::StrCat("parsing the request failed: ", e.what()));
  }
  if (out->is_discarded()) return MalformedBody("the body is not valid JSON (or not UTF-8)");
  if (!out->is_object()) {
    return WrongShape(absl::StrCat("the body must be a JSON object with `", required_field, "`"));
  }
  return std::nullopt;
}

std::optional<ApiError> RequiredField(const json& object, const char* name, const json** value) {
  const auto it = object.find(name);
  if (it == object.end()) return WrongShape(absl::StrCat("missing field `", name, "`"));
  *value = &*it;
  return std::nullopt;
}

std::optional<ApiError> ReadBool(const json& object, const char* name, bool* value) {
  const auto it = object.find(name);
  if (it == object.end()) return std::nullopt;
  if (!it->is_boolean()) return WrongShape(absl::StrCat("`", name, "` must be a boolean"));
  *value = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> ReadOptionalBool(const json& object, const char* name,
                                         std::optional<bool>* value) {
  const auto it = object.find(name);
  if (it == object.end()) return std::nullopt;
  if (it->is_null()) {
    value->reset();
  } else if (it->is_boolean()) {
    *value = it->get<bool>();
  } else {
    return WrongShape(absl::StrCat("`", name, "` must be a boolean or null"));
  }
  return std::nullopt;
}

std::optional<ApiError> ReadOptionalString(const json& object, const char* name,
                                           std::optional<std::string>* value) {
  const auto it = object.find(name);
  if (it == object.end()) return std::nullopt;
  if (it->is_null()) {
    value->reset();
  } else if (it->is_string()) {
    *value = it->get<std::string>();
  } else {
    return WrongShape(absl::StrCat("`", name, "` must be a string or null"));
  }
  return std::nullopt;
}

std::optional<ApiError> ReadTruncationDirection(const json& object,
                                                std::optional<TruncationDirection>* value) {
  const auto it = object.find("truncation_direction");
  if (it == object.end()) return std::nullopt;
  const std::string name = it->is_string() ? it->get<std::string>() : "";
  if (name == "Right" || name == "right") {
    *value = TruncationDirection::kRight;
  } else if (name == "Left" || name == "left") {
    *value = TruncationDirection::kLeft;
  } else {
    return WrongShape("`truncation_direction` must be \"Right\" or \"Left\"");
  }
  return std::nullopt;
}

std::optional<ApiError> ReadDimensions(const json& object, std::optional<int64_t>* value) {
  const auto it = object.find("dimensions");
  if (it == object.end()) return std::nullopt;
  if (it->is_null()) {
    value->reset();
    return std::nullopt;
  }
  // serde's usize: an integer (2.0 is refused); "-0" reads as 0.
  const bool zero = it->is_number_integer() && it->get<int64_t>() == 0;
  if (zero) return WrongShape("`dimensions` should be positive");  // TEI's message
  if (!it->is_number_unsigned() ||
      it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return WrongShape("`dimensions` must be a positive integer or null");
  }
  *value = static_cast<int64_t>(it->get<uint64_t>());
  return std::nullopt;
}

bool ReadTokenIds(const json& value, std::vector<uint32_t>* ids) {
  if (!value.is_array()) return false;
  ids->clear();
  ids->reserve(value.size());
  for (const json& id : value) {
    if (!IsTokenId(id)) return false;
    ids->push_back(id.is_number_unsigned() ? static_cast<uint32_t>(id.get<uint64_t>()) : 0);
  }
  return true;
}

bool ReadStrings(const json& value, std::vector<std::string>* strings) {
  if (!value.is_array()) return false;
  strings->clear();
  strings->reserve(value.size());
  for (const json& s : value) {
    if (!s.is_string()) return false;
    strings->push_back(s.get<std::string>());
  }
  return true;
}

std::optional<ApiError> ReadEmbedInputs(const json& value, absl::string_view field,
                                        std::vector<EmbedInput>* inputs, bool* batch) {
  inputs->clear();
  *batch = false;
  if (value.is_string()) {
    inputs->push_back({value.get<std::string>(), std::nullopt});
    return std::nullopt;
  }
  if (!value.is_array()) return WrongShape(EmbedInputShape(field));
  std::vector<uint32_t> ids;
  if (ReadTokenIds(value, &ids)) {  // before the batch, as serde tries the untagged variants
    inputs->push_back({"", std::move(ids)});
    return std::nullopt;
  }
  *batch = true;
  inputs->reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const json& element = value[i];
    if (element.is_string()) {
      inputs->push_back({element.get<std::string>(), std::nullopt});
    } else if (ReadTokenIds(element, &ids)) {
      inputs->push_back({"", std::move(ids)});
    } else {
      return WrongShape(absl::StrCat(EmbedInputShape(field), "; batch element ", i, " is not"));
    }
  }
  return std::nullopt;
}

std::optional<ApiError> FindEmptyEmbedInput(const std::vector<EmbedInput>& inputs, bool batch,
                                            absl::string_view field) {
  if (inputs.empty()) return EmptyText(absl::StrCat("`", field, "` cannot be empty"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const EmbedInput& input = inputs[i];
    const bool empty = input.ids ? input.ids->empty() : input.text.empty();
    if (!empty) continue;
    const absl::string_view what = input.ids ? "list of token ids" : "text";
    if (!batch) {
      return EmptyText(absl::StrCat("`", field, "` cannot be empty: the ", what, " is empty"));
    }
    return EmptyText(absl::StrCat("`", field, "` cannot contain an empty input: the ", what,
                                  " of batch element ", i, " is empty"));
  }
  return std::nullopt;
}

std::optional<ApiError> CheckBatchSize(size_t size, const PredictLimits& limits) {
  if (size <= limits.max_client_batch_size) return std::nullopt;
  return TooManyInputs(size, limits.max_client_batch_size);
}

}  // namespace padless::serve::http
