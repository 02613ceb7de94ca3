// The engine's three model kinds (issue 44): what Load and Create pick, embeddings pooled on the
// device inside the varlen forward (checked against each text's own token vectors, pooled here
// by hand), the [CLS]-rows shortcut against the full last layer, a one-label head's sigmoid,
// RequestHandle::OnDone, and FinishEmbedding.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "padless/models/sentence_pooling.h"
#include "padless/serve/inference_engine.h"
#include "serve_fixtures.h"

namespace padless::serve {
namespace {

using models::SentencePooling;

constexpr int64_t kWidth = 32;  // SmallConfig's hidden size

std::unique_ptr<InferenceEngine> LoadEmbedder(const std::string& dir, SentencePooling pooling) {
  EngineOptions options;
  options.pooling = pooling;
  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine = InferenceEngine::Load(dir, options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? *std::move(engine) : nullptr;
}

EngineRequest TextRequest(std::string text, bool tokens) {
  EngineRequest r;
  r.text = std::move(text);
  r.token_embeddings = tokens;
  return r;
}

// The pooling of one text's [tokens, kWidth] rows, written out as sentence-transformers does.
std::vector<float> PoolByHand(const std::vector<float>& rows, int64_t tokens,
                              SentencePooling mode) {
  std::vector<double> out(kWidth, mode == SentencePooling::kMax ? -1e30 : 0.0);
  double weights = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    const double w = mode == SentencePooling::kWeightedMean ? static_cast<double>(t + 1) : 1.0;
    weights += w;
    for (int64_t k = 0; k < kWidth; ++k) {
      const double v = rows[t * kWidth + k];
      if (mode == SentencePooling::kMax) {
        out[k] = std::max(out[k], v);
      } else {
        out[k] += w * v;
      }
    }
  }
  const int64_t pick = mode == SentencePooling::kLastToken ? tokens - 1 : 0;
  std::vector<float> result(kWidth);
  for (int64_t k = 0; k < kWidth; ++k) {
    switch (mode) {
      case SentencePooling::kCls:
      case SentencePooling::kLastToken:
        result[k] = rows[pick * kWidth + k];
        break;
      case SentencePooling::kMax:
        result[k] = static_cast<float>(out[k]);
        break;
      case SentencePooling::kMeanSqrtLen:
        result[k] = static_cast<float>(out[k] / std::sqrt(static_cast<double>(tokens)));
        break;
      case SentencePooling::kMean:
      case SentencePooling::kWeightedMean:
        result[k] = static_cast<float>(out[k] / weights);
        break;
    }
  }
  return result;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], tolerance) << "at " << k;
}

class EmbeddingEngineTest : public ::testing::TestWithParam<SentencePooling> {
 protected:
  static void SetUpTestSuite() { dir_ = new std::string(testing::WriteSmallModelDir("embed")); }
  static void TearDownTestSuite() { delete dir_; }
  static std::string* dir_;
};
std::string* EmbeddingEngineTest::dir_ = nullptr;

TEST_P(EmbeddingEngineTest, PoolsEachTextsOwnTokensInOneVarlenBatch) {
  std::unique_ptr<InferenceEngine> engine = LoadEmbedder(*dir_, GetParam());
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->kind(), ModelKind::kEmbedding);
  ASSERT_NE(engine->embedding_info(), nullptr);
  EXPECT_EQ(engine->embedding_info()->pooling, GetParam());
  EXPECT_EQ(engine->embedding_info()->dimension, kWidth);
  std::vector<EngineRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(TextRequest(testing::Words(1 + 4 * i, i), true));
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> results = engine->Run(requests);
  ASSERT_TRUE(results.ok()) << results.status();
  std::vector<std::vector<float>> seen;
  for (const absl::StatusOr<EngineResult>& r : *results) {
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(static_cast<int64_t>(r->embedding.size()), kWidth);
    ASSERT_EQ(static_cast<int64_t>(r->token_embeddings.size()), r->tokens * kWidth);
    EXPECT_TRUE(r->probabilities.empty());
    ExpectNear(r->embedding, PoolByHand(r->token_embeddings, r->tokens, GetParam()), 1e-5f);
    seen.push_back(r->embedding);
  }
  EXPECT_NE(seen[0], seen[1]);  // texts differ, so must their vectors
}

TEST_P(EmbeddingEngineTest, AnswersAloneAsInACrowd) {
  std::unique_ptr<InferenceEngine> engine = LoadEmbedder(*dir_, GetParam());
  ASSERT_NE(engine, nullptr);
  const EngineRequest mine = TextRequest(testing::Words(7, 2), false);
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> alone =
      engine->Run(absl::MakeConstSpan(&mine, 1));
  std::vector<EngineRequest> crowd;
  for (int i = 0; i < 9; ++i) crowd.push_back(TextRequest(testing::Words(2 + 3 * i, 5 + i), false));
  crowd.insert(crowd.begin() + 4, mine);
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> together = engine->Run(crowd);
  ASSERT_TRUE(alone.ok() && together.ok());
  ASSERT_TRUE((*alone)[0].ok() && (*together)[4].ok());
  ExpectNear((*together)[4]->embedding, (*alone)[0]->embedding, 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(EveryPooling, EmbeddingEngineTest,
                         ::testing::Values(SentencePooling::kCls, SentencePooling::kMean,
                                           SentencePooling::kMax, SentencePooling::kLastToken,
                                           SentencePooling::kWeightedMean,
                                           SentencePooling::kMeanSqrtLen));

// [CLS] pooling without token vectors takes the encoder's shortcut (its last layer for the first
// rows alone); with them, the full last layer. Both must give the same vector.
TEST(EmbeddingEngineKindTest, ClsShortcutMatchesTheFullLastLayer) {
  const std::string dir = testing::WriteSmallModelDir("embed_cls");
  std::unique_ptr<InferenceEngine> engine = LoadEmbedder(dir, SentencePooling::kCls);
  ASSERT_NE(engine, nullptr);
  const std::vector<EngineRequest> requests = {TextRequest(testing::Words(9, 1), false),
                                               TextRequest(testing::Words(9, 1), true)};
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> r = engine->Run(requests);
  ASSERT_TRUE(r.ok() && (*r)[0].ok() && (*r)[1].ok());
  EXPECT_TRUE((*r)[0]->token_embeddings.empty());
  ExpectNear((*r)[0]->embedding, (*r)[1]->embedding, 1e-5f);
}

TEST(EmbeddingEngineKindTest, ClassifierDirectoryStaysAClassifierWithoutPooling) {
  const std::string dir = testing::WriteSmallModelDir("embed_kind");
  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine = InferenceEngine::Load(dir);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((*engine)->kind(), ModelKind::kClassifier);
  EXPECT_EQ((*engine)->embedding_info(), nullptr);
  EXPECT_EQ(ModelKindName((*engine)->kind()), "classifier");
  EXPECT_EQ(ModelKindName(ModelKind::kReranker), "reranker");
  EXPECT_EQ(ModelKindName(ModelKind::kEmbedding), "embedding");
}

// A one-label head is a cross-encoder: served as a reranker, its probability the sigmoid of its
// score (a softmax over one label would be 1 for every pair).
TEST(EmbeddingEngineKindTest, OneLabelHeadIsARerankerScoredBySigmoid) {
  tokenize::Tokenizer tokenizer = testing::SmallTokenizer();
  const models::EncoderConfig config = testing::SmallConfig(tokenizer.vocab_size(), 1);
  at::manual_seed(11);
  model_files::LoadedModel m{config, models::EncoderClassifier(config), std::move(tokenizer),
                             *corpus::LabelMap::FromNames({"relevance"}),
                             /*head_from_checkpoint=*/true, /*new_head_reason=*/""};
  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine = InferenceEngine::Create(std::move(m));
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((*engine)->kind(), ModelKind::kReranker);
  std::vector<EngineRequest> pairs(3);
  for (int i = 0; i < 3; ++i) {
    pairs[i].text = "good film";
    pairs[i].pair = testing::Words(3 + 5 * i, i);
  }
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> r = (*engine)->Run(pairs);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> scores;
  for (const absl::StatusOr<EngineResult>& e : *r) {
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_EQ(e->scores.size(), 1u);
    ASSERT_EQ(e->probabilities.size(), 1u);
    EXPECT_NEAR(e->probabilities[0], 1.0 / (1.0 + std::exp(-e->scores[0])), 1e-6);
    scores.push_back(e->scores[0]);
  }
  EXPECT_NE(scores[0], scores[1]);
}

TEST(EmbeddingEngineKindTest, OnDoneRunsOnceAfterEveryResult) {
  const std::string dir = testing::WriteSmallModelDir("embed_done");
  std::unique_ptr<InferenceEngine> engine = LoadEmbedder(dir, SentencePooling::kMean);
  ASSERT_NE(engine, nullptr);
  std::vector<EngineRequest> requests;
  for (int i = 0; i < 5; ++i) requests.push_back(TextRequest(testing::Words(3 + i, i), false));
  absl::StatusOr<RequestHandle> handle = engine->Submit(requests);
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::atomic<int> calls{0};
  std::atomic<bool> all_set{false};
  RequestHandle* h = &*handle;
  handle->OnDone([&] {
    all_set = h->WaitFor(std::chrono::nanoseconds(0));
    calls.fetch_add(1);
  });
  const std::vector<absl::StatusOr<EngineResult>> results = handle->Wait();
  ASSERT_EQ(results.size(), 5u);
  // Wait() may return before OnDone's callback has finished on the completion thread.
  for (int i = 0; i < 1000 && calls.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(all_set.load());
  // On a handle whose results are all set, it runs at once, on this thread.
  RequestHandle empty;
  int now = 0;
  empty.OnDone([&] { ++now; });
  EXPECT_EQ(now, 1);
}

TEST(FinishEmbeddingTest, TruncatesThenNormalizes) {
  std::vector<float> v = {3, 4, 12, 0};
  ASSERT_TRUE(FinishEmbedding(v, /*normalize=*/true, /*dimensions=*/2).ok());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NEAR(v[0], 0.6f, 1e-7);
  EXPECT_NEAR(v[1], 0.8f, 1e-7);
  std::vector<float> w = {3, 4, 12};
  ASSERT_TRUE(FinishEmbedding(w, /*normalize=*/false, /*dimensions=*/0).ok());
  EXPECT_EQ(w, (std::vector<float>{3, 4, 12}));
  std::vector<float> zero(4, 0.0f);
  ASSERT_TRUE(FinishEmbedding(zero, /*normalize=*/true, 0).ok());
  EXPECT_EQ(zero, std::vector<float>(4, 0.0f));
  std::vector<float> x = {1, 2};
  const absl::Status too_wide = FinishEmbedding(x, true, 3);
  EXPECT_EQ(too_wide.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(too_wide.message(), "dimensions")) << too_wide;
  EXPECT_EQ(FinishEmbedding(x, true, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(x, (std::vector<float>{1, 2}));  // a refused request changes nothing
}

}  // namespace
}  // namespace padless::serve
