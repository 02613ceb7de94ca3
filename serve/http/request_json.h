// Reading the JSON bodies of `padless serve`'s routes as Hugging Face text-embeddings-inference
// (TEI) reads them with serde (router/src/http/types.rs), for the parsers of /embed, /embed_all,
// /rerank, /similarity, /tokenize, /decode and /v1/embeddings (internal to padless_serve_http_api:
// the public parsers answer ApiErrors, never JSON):
//   - an empty body, one nested deeper than kMaxJsonDepth, not JSON or not UTF-8: 400;
//   - JSON of the wrong shape (a missing field, a wrong type, a null where serde has a default but
//     no Option): 422, as TEI's JSON extractor answers it;
//   - keys a route does not know are ignored, as serde ignores them.
// Every function here reads an already parsed document and never throws.
#ifndef PADLESS_SERVE_HTTP_REQUEST_JSON_H_
#define PADLESS_SERVE_HTTP_REQUEST_JSON_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/embed_request.h"
#include "padless/serve/http/predict_request.h"
#include "padless/serve/http/truncation_direction.h"

namespace padless::serve::http {

// `body` as a JSON object into *out (`required_field` names the field the error message asks
// for), or the error: 400 (empty, too deep, not JSON, not UTF-8), 422 (not an object) or 500
// (out of memory).
std::optional<ApiError> ParseJsonObject(absl::string_view body, absl::string_view required_field,
                                        nlohmann::json* out);

// A required field's value (422 "missing field `name`" when absent; null is a value).
std::optional<ApiError> RequiredField(const nlohmann::json& object, const char* name,
                                      const nlohmann::json** value);

// Optional fields, left as they are when absent:
// a bool with a serde default: null or another type is 422.
std::optional<ApiError> ReadBool(const nlohmann::json& object, const char* name, bool* value);
// an Option<bool>: null empties it.
std::optional<ApiError> ReadOptionalBool(const nlohmann::json& object, const char* name,
                                         std::optional<bool>* value);
// an Option<String>: null empties it.
std::optional<ApiError> ReadOptionalString(const nlohmann::json& object, const char* name,
                                           std::optional<std::string>* value);
// `truncation_direction` (serde default, no Option): "Right", "right", "Left" or "left"; null or
// any other value is 422.
std::optional<ApiError> ReadTruncationDirection(const nlohmann::json& object,
                                                std::optional<TruncationDirection>* value);
// `dimensions` (Option<usize>): null empties it; an integer from 1 to 2^63 - 1 sets it; 0 is 422
// with TEI's message ("`dimensions` should be positive"), as is any other value.
std::optional<ApiError> ReadDimensions(const nlohmann::json& object, std::optional<int64_t>* value);

// TEI's Vec<u32>: false unless `value` is a list of integers in [0, 2^32) (an empty list is one).
bool ReadTokenIds(const nlohmann::json& value, std::vector<uint32_t>* ids);
// TEI's Vec<String>: false unless `value` is a list of strings (an empty list is one).
bool ReadStrings(const nlohmann::json& value, std::vector<std::string>* strings);

// TEI's `Input` (an untagged enum, tried in this order): one text; one list of token ids (so `[]`
// is a single input without ids, refused later as empty); or a batch whose elements are texts or
// lists of token ids. `field` is "inputs" or "input", for the messages.
std::optional<ApiError> ReadEmbedInputs(const nlohmann::json& value, absl::string_view field,
                                        std::vector<EmbedInput>* inputs, bool* batch);
// The first empty input (a "" text or a list of no ids) as an EmptyText error (400 Empty, as TEI
// answers it), naming the batch element.
std::optional<ApiError> FindEmptyEmbedInput(const std::vector<EmbedInput>& inputs, bool batch,
                                            absl::string_view field);

// TEI's client batch check, with its message "batch size N > maximum allowed batch size M": 422
// Validation (TooManyInputs), as TEI answers it from v1.9.0 (PR #818; 413 up to v1.8.x).
std::optional<ApiError> CheckBatchSize(size_t size, const PredictLimits& limits);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_REQUEST_JSON_H_
