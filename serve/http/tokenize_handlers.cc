// POST /tokenize and POST /decode, on every model kind: the model's tokenizer alone, no engine
// work. They run on the I/O thread that read the request: tokenizing at most
// max_client_batch_size texts of at most body_limit bytes is short next to a forward.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "padless/serve/http/decode_api.h"
#include "padless/serve/http/http_server.h"
#include "padless/serve/http/token_decode.h"
#include "padless/serve/http/tokenize_api.h"

namespace padless::serve::http {
namespace {

// The prompt a /tokenize request names (or the model's default one), put before its texts as the
// embedding routes do, so that the offsets are those of what the model reads; "" for none.
std::variant<std::string, ApiError> TokenizePrompt(const std::optional<std::string>& name,
                                                   const EmbeddingInfo* model) {
  if (model == nullptr) {
    if (!name.has_value()) return std::string();
    return ApiError{422, ErrorType::kValidation,
                    absl::StrCat("prompt_name `", *name, "`: this model has no prompts")};
  }
  const std::string& chosen = name.value_or(model->default_prompt_name);
  if (chosen.empty()) return std::string();
  const auto it = model->prompts.find(chosen);
  if (it == model->prompts.end()) {
    return ApiError{422, ErrorType::kValidation,
                    absl::StrCat("prompt_name `", chosen, "` is not one of the model's prompts")};
  }
  return it->second;
}

}  // namespace

void HttpServer::HandleTokenize(const HttpRequest& req, Reply reply) {
  TokenizeParse parsed = ParseTokenizeRequest(req.body, {options_.max_client_batch_size});
  if (!parsed.ok()) return reply->Send(ErrorResponse(*parsed.error));
  auto prompt = TokenizePrompt(parsed.request.prompt_name, engine_->embedding_info());
  if (ApiError* e = std::get_if<ApiError>(&prompt)) return reply->Send(ErrorResponse(*e));
  const tokenize::Tokenizer& tokenizer = engine_->model().tokenizer;
  std::vector<std::vector<TokenPiece>> answer;
  for (const std::string& input : parsed.request.inputs) {
    absl::StatusOr<std::vector<tokenize::Token>> tokens = tokenizer.Tokenize(
        std::get<std::string>(prompt) + input, parsed.request.add_special_tokens);
    if (!tokens.ok()) {
      return reply->Send(
          ErrorResponse({422, ErrorType::kTokenizer, std::string(tokens.status().message())}));
    }
    std::vector<TokenPiece>& pieces = answer.emplace_back();
    for (tokenize::Token& t : *tokens) {
      pieces.push_back(
          {static_cast<uint32_t>(t.id), std::move(t.text), t.special, t.start, t.stop});
    }
  }
  HttpResponse response;
  response.body = TokenizeResponseJson(answer);
  response.note.inputs = static_cast<int64_t>(answer.size());
  response.note.tokens = 0;
  for (const std::vector<TokenPiece>& pieces : answer) response.note.tokens += pieces.size();
  reply->Send(std::move(response));
}

void HttpServer::HandleDecode(const HttpRequest& req, Reply reply) {
  DecodeParse parsed = ParseDecodeRequest(req.body, {options_.max_client_batch_size});
  if (!parsed.ok()) return reply->Send(ErrorResponse(*parsed.error));
  const tokenize::Tokenizer& tokenizer = engine_->model().tokenizer;
  std::vector<std::string> texts;
  LogNote note{static_cast<int64_t>(parsed.request.ids.size()), 0, ""};
  for (const std::vector<uint32_t>& ids : parsed.request.ids) {
    note.tokens += static_cast<int64_t>(ids.size());
    std::vector<int32_t> signed_ids;
    for (uint32_t id : ids) {
      if (id >= static_cast<uint32_t>(tokenizer.vocab_size())) {
        HttpResponse error =
            ErrorResponse({422, ErrorType::kTokenizer,
                           absl::StrCat("token id ", id, " is outside the vocabulary of ",
                                        tokenizer.vocab_size())});
        error.note.inputs = note.inputs;
        return reply->Send(std::move(error));
      }
      signed_ids.push_back(static_cast<int32_t>(id));
    }
    absl::StatusOr<std::string> text =
        DecodeTokenIds(tokenizer, signed_ids, parsed.request.skip_special_tokens);
    if (!text.ok()) {
      return reply->Send(
          ErrorResponse({422, ErrorType::kTokenizer, std::string(text.status().message())}));
    }
    texts.push_back(*std::move(text));
  }
  HttpResponse response;
  response.body = DecodeResponseJson(texts);
  response.note = std::move(note);
  reply->Send(std::move(response));
}

}  // namespace padless::serve::http
