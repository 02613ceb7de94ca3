#include "padless/serve/http/predict_request.h"

#include <exception>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace padless::serve::http {
namespace {

using nlohmann::json;

constexpr absl::string_view kInputsShape =
    "`inputs` must be a string, a pair of strings [string, string] or a batch of singles and "
    "pairs [[string], [string, string], ...]";

// A list of 1 or 2 strings as a Sequence; false when it is anything else.
bool SequenceFromList(const json& list, Sequence* out) {
  if (!list.is_array() || list.empty() || list.size() > 2) return false;
  for (const json& s : list) {
    if (!s.is_string()) return false;
  }
  out->text = list[0].get<std::string>();
  if (list.size() == 2) out->pair = list[1].get<std::string>();
  return true;
}

// TEI's rule: the first element decides; a string starts a single or a pair, a list a batch.
std::optional<ApiError> ParseInputs(const json& inputs, PredictRequest* request) {
  if (inputs.is_string()) {
    request->inputs.push_back({inputs.get<std::string>(), std::nullopt});
    return std::nullopt;
  }
  if (!inputs.is_array()) return WrongShape(kInputsShape);
  if (inputs.empty()) return WrongShape("`inputs` cannot be an empty list");
  if (inputs[0].is_string()) {
    Sequence sequence;
    if (!SequenceFromList(inputs, &sequence)) return WrongShape(kInputsShape);
    request->inputs.push_back(std::move(sequence));
    return std::nullopt;
  }
  request->batch = true;
  request->inputs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Sequence sequence;
    if (!SequenceFromList(inputs[i], &sequence)) {
      return WrongShape(absl::StrCat(kInputsShape, "; batch element ", i, " is not"));
    }
    request->inputs.push_back(std::move(sequence));
  }
  return std::nullopt;
}

// Which text of `s` is empty, for the error message; empty when none is.
std::optional<absl::string_view> EmptyPart(const Sequence& s) {
  if (s.text.empty()) return s.pair ? "the pair's first text" : "the text";
  if (s.pair && s.pair->empty()) return "the pair's second text";
  return std::nullopt;
}

// No text may be empty, alone, in a pair or in a batch (api_error.h, EmptyText): an empty text
// would be classified from its special tokens alone, an answer that means nothing.
std::optional<ApiError> FindEmptyText(const PredictRequest& request) {
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const std::optional<absl::string_view> part = EmptyPart(request.inputs[i]);
    if (!part) continue;
    if (!request.batch) {
      return EmptyText(absl::StrCat("`inputs` cannot be empty: ", *part, " is empty"));
    }
    return EmptyText(absl::StrCat("`inputs` cannot contain an empty text: ", *part,
                                  " of batch element ", i, " is empty"));
  }
  return std::nullopt;
}

// truncate (a bool or null), truncation_direction and raw_scores (a bool; null is an error, as
// for serde's non-optional fields).
std::optional<ApiError> ParseOptions(const json& body, PredictRequest* request) {
  if (auto it = body.find("truncate"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return WrongShape("`truncate` must be a boolean or null");
    request->truncate = it->get<bool>();
  }
  if (auto it = body.find("raw_scores"); it != body.end()) {
    if (!it->is_boolean()) return WrongShape("`raw_scores` must be a boolean");
    request->raw_scores = it->get<bool>();
  }
  if (auto it = body.find("truncation_direction"); it != body.end()) {
    const std::string d = it->is_string() ? it->get<std::string>() : "";
    if (d == "Left" || d == "left") {
      return WrongShape(
          "`truncation_direction` Left is not supported: padless keeps the head and tail of a "
          "long text");
    }
    if (d != "Right" && d != "right") {
      return WrongShape("`truncation_direction` must be \"Right\" or \"Left\"");
    }
  }
  return std::nullopt;
}

PredictParse ParseDocument(const json& body, const PredictLimits& limits) {
  PredictParse result;
  if (!body.is_object()) {
    result.error = WrongShape("the body must be a JSON object with `inputs`");
    return result;
  }
  auto inputs = body.find("inputs");
  if (inputs == body.end()) {
    result.error = WrongShape("missing field `inputs`");
    return result;
  }
  result.error = ParseInputs(*inputs, &result.request);
  if (!result.error) result.error = ParseOptions(body, &result.request);
  if (!result.error && result.request.inputs.size() > limits.max_client_batch_size) {
    result.error = TooManyInputs(result.request.inputs.size(), limits.max_client_batch_size);
  }
  // After the batch size, as TEI checks it before it encodes (and so finds empty texts).
  if (!result.error) result.error = FindEmptyText(result.request);
  return result;
}

}  // namespace

int JsonNestingDepth(absl::string_view body, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

PredictParse ParsePredictRequest(absl::string_view body, const PredictLimits& limits) {
  PredictParse result;
  if (body.empty()) {
    result.error = MalformedBody("empty body: expected a JSON object with `inputs`");
    return result;
  }
  if (JsonNestingDepth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    result.error = MalformedBody(absl::StrCat("JSON nested deeper than ", kMaxJsonDepth));
    return result;
  }
  try {
    const json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      result.error = MalformedBody("the body is not valid JSON (or not UTF-8)");
      return result;
    }
    return ParseDocument(doc, limits);
  } catch (const std::exception& e) {  // bad_alloc on a huge document; nothing else throws
    result.error = Internal(absl::StrCat("parsing the request failed: ", e.what()));
    return result;
  }
}

}  // namespace padless::serve::http
