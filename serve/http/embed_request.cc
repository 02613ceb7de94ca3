#include "padless/serve/http/embed_request.h"

#include "nlohmann/json.hpp"
#include "request_json.h"

namespace padless::serve::http {
namespace {

// The fields /embed and /embed_all share, then /embed's own; checks in TEI's order: the shape
// (serde), then the batch size, then empty inputs (the tokenizer's check).
EmbedParse ParseEmbedBody(absl::string_view body, const PredictLimits& limits, bool embed_only) {
  EmbedParse result;
  EmbedRequest& request = result.request;
  nlohmann::json doc;
  std::optional<ApiError>& error = result.error;
  error = ParseJsonObject(body, "inputs", &doc);
  const nlohmann::json* inputs = nullptr;
  if (!error) error = RequiredField(doc, "inputs", &inputs);
  if (!error) error = ReadEmbedInputs(*inputs, "inputs", &request.inputs, &request.batch);
  if (!error) error = ReadOptionalBool(doc, "truncate", &request.truncate);
  if (!error) error = ReadTruncationDirection(doc, &request.truncation_direction);
  if (!error) error = ReadOptionalString(doc, "prompt_name", &request.prompt_name);
  if (!error && embed_only) error = ReadBool(doc, "normalize", &request.normalize);
  if (!error && embed_only) error = ReadDimensions(doc, &request.dimensions);
  if (!error && request.batch) error = CheckBatchSize(request.inputs.size(), limits);
  if (!error) error = FindEmptyEmbedInput(request.inputs, request.batch, "inputs");
  return result;
}

}  // namespace

EmbedParse ParseEmbedRequest(absl::string_view body, const PredictLimits& limits) {
  return ParseEmbedBody(body, limits, /*embed_only=*/true);
}

EmbedParse ParseEmbedAllRequest(absl::string_view body, const PredictLimits& limits) {
  return ParseEmbedBody(body, limits, /*embed_only=*/false);
}

}  // namespace padless::serve::http
