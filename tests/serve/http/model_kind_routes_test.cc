// The routes of each model kind end to end, in process (issue 44): an embedding server answers
// /embed, /embed_all, /similarity, /v1/embeddings and / with the engine's vectors (checked against
// the engine's own, finished as the request asks), a reranker answers /rerank and / sorted by
// score, and a route of another kind answers 400; /info names the kind.
#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "padless/serve/http/http_server.h"
#include "serve_fixtures.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

// A server on a free port serving `engine`.
struct RunningServer {
  explicit RunningServer(std::unique_ptr<InferenceEngine> engine, ServerInfo info) {
    ServerOptions options;
    options.port = 0;
    options.model_name = "small";
    server = std::make_unique<HttpServer>(options, /*log=*/nullptr);
    port = *server->Bind();
    EXPECT_TRUE(server->Start().ok());
    server->SetEngine(std::move(engine), std::move(info));
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_tcp_nodelay(true);
  }
  httplib::Result Post(const std::string& path, const json& body) {
    return client->Post(path, body.dump(), "application/json");
  }
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
  int port = 0;
};

std::unique_ptr<InferenceEngine> Embedder(const std::string& dir) {
  EngineOptions options;
  options.pooling = models::SentencePooling::kMean;
  return *InferenceEngine::Load(dir, options);
}

// The engine's vector of `text`, finished as a request with these options asks.
std::vector<float> Expected(InferenceEngine& engine, const std::string& text, bool normalize,
                            int64_t dimensions) {
  EngineRequest r;
  r.text = text;
  r.truncation = tokenize::Truncation::kHead;
  std::vector<float> v = (*engine.Run(absl::MakeConstSpan(&r, 1)))[0]->embedding;
  EXPECT_TRUE(FinishEmbedding(v, normalize, dimensions).ok());
  return v;
}

void ExpectVector(const json& got, const std::vector<float>& want) {
  ASSERT_TRUE(got.is_array());
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k].get<float>(), want[k], 1e-5f);
}

class EmbeddingRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::WriteSmallModelDir("routes_embed");
    reference_ = Embedder(dir_);
    ServerInfo info;
    info.kind = "embedding";
    info.pooling = "mean";
    server_ = std::make_unique<RunningServer>(Embedder(dir_), info);
  }
  std::string dir_;
  std::unique_ptr<InferenceEngine> reference_;
  std::unique_ptr<RunningServer> server_;
};

TEST_F(EmbeddingRoutesTest, EmbedAnswersEachInputsVector) {
  const std::string a = testing::Words(5, 1), b = testing::Words(9, 2);
  httplib::Result r = server_->Post("/embed", {{"inputs", {a, b}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json got = json::parse(r->body);
  ASSERT_EQ(got.size(), 2u);
  ExpectVector(got[0], Expected(*reference_, a, true, 0));
  ExpectVector(got[1], Expected(*reference_, b, true, 0));
  EXPECT_TRUE(r->has_header("x-compute-tokens"));
  // One text, unnormalized, Matryoshka-truncated; the root route embeds too.
  r = server_->Post("/", {{"inputs", a}, {"normalize", false}, {"dimensions", 8}});
  ASSERT_EQ(r->status, 200) << r->body;
  ExpectVector(json::parse(r->body)[0], Expected(*reference_, a, false, 8));
  r = server_->Post("/embed", {{"inputs", a}, {"dimensions", 33}});
  EXPECT_EQ(r->status, 422) << r->body;
  r = server_->Post("/embed", {{"inputs", a}, {"prompt_name", "query"}});
  EXPECT_EQ(r->status, 422) << r->body;  // the model has no prompts
  r = server_->Post("/embed", {{"inputs", ""}});
  EXPECT_EQ(r->status, 400) << r->body;  // TEI's Empty
}

// The engine's vector of token ids used as given, the first (or last) max_len of them.
std::vector<float> ExpectedOfIds(InferenceEngine& engine, std::vector<int32_t> ids, bool keep_first) {
  EngineRequest r;
  r.ids = std::move(ids);
  r.truncation = keep_first ? tokenize::Truncation::kHead : tokenize::Truncation::kTail;
  std::vector<float> v = (*engine.Run(absl::MakeConstSpan(&r, 1)))[0]->embedding;
  EXPECT_TRUE(FinishEmbedding(v, true, 0).ok());
  return v;
}

// Token-id inputs as TEI reads them (embed_inputs.h): the ids are the model input, special tokens
// only where the client put them; more than max_len are cut from the end truncation_direction
// names, or refused with 422 under truncate false; an id outside the vocabulary is 422.
TEST_F(EmbeddingRoutesTest, TokenIdInputsAsTeiReadsThem) {
  const tokenize::Tokenizer& tokenizer = reference_->model().tokenizer;
  const std::string a = testing::Words(5, 1);
  const std::vector<int32_t> pieces = *tokenizer.EncodePieces(a);
  std::vector<int32_t> ids = {tokenizer.special_ids().cls};
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  ids.push_back(tokenizer.special_ids().sep);
  httplib::Result r = server_->Post("/embed", {{"inputs", ids}});
  ASSERT_EQ(r->status, 200) << r->body;
  ExpectVector(json::parse(r->body)[0], Expected(*reference_, a, true, 0));  // [CLS] a [SEP]
  // Without [CLS]/[SEP] nothing adds them: another input, another vector.
  const std::vector<int32_t> bare(ids.begin() + 1, ids.end() - 1);
  r = server_->Post("/embed", {{"inputs", bare}});
  ASSERT_EQ(r->status, 200) << r->body;
  ExpectVector(json::parse(r->body)[0], ExpectedOfIds(*reference_, bare, true));

  const std::vector<int32_t> long_ids = *tokenizer.EncodePieces(testing::Words(60, 3));
  ASSERT_GT(long_ids.size(), 32u);  // the model's max_len
  r = server_->Post("/embed", {{"inputs", long_ids}, {"truncate", false}});
  EXPECT_EQ(r->status, 422) << r->body;
  EXPECT_EQ(json::parse(r->body)["error_type"], "Validation") << r->body;
  r = server_->Post("/embed", {{"inputs", long_ids}});
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<int32_t> first(long_ids.begin(), long_ids.begin() + 32);
  ExpectVector(json::parse(r->body)[0], ExpectedOfIds(*reference_, first, true));
  r = server_->Post("/embed", {{"inputs", long_ids}, {"truncation_direction", "Left"}});
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<int32_t> last(long_ids.end() - 32, long_ids.end());
  ExpectVector(json::parse(r->body)[0], ExpectedOfIds(*reference_, last, true));

  const int32_t unknown = tokenizer.vocab_size();
  r = server_->Post("/embed", {{"inputs", json::array({json(ids), json::array({5, unknown})})}});
  EXPECT_EQ(r->status, 422) << r->body;
  EXPECT_EQ(json::parse(r->body)["error_type"], "Validation") << r->body;
  r = server_->Post("/v1/embeddings", {{"input", {5, unknown}}});
  EXPECT_EQ(r->status, 422) << r->body;
  EXPECT_EQ(json::parse(r->body)["code"], 422) << r->body;
  r = server_->Post("/embed_all", {{"inputs", {5, unknown}}});
  EXPECT_EQ(r->status, 422) << r->body;
}

TEST_F(EmbeddingRoutesTest, OpenAiEmbeddingsInFloatAndBase64) {
  const std::string a = testing::Words(6, 3);
  httplib::Result r = server_->Post("/v1/embeddings", {{"input", {a}}, {"model", "small"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json got = json::parse(r->body);
  EXPECT_EQ(got["object"], "list");
  EXPECT_EQ(got["model"], "small");
  EXPECT_EQ(got["data"][0]["object"], "embedding");
  EXPECT_EQ(got["data"][0]["index"], 0);
  EXPECT_GT(got["usage"]["prompt_tokens"].get<int>(), 2);
  const std::vector<float> want = Expected(*reference_, a, true, 0);
  ExpectVector(got["data"][0]["embedding"], want);
  r = server_->Post("/embeddings", {{"input", a}, {"encoding_format", "base64"}});
  ASSERT_EQ(r->status, 200) << r->body;
  std::string bytes;
  ASSERT_TRUE(absl::Base64Unescape(
      json::parse(r->body)["data"][0]["embedding"].get<std::string>(), &bytes));
  ASSERT_EQ(bytes.size(), want.size() * sizeof(float));
  std::vector<float> decoded(want.size());
  std::memcpy(decoded.data(), bytes.data(), bytes.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(decoded[k], want[k], 1e-5f);
}

TEST_F(EmbeddingRoutesTest, EmbedAllSimilarityAndOtherKindsRoutes) {
  const std::string a = testing::Words(4, 1), b = testing::Words(7, 4);
  httplib::Result r = server_->Post("/embed_all", {{"inputs", a}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json tokens = json::parse(r->body);
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_GE(tokens[0].size(), 3u);  // [CLS] ... [SEP]
  EXPECT_EQ(tokens[0][0].size(), 32u);
  r = server_->Post("/similarity", {{"inputs", {{"source_sentence", a}, {"sentences", {a, b}}}}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json cosines = json::parse(r->body);
  ASSERT_EQ(cosines.size(), 2u);
  EXPECT_NEAR(cosines[0].get<float>(), 1.0f, 1e-5f);
  EXPECT_LT(cosines[1].get<float>(), 1.0f);
  EXPECT_EQ(server_->Post("/predict", {{"inputs", a}})->status, 400);
  EXPECT_EQ(server_->Post("/rerank", {{"query", a}, {"texts", {b}}})->status, 400);
  const json info = json::parse(server_->client->Get("/info")->body);
  EXPECT_EQ(info["model_type"]["embedding"]["pooling"], "mean");
}

// /tokenize answers the model's own ids (Encode's) with each token's bytes of the input, and
// /decode reads them back.
TEST_F(EmbeddingRoutesTest, TokenizeAndDecodeUseTheModelsTokenizer) {
  const std::string text = testing::Words(6, 2);
  httplib::Result r = server_->Post("/tokenize", {{"inputs", {text}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json tokens = json::parse(r->body);
  ASSERT_EQ(tokens.size(), 1u);
  const tokenize::Tokenizer& tokenizer = reference_->model().tokenizer;
  tokenize::EncodeOptions whole;
  whole.max_length = 0;
  const std::vector<int32_t> ids = tokenizer.Encode(text, whole)->ids;
  ASSERT_EQ(tokens[0].size(), ids.size());
  std::vector<uint32_t> content;
  for (size_t i = 0; i < ids.size(); ++i) {
    const json& t = tokens[0][i];
    EXPECT_EQ(t["id"].get<int32_t>(), ids[i]);
    const bool special = i == 0 || i + 1 == ids.size();
    EXPECT_EQ(t["special"].get<bool>(), special);
    if (special) {
      EXPECT_TRUE(t["start"].is_null());
      continue;
    }
    const size_t start = t["start"].get<size_t>(), stop = t["stop"].get<size_t>();
    EXPECT_EQ(t["text"].get<std::string>(), text.substr(start, stop - start));
    content.push_back(t["id"].get<uint32_t>());
  }
  r = server_->Post("/decode", {{"ids", content}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)[0].get<std::string>(), text);
  EXPECT_EQ(server_->Post("/decode", {{"ids", {1u << 30}}})->status, 422);
  EXPECT_EQ(server_->Post("/tokenize", {{"inputs", text}, {"prompt_name", "query"}})->status, 422);
}

TEST(RerankRoutesTest, RerankSortsByScoreAndRootRoutesThere) {
  tokenize::Tokenizer tokenizer = testing::SmallTokenizer();
  const models::EncoderConfig config = testing::SmallConfig(tokenizer.vocab_size(), 1);
  at::manual_seed(13);
  model_files::LoadedModel m{config, models::EncoderClassifier(config), std::move(tokenizer),
                             *corpus::LabelMap::FromNames({"relevance"}), true, ""};
  std::unique_ptr<InferenceEngine> engine = *InferenceEngine::Create(std::move(m));
  ASSERT_EQ(engine->kind(), ModelKind::kReranker);
  ServerInfo info;
  info.kind = "reranker";
  info.labels = {"relevance"};
  RunningServer server(std::move(engine), info);
  std::vector<std::string> texts;
  for (int i = 0; i < 5; ++i) texts.push_back(testing::Words(2 + 3 * i, i));
  for (const char* path : {"/rerank", "/"}) {
    httplib::Result r = server.Post(path, {{"query", "good film"}, {"texts", texts},
                                           {"return_text", true}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json ranks = json::parse(r->body);
    ASSERT_EQ(ranks.size(), texts.size());
    std::vector<int> seen;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const float score = ranks[i]["score"].get<float>();
      EXPECT_GT(score, 0.0f);
      EXPECT_LT(score, 1.0f);  // a sigmoid
      if (i > 0) {
        EXPECT_LE(score, ranks[i - 1]["score"].get<float>());
      }
      const int index = ranks[i]["index"].get<int>();
      EXPECT_EQ(ranks[i]["text"], texts[index]);
      seen.push_back(index);
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));
  }
  httplib::Result raw = server.Post("/rerank", {{"query", "good film"}, {"texts", texts},
                                                {"raw_scores", true}});
  ASSERT_EQ(raw->status, 200) << raw->body;
  EXPECT_EQ(server.Post("/embed", {{"inputs", "good film"}})->status, 400);
  EXPECT_EQ(server.Post("/rerank", {{"query", "good film"}, {"texts", json::array()}})->status,
            400);
}

}  // namespace
}  // namespace padless::serve::http
