#include "embed_inputs.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "padless/serve/http/token_decode.h"

namespace padless::serve::http {
namespace {

ApiError Invalid(std::string why) { return ApiError{422, ErrorType::kValidation, std::move(why)}; }

// The prompt text to put before every input; "" for none. An unknown name is an error.
std::variant<std::string, ApiError> PromptText(const std::optional<std::string>& name,
                                               const EmbeddingInfo& model) {
  const std::string& chosen = name.has_value() ? *name : model.default_prompt_name;
  if (chosen.empty()) return std::string();
  const auto it = model.prompts.find(chosen);
  if (it == model.prompts.end()) {
    std::string known;
    for (const auto& [k, v] : model.prompts) absl::StrAppend(&known, known.empty() ? "" : ", ", k);
    return Invalid(absl::StrCat("prompt_name `", chosen, "` is not one of the model's prompts (",
                                known.empty() ? "it has none" : known, ")"));
  }
  return it->second;
}

// The ids of one input as int32, or 422 naming the first one outside the vocabulary.
std::variant<std::vector<int32_t>, ApiError> CheckedIds(const std::vector<uint32_t>& ids,
                                                        size_t input,
                                                        const tokenize::Tokenizer& tokenizer) {
  const uint32_t vocab = static_cast<uint32_t>(tokenizer.vocab_size());
  std::vector<int32_t> out;
  out.reserve(ids.size());
  for (uint32_t id : ids) {
    if (id >= vocab) {
      return Invalid(absl::StrCat("input ", input, ": token id ", id,
                                  " is outside the vocabulary [0, ", vocab, ")"));
    }
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

}  // namespace

std::variant<std::vector<EngineRequest>, ApiError> EmbedEngineRequests(
    const std::vector<EmbedInput>& inputs, const EmbedInputOptions& options,
    const EmbeddingInfo& model, const tokenize::Tokenizer& tokenizer) {
  std::variant<std::string, ApiError> prompt =
      options.prompts ? PromptText(options.prompt_name, model) : std::string();
  if (ApiError* e = std::get_if<ApiError>(&prompt)) return *e;
  const std::string& prefix = std::get<std::string>(prompt);
  std::vector<EngineRequest> out(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EngineRequest& r = out[i];
    r.truncate = options.truncate;
    r.truncation = options.direction == TruncationDirection::kLeft ? tokenize::Truncation::kTail
                                                                   : tokenize::Truncation::kHead;
    r.token_embeddings = options.token_embeddings;
    if (!inputs[i].ids.has_value()) {
      r.text = prefix + inputs[i].text;
      continue;
    }
    auto ids = CheckedIds(*inputs[i].ids, i, tokenizer);
    if (ApiError* e = std::get_if<ApiError>(&ids)) return *e;
    if (prefix.empty()) {
      r.ids = std::get<std::vector<int32_t>>(std::move(ids));
      continue;
    }
    // A prompt: the ids' text without special tokens after it, encoded as a text ([CLS] ... [SEP]).
    absl::StatusOr<std::string> text =
        DecodeTokenIds(tokenizer, std::get<std::vector<int32_t>>(ids),
                       /*skip_special_tokens=*/true);
    if (!text.ok()) return Invalid(absl::StrCat("input ", i, ": ", text.status().message()));
    r.text = prefix + *text;
  }
  return out;
}

std::optional<ApiError> CheckDimensions(const std::optional<int64_t>& dimensions,
                                        const EmbeddingInfo& model) {
  if (!dimensions.has_value() || (*dimensions >= 1 && *dimensions <= model.dimension)) {
    return std::nullopt;
  }
  return Invalid(absl::StrCat("dimensions must be between 1 and the model's ", model.dimension,
                              ", got ", *dimensions));
}

}  // namespace padless::serve::http
