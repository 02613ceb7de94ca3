// Fuzzes `padless serve`'s request parsers (serve/http/: predict_request.h and the parsers of
// /embed, /embed_all, /rerank, /similarity, /tokenize, /decode and /v1/embeddings) over raw request
// bodies: any bytes must give a request or a TEI error, never a crash. One target for every route,
// within the one fuzz time budget of this target (scripts/fuzz.sh, .ci/run): the first byte picks
// the route, the second sets max_client_batch_size (1..64), the rest is the body. A parsed request
// keeps its parser's promises (inputs within the limit, none empty, options in range) and its
// answer, written from made-up results, is JSON of the right size; an error has a body status
// (400 or 422), a message, and a JSON body in TEI's and in the OpenAI route's shape. The body
// is also given to the Content-Type check (json_content_type.h) as a header value, and its bytes,
// read as floats, to the float writer (float_json.h), which must read back bit for bit.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "fuzz_util.h"
#include "nlohmann/json.hpp"
#include "padless/serve/http/decode_api.h"
#include "padless/serve/http/embed_request.h"
#include "padless/serve/http/embed_response.h"
#include "padless/serve/http/float_json.h"
#include "padless/serve/http/json_content_type.h"
#include "padless/serve/http/openai_embeddings.h"
#include "padless/serve/http/predict_request.h"
#include "padless/serve/http/predict_response.h"
#include "padless/serve/http/rerank_api.h"
#include "padless/serve/http/similarity_api.h"
#include "padless/serve/http/tokenize_api.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

// The routes, in the order of the first byte (make_seeds.py writes the same numbers).
enum Route { kPredict, kEmbed, kEmbedAll, kRerank, kSimilarity, kTokenize, kDecode, kOpenAi };
constexpr int kRoutes = 8;

json ParseAnswer(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(!j.is_discarded(), body);
  return j;
}

// A made-up vector per input, of `width` values (some negative, one zero).
std::vector<std::vector<float>> MadeUpVectors(size_t inputs, size_t width) {
  std::vector<std::vector<float>> vectors(inputs, std::vector<float>(width));
  for (size_t i = 0; i < inputs; ++i) {
    for (size_t k = 0; k < width; ++k) vectors[i][k] = (static_cast<float>(i + k % 3) - 1) / 3;
  }
  return vectors;
}

void CheckPredict(const PredictRequest& r, size_t limit, absl::string_view body) {
  FUZZ_CHECK(!r.inputs.empty() && r.inputs.size() <= limit,
             absl::StrCat(r.inputs.size(), " inputs, limit ", limit));
  FUZZ_CHECK(r.batch || r.inputs.size() == 1, absl::StrCat(r.inputs.size(), " inputs, no batch"));
  for (const Sequence& s : r.inputs) {
    FUZZ_CHECK(!s.text.empty() && (!s.pair || !s.pair->empty()), "an empty text was accepted");
  }
  FUZZ_CHECK(JsonNestingDepth(body, kMaxJsonDepth) <= kMaxJsonDepth, std::string(body));
  const std::vector<std::vector<float>> scores(r.inputs.size(), {0.25f, 0.5f, 0.25f});
  absl::StatusOr<std::string> answer = PredictResponseJson(scores, {"a", "b", "c"}, r.batch);
  FUZZ_CHECK(answer.ok(), answer.status().ToString());
  const json j = ParseAnswer(*answer);
  FUZZ_CHECK(j.is_array() && j.size() == (r.batch ? r.inputs.size() : 3), *answer);
}

// /embed, /embed_all and /v1/embeddings share their inputs' rules.
void CheckEmbedInputs(const std::vector<EmbedInput>& inputs, bool batch, size_t limit) {
  FUZZ_CHECK(!inputs.empty() && (batch ? inputs.size() <= limit : inputs.size() == 1),
             absl::StrCat(inputs.size(), " inputs, limit ", limit, ", batch ", batch));
  for (const EmbedInput& input : inputs) {
    FUZZ_CHECK(input.ids ? !input.ids->empty() && input.text.empty() : !input.text.empty(),
               "an empty input was accepted");
  }
}

void CheckEmbed(const EmbedRequest& r, size_t limit, bool embed_all) {
  CheckEmbedInputs(r.inputs, r.batch, limit);
  FUZZ_CHECK(!r.dimensions || *r.dimensions >= 1, absl::StrCat(*r.dimensions));
  FUZZ_CHECK(!embed_all || (r.normalize && !r.dimensions), "/embed_all read normalize");
  const std::vector<std::vector<float>> vectors = MadeUpVectors(r.inputs.size(), 4);
  absl::StatusOr<std::string> answer =
      embed_all ? EmbedAllResponseJson(vectors, 2) : EmbedResponseJson(vectors);
  FUZZ_CHECK(answer.ok(), answer.status().ToString());
  const json j = ParseAnswer(*answer);
  FUZZ_CHECK(j.size() == r.inputs.size() && j[0].size() == (embed_all ? 2 : 4), *answer);
}

void CheckRerank(const RerankRequest& r, size_t limit) {
  FUZZ_CHECK(!r.texts.empty() && r.texts.size() <= limit,
             absl::StrCat(r.texts.size(), " texts, limit ", limit));
  FUZZ_CHECK(!r.query.empty(), "an empty query was accepted");
  std::vector<float> scores;  // ties where texts have the same length
  for (const std::string& t : r.texts) {
    FUZZ_CHECK(!t.empty(), "an empty text was accepted");
    scores.push_back(static_cast<float>(t.size() % 5));
  }
  absl::StatusOr<std::string> answer = RerankResponseJson(scores, r);
  FUZZ_CHECK(answer.ok(), answer.status().ToString());
  const json j = ParseAnswer(*answer);
  FUZZ_CHECK(j.size() == r.texts.size(), *answer);
  std::vector<bool> seen(r.texts.size());
  for (size_t k = 0; k < j.size(); ++k) {
    const size_t index = j[k]["index"].get<size_t>();
    FUZZ_CHECK(index < seen.size() && !seen[index], *answer);
    seen[index] = true;
    FUZZ_CHECK(j[k].contains("text") == r.return_text, *answer);
    if (k == 0) continue;
    const float before = j[k - 1]["score"].get<float>(), score = j[k]["score"].get<float>();
    const size_t before_index = j[k - 1]["index"].get<size_t>();
    FUZZ_CHECK(before > score || (before == score && before_index < index), *answer);
  }
}

void CheckSimilarity(const SimilarityRequest& r, size_t limit) {
  FUZZ_CHECK(!r.sentences.empty() && r.sentences.size() + 1 <= limit,
             absl::StrCat(r.sentences.size(), " sentences, limit ", limit));
  FUZZ_CHECK(!r.source_sentence.empty(), "an empty source sentence was accepted");
  for (const std::string& s : r.sentences) FUZZ_CHECK(!s.empty(), "an empty sentence");
  const std::vector<std::vector<float>> vectors = MadeUpVectors(r.sentences.size() + 1, 3);
  const std::vector<std::vector<float>> sentences(vectors.begin() + 1, vectors.end());
  absl::StatusOr<std::vector<float>> cosines = CosineSimilarities(vectors[0], sentences);
  FUZZ_CHECK(cosines.ok() && cosines->size() == r.sentences.size(), cosines.status().ToString());
  for (float c : *cosines) FUZZ_CHECK(c >= -1 && c <= 1, absl::StrCat(c));
  absl::StatusOr<std::string> answer = SimilarityResponseJson(*cosines);
  FUZZ_CHECK(answer.ok() && ParseAnswer(*answer).size() == r.sentences.size(), *answer);
}

void CheckTokenize(const TokenizeRequest& r, size_t limit) {
  FUZZ_CHECK(!r.inputs.empty() && (r.batch ? r.inputs.size() <= limit : r.inputs.size() == 1),
             absl::StrCat(r.inputs.size(), " inputs, limit ", limit));
  std::vector<std::vector<TokenPiece>> tokens;
  for (const std::string& text : r.inputs) {
    FUZZ_CHECK(!text.empty(), "an empty text was accepted");
    // The text cut anywhere, as a tokenizer's byte offsets may cut it (not UTF-8: replaced).
    const size_t cut = text.size() / 2;
    tokens.push_back({{101, "[CLS]", true, std::nullopt, std::nullopt},
                      {1, text.substr(0, cut), false, 0, cut},
                      {2, text.substr(cut), false, cut, text.size()}});
  }
  const json j = ParseAnswer(TokenizeResponseJson(tokens));
  FUZZ_CHECK(j.size() == r.inputs.size() && j[0].size() == 3, j.dump());
}

void CheckDecode(const DecodeRequest& r, size_t limit) {
  FUZZ_CHECK(!r.ids.empty() && (r.batch ? r.ids.size() <= limit : r.ids.size() == 1),
             absl::StrCat(r.ids.size(), " lists, limit ", limit));
  std::vector<std::string> texts;
  for (const std::vector<uint32_t>& ids : r.ids) {
    FUZZ_CHECK(!ids.empty(), "an empty list of ids was accepted");
    std::string text;  // the ids' low bytes: anything, UTF-8 or not
    for (uint32_t id : ids) text.push_back(static_cast<char>(id & 0xff));
    texts.push_back(std::move(text));
  }
  FUZZ_CHECK(ParseAnswer(DecodeResponseJson(texts)).size() == r.ids.size(), "decode answer");
}

void CheckOpenAi(const OpenAiEmbeddingsRequest& r, size_t limit) {
  CheckEmbedInputs(r.inputs, r.batch, limit);
  FUZZ_CHECK(!r.dimensions || *r.dimensions >= 1, absl::StrCat(*r.dimensions));
  const std::vector<std::vector<float>> vectors = MadeUpVectors(r.inputs.size(), 5);
  const bool base64 = r.encoding_format == EmbeddingEncoding::kBase64;
  absl::StatusOr<std::string> answer =
      OpenAiEmbeddingsResponseJson(vectors, r.model.value_or("m"), 7, base64);
  FUZZ_CHECK(answer.ok(), answer.status().ToString());
  const json j = ParseAnswer(*answer);
  FUZZ_CHECK(j["data"].size() == r.inputs.size() && j["usage"]["total_tokens"] == 7, *answer);
  if (!base64) return;
  std::string bytes;
  FUZZ_CHECK(absl::Base64Unescape(j["data"][0]["embedding"].get<std::string>(), &bytes) &&
                 bytes.size() == 20 && std::memcmp(bytes.data(), vectors[0].data(), 20) == 0,
             *answer);  // little-endian hosts: the bytes are the floats' own
}

void CheckError(const ApiError& e) {
  // No parser answers 413 (the transport's, for a body over the limit): too many inputs is 422.
  FUZZ_CHECK(e.status == 400 || e.status == 422,
             absl::StrCat(e.status, " ", e.message));
  FUZZ_CHECK(!e.message.empty(), "an error without a message");
  FUZZ_CHECK(!json::parse(e.ToJson(), nullptr, false).is_discarded(), e.ToJson());
  const json openai = json::parse(OpenAiErrorJson(e), nullptr, false);
  FUZZ_CHECK(!openai.is_discarded() && openai["code"] == e.status, OpenAiErrorJson(e));
}

// Parses `body` as `route`'s request and checks the result; returns whether it parsed.
bool ParseAndCheck(int route, absl::string_view body, size_t limit) {
  const PredictLimits limits{limit};
  std::optional<ApiError> error;
  switch (route) {
    case kPredict: {
      const PredictParse p = ParsePredictRequest(body, limits);
      if (p.ok()) CheckPredict(p.request, limit, body);
      error = p.error;
      break;
    }
    case kEmbed:
    case kEmbedAll: {
      const EmbedParse p =
          route == kEmbed ? ParseEmbedRequest(body, limits) : ParseEmbedAllRequest(body, limits);
      if (p.ok()) CheckEmbed(p.request, limit, route == kEmbedAll);
      error = p.error;
      break;
    }
    case kRerank: {
      const RerankParse p = ParseRerankRequest(body, limits);
      if (p.ok()) CheckRerank(p.request, limit);
      error = p.error;
      break;
    }
    case kSimilarity: {
      const SimilarityParse p = ParseSimilarityRequest(body, limits);
      if (p.ok()) CheckSimilarity(p.request, limit);
      error = p.error;
      break;
    }
    case kTokenize: {
      const TokenizeParse p = ParseTokenizeRequest(body, limits);
      if (p.ok()) CheckTokenize(p.request, limit);
      error = p.error;
      break;
    }
    case kDecode: {
      const DecodeParse p = ParseDecodeRequest(body, limits);
      if (p.ok()) CheckDecode(p.request, limit);
      error = p.error;
      break;
    }
    default: {
      const OpenAiEmbeddingsParse p = ParseOpenAiEmbeddingsRequest(body, limits);
      if (p.ok()) CheckOpenAi(p.request, limit);
      error = p.error;
      break;
    }
  }
  if (error) CheckError(*error);
  return !error.has_value();
}

// The body's bytes as a Content-Type header: accepted, or refused with a 415 whose body is JSON.
void CheckContentType(absl::string_view content_type) {
  const std::optional<ApiError> e = CheckJsonContentType(content_type);
  FUZZ_CHECK(e.has_value() != IsJsonContentType(content_type), std::string(content_type));
  if (!e) return;
  FUZZ_CHECK(e->status == 415 && !e->message.empty(), e->message);
  FUZZ_CHECK(!json::parse(e->ToJson(), nullptr, false).is_discarded(), e->ToJson());
}

// The body's bytes as floats (any bit pattern): the finite ones are written and read back.
void CheckFloatsRoundTrip(absl::string_view bytes) {
  std::vector<float> values;
  for (size_t at = 0; at + 4 <= bytes.size() && values.size() < 64; at += 4) {
    float f;
    std::memcpy(&f, bytes.data() + at, 4);
    if (std::isfinite(f)) values.push_back(f);
  }
  std::string text;
  FUZZ_CHECK(AppendJsonFloatArray(values.data(), values.size(), &text), "a finite value refused");
  size_t start = 1;
  for (float f : values) {
    const size_t end = text.find_first_of(",]", start);
    const float back = std::strtof(text.substr(start, end - start).c_str(), nullptr);
    FUZZ_CHECK(std::memcmp(&back, &f, 4) == 0, text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace
}  // namespace padless::serve::http

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::serve::http;
  padless::fuzz::FuzzInput in(data, size);
  const int route = in.Pick(kRoutes);
  const size_t limit = static_cast<size_t>(in.Range(1, 64));
  const absl::string_view body = in.Rest();
  const bool parsed = ParseAndCheck(route, body, limit);
  // The same bytes, the same answer.
  FUZZ_CHECK(ParseAndCheck(route, body, limit) == parsed, std::string(body));
  CheckContentType(body);
  CheckFloatsRoundTrip(body);
  return 0;
}
