// The engine requests of the embedding routes (/embed, /embed_all, /similarity, /v1/embeddings):
// each input a text with the prompt put before it, as sentence-transformers does, or token ids;
// cut per truncate and truncation_direction. Private to serve/http.
//
// Token ids as TEI reads them (core/src/tokenization.rs, tokenize_input): TEI decodes them and
// encodes the text again. With a prompt (prompt_name, or the model's default), it decodes them
// skipping the special tokens, puts the prompt before the text and encodes it with the special
// tokens ([CLS] prompt text [SEP]): padless does the same, through the text path. Without a
// prompt, it decodes them keeping the special tokens and encodes the text without adding any,
// which gives back ids that a tokenizer wrote: padless uses them as given, no special tokens
// added (so [CLS]/[SEP] are in the input only where the client put them). Either way, more ids
// than max_len are cut from the end truncation_direction names, or refused (422) with truncate
// false, in the engine. An id outside the vocabulary is refused with 422 Validation: TEI's decode
// (tokenizers' Tokenizer::decode) drops such ids without a word, embedding what is left; padless
// refuses rather than embed something the client did not send.
#ifndef PADLESS_SERVE_HTTP_EMBED_INPUTS_H_
#define PADLESS_SERVE_HTTP_EMBED_INPUTS_H_

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "padless/serve/http/api_error.h"
#include "padless/serve/http/embed_request.h"
#include "padless/serve/http/truncation_direction.h"
#include "padless/serve/inference_engine.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::serve::http {

struct EmbedInputOptions {
  bool truncate = true;
  std::optional<TruncationDirection> direction;  // empty: Right (keep the first tokens)
  std::optional<std::string> prompt_name;        // empty: the model's default prompt, if any
  bool token_embeddings = false;
  bool prompts = true;  // false: no prompt at all, not even the model's default (OpenAI's route)
};

// 422 for a prompt_name the model does not have; 422 for an id outside the tokenizer's vocabulary.
std::variant<std::vector<EngineRequest>, ApiError> EmbedEngineRequests(
    const std::vector<EmbedInput>& inputs, const EmbedInputOptions& options,
    const EmbeddingInfo& model, const tokenize::Tokenizer& tokenizer);

// 422 unless 1 <= dimensions <= the model's width (none given: fine).
std::optional<ApiError> CheckDimensions(const std::optional<int64_t>& dimensions,
                                        const EmbeddingInfo& model);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_EMBED_INPUTS_H_
