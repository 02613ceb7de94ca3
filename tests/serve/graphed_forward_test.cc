// CUDA graphs in the engine (serve/graphed_forward.h): a replay equals the eager forward of the
// same batch within bf16 rounding, for [CLS] and mean pooling, at bucket edges, after batches that
// left other tokens in the bucket; so does an embedding model's (encoder, every sentence pooling,
// a Dense module), its outputs poisoned before each checked replay; batches no bucket holds (too
// many sequences, token types) are left to the eager forward; the engine counts graphed batches
// and gives the same answers with graphs on and off (classifiers and embedding models, whose
// token-vector requests run eagerly); graphs capture the attention backend the options chose, and
// those that plan on the host run without graphs; options are checked. The replay cases need a
// GPU and skip without one.
#include "graphed_forward.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device_worker.h"
#include "embedding_head.h"
#include "engine_options.h"
#include "padless/batching/collator.h"
#include "padless/cuda/kernels/cudnn_attention.h"
#include "padless/model_files/model_io.h"
#include "padless/models/attention.h"
#include "padless/models/sentence_pooling.h"
#include "padless/serve/inference_engine.h"
#include "serve_fixtures.h"

namespace padless::serve {
namespace {

using internal::DeviceWorker;
using internal::GraphedForward;
using internal::ScoreBatch;
using models::SentencePooling;

// One request through the engine, as its own submission.
absl::StatusOr<EngineResult> ClassifyOne(InferenceEngine& engine, const EngineRequest& r) {
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> got =
      engine.Run(absl::MakeConstSpan(&r, 1));
  if (!got.ok()) return got.status();
  return std::move((*got)[0]);
}

// Sequences of the given lengths with seeded random ids as one kVarlen batch on the GPU, as the
// batch former builds it (token types with `types`).
batching::Batch RandomBatch(const std::vector<int64_t>& lengths, int64_t vocab, uint64_t seed,
                            bool types = false) {
  at::manual_seed(seed);
  std::vector<tokenize::Encoding> encodings(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    at::Tensor ids = at::randint(vocab, {lengths[i]}, at::kInt);
    encodings[i].ids.assign(ids.data_ptr<int32_t>(), ids.data_ptr<int32_t>() + lengths[i]);
    if (types) encodings[i].type_ids.assign(lengths[i], 1);
  }
  std::vector<const tokenize::Encoding*> sequences;
  for (const tokenize::Encoding& e : encodings) sequences.push_back(&e);
  batching::CollatorOptions options;
  options.pin_memory = true;
  return batching::Collator(options).CollateVarlen(sequences, types)->To(at::Device(at::kCUDA));
}

class GraphedForwardTest : public ::testing::TestWithParam<models::Pooling> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
    config_ = testing::SmallConfig(/*vocab=*/90, /*labels=*/3).pooling(GetParam());
    at::manual_seed(11);
    model_ = models::EncoderClassifier(config_);
    model_->to(at::Device(at::kCUDA));
    model_->eval();
    model_->PrepareInference(at::kBFloat16);
  }

  // Graphs of buckets up to `max_tokens` for sequences of up to 32 tokens; null (and a failure)
  // when the capture fails.
  std::unique_ptr<GraphedForward> Capture(int64_t max_tokens) {
    GraphedForward::Options options;
    options.max_tokens = max_tokens;
    options.max_len = 32;
    absl::StatusOr<std::unique_ptr<GraphedForward>> graphs = GraphedForward::Capture(
        DeviceWorker::CapturableForward(model_.get(), nullptr, at::kCUDA, models::AmpMode::kBf16),
        at::Device(at::kCUDA), options);
    EXPECT_TRUE(graphs.ok()) << graphs.status();
    return graphs.ok() ? *std::move(graphs) : nullptr;
  }

  // The device worker's eager forward, the function each graph captured.
  at::Tensor Eager(const batching::Batch& b) {
    return ScoreBatch(*model_, b, at::kCUDA, models::AmpMode::kBf16).logits;
  }

  // A replay of `lengths`, checked against the eager forward; false when no bucket held it.
  bool ReplayMatches(GraphedForward& graphs, const std::vector<int64_t>& lengths, uint64_t seed) {
    const batching::Batch b = RandomBatch(lengths, config_.vocab_size(), seed);
    std::optional<GraphedForward::Result> r;
    {
      c10::InferenceMode inference;
      r = graphs.Run(b, lengths);
    }
    if (!r.has_value()) return false;
    const at::Tensor want = Eager(b).cpu();
    const at::Tensor got = (*r)[0].cpu();
    const at::Tensor probabilities = (*r)[1].cpu();
    EXPECT_EQ(got.sizes(), want.sizes());
    // bf16 logits: the replay computes B rows where the eager forward computes T, and cuBLAS may
    // pick other kernels for them; the model's logits are O(1).
    EXPECT_LT((got - want).abs().max().item<double>(), 3e-2) << "lengths[0] " << lengths[0];
    EXPECT_LT((probabilities - at::softmax(want, 1)).abs().max().item<double>(), 1e-2);
    EXPECT_TRUE(at::isfinite(got).all().item<bool>());
    return true;
  }

  models::EncoderConfig config_;
  models::EncoderClassifier model_{nullptr};
};

TEST_P(GraphedForwardTest, ReplaysMatchTheEagerForward) {
  const std::unique_ptr<GraphedForward> graphs = Capture(512);
  ASSERT_NE(graphs, nullptr);
  EXPECT_EQ(graphs->BucketTokens(), (std::vector<int64_t>{128, 256, 512}));
  // Largest first, so later batches run over tokens earlier ones left in the buckets.
  EXPECT_TRUE(ReplayMatches(*graphs, std::vector<int64_t>(31, 16), 1));  // 496 tokens: 512
  EXPECT_TRUE(ReplayMatches(*graphs, {32, 32, 32, 32}, 2));              // 128 tokens: 256
  EXPECT_TRUE(ReplayMatches(*graphs, {32, 32, 32, 31}, 3));              // 127: bucket 128
  EXPECT_TRUE(ReplayMatches(*graphs, {30, 2, 17}, 4));
  EXPECT_TRUE(ReplayMatches(*graphs, {5}, 5));
  EXPECT_TRUE(ReplayMatches(*graphs, {2, 2, 2, 2, 2, 2, 2, 2}, 6));    // the 128 bucket's capacity
  EXPECT_TRUE(ReplayMatches(*graphs, std::vector<int64_t>(9, 2), 7));  // 9 > 8: the 256 bucket
  EXPECT_TRUE(ReplayMatches(*graphs, {5}, 5));                         // the same again
  // No bucket: more tokens than the largest holds, or more sequences.
  EXPECT_FALSE(ReplayMatches(*graphs, std::vector<int64_t>(16, 32), 8));  // 512 tokens
  EXPECT_FALSE(ReplayMatches(*graphs, std::vector<int64_t>(33, 3), 9));   // 33 > 32 sequences
}

TEST_P(GraphedForwardTest, PairsWithTokenTypesRunEagerly) {
  const std::unique_ptr<GraphedForward> graphs = Capture(256);
  ASSERT_NE(graphs, nullptr);
  const batching::Batch b = RandomBatch({6, 9}, config_.vocab_size(), 3, /*types=*/true);
  c10::InferenceMode inference;
  EXPECT_FALSE(graphs->Run(b, std::vector<int64_t>{6, 9}).has_value());
}

INSTANTIATE_TEST_SUITE_P(Poolings, GraphedForwardTest,
                         ::testing::Values(models::Pooling::kCls, models::Pooling::kMean));

// An embedding model's graphs: the forward DeviceWorker::CapturableForward builds from an
// EmbeddingHead (the encoder, models::PoolSequences over the bucket's padded cu_seqlens, a Dense
// module), against EmbedBatch run eagerly on the batch itself.
struct EmbeddingCase {
  SentencePooling pooling;
  bool cls_rows_only;  // the head's [CLS] shortcut: the last layer on the first rows alone
};

class GraphedEmbeddingTest : public ::testing::TestWithParam<EmbeddingCase> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
    // The model's own pooling is [CLS], so that the head may take the shortcut.
    config_ = testing::SmallConfig(/*vocab=*/90, /*labels=*/3).pooling(models::Pooling::kCls);
    at::manual_seed(12);
    model_ = models::EncoderClassifier(config_);
    model_->to(at::Device(at::kCUDA));
    model_->eval();
    model_->PrepareInference(at::kBFloat16);
    head_ = internal::PoolingOnlyHead(config_, GetParam().pooling);
    head_.cls_rows_only = GetParam().cls_rows_only;
    const at::TensorOptions fp32 = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
    internal::DenseWeights dense;
    dense.weight = at::randn({24, config_.hidden()}, fp32) * 0.2;
    dense.bias = at::randn({24}, fp32) * 0.1;
    dense.activation = model_files::DenseActivation::kTanh;
    head_.dense.push_back(dense);
    head_.info.dimension = 24;
  }

  std::unique_ptr<GraphedForward> Capture(int64_t max_tokens) {
    GraphedForward::Options options;
    options.max_tokens = max_tokens;
    options.max_len = 32;
    absl::StatusOr<std::unique_ptr<GraphedForward>> graphs = GraphedForward::Capture(
        DeviceWorker::CapturableForward(model_.get(), &head_, at::kCUDA, models::AmpMode::kBf16),
        at::Device(at::kCUDA), options);
    EXPECT_TRUE(graphs.ok()) << graphs.status();
    return graphs.ok() ? *std::move(graphs) : nullptr;
  }

  // Replays `lengths` once, fills the rows that replay wrote with NaN, replays again and checks
  // the second replay's vectors against the eager forward; false when no bucket held the batch.
  bool ReplayMatches(GraphedForward& graphs, const std::vector<int64_t>& lengths, uint64_t seed) {
    const batching::Batch b = RandomBatch(lengths, config_.vocab_size(), seed);
    c10::InferenceMode inference;
    std::optional<GraphedForward::Result> first = graphs.Run(b, lengths);
    if (!first.has_value()) return false;
    for (at::Tensor& t : *first) t.fill_(std::numeric_limits<float>::quiet_NaN());
    const std::optional<GraphedForward::Result> r = graphs.Run(b, lengths);
    EXPECT_TRUE(r.has_value());
    if (!r.has_value()) return false;
    const at::Tensor got = (*r)[0].cpu();
    const at::Tensor want =
        internal::EmbedBatch(*model_, b, head_, at::kCUDA, models::AmpMode::kBf16, false)
            .embeddings.cpu();
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_EQ(got.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::isfinite(got).all().item<bool>()) << "lengths[0] " << lengths[0];
    // bf16 hidden states, B rows against T (as for the classifier above); the vectors are tanh'd.
    EXPECT_LT((got - want).abs().max().item<double>(), 3e-2) << "lengths[0] " << lengths[0];
    return true;
  }

  models::EncoderConfig config_;
  models::EncoderClassifier model_{nullptr};
  internal::EmbeddingHead head_;
};

TEST_P(GraphedEmbeddingTest, ReplaysMatchTheEagerForward) {
  const std::unique_ptr<GraphedForward> graphs = Capture(512);
  ASSERT_NE(graphs, nullptr);
  EXPECT_EQ(graphs->BucketTokens(), (std::vector<int64_t>{128, 256, 512}));
  EXPECT_TRUE(ReplayMatches(*graphs, std::vector<int64_t>(31, 16), 1));  // 496 tokens: 512
  EXPECT_TRUE(ReplayMatches(*graphs, {32, 32, 32, 31}, 3));              // 127: bucket 128
  EXPECT_TRUE(ReplayMatches(*graphs, {30, 2, 17}, 4));
  EXPECT_TRUE(ReplayMatches(*graphs, {1, 5, 1}, 5));                      // one-token sequences
  EXPECT_TRUE(ReplayMatches(*graphs, std::vector<int64_t>(9, 2), 7));     // 9 > 8: the 256 bucket
  EXPECT_FALSE(ReplayMatches(*graphs, std::vector<int64_t>(16, 32), 8));  // 512 tokens: eager
}

INSTANTIATE_TEST_SUITE_P(Poolings, GraphedEmbeddingTest,
                         ::testing::Values(EmbeddingCase{SentencePooling::kCls, true},
                                           EmbeddingCase{SentencePooling::kCls, false},
                                           EmbeddingCase{SentencePooling::kMean, false},
                                           EmbeddingCase{SentencePooling::kMax, false},
                                           EmbeddingCase{SentencePooling::kLastToken, false},
                                           EmbeddingCase{SentencePooling::kWeightedMean, false},
                                           EmbeddingCase{SentencePooling::kMeanSqrtLen, false}));

// Through the engine: single texts one at a time replay graphs (bf16 and fp8), and their answers
// equal those of the same engine with graphs off; pairs run eagerly.
TEST(GraphedEngineTest, GraphsOnAndOffGiveTheSameAnswers) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  const std::string dir = testing::WriteSmallModelDir("graphed_engine");
  for (models::AmpMode amp : {models::AmpMode::kBf16, models::AmpMode::kFp8}) {
    EngineOptions on;
    on.device = at::Device(at::kCUDA);
    on.amp = amp;
    EngineOptions off = on;
    off.cuda_graph_max_tokens = 0;
    std::unique_ptr<InferenceEngine> graphed = *InferenceEngine::Load(dir, on);
    std::unique_ptr<InferenceEngine> eager = *InferenceEngine::Load(dir, off);
    EXPECT_EQ(graphed->options().cuda_graph_max_tokens, 4096);
    for (int k = 0; k < 12; ++k) {
      EngineRequest r;
      r.text = testing::Words(1 + 3 * k, k);
      absl::StatusOr<EngineResult> g = ClassifyOne(*graphed, r);
      absl::StatusOr<EngineResult> e = ClassifyOne(*eager, r);
      ASSERT_TRUE(g.ok() && e.ok()) << g.status() << " " << e.status();
      for (size_t j = 0; j < e->probabilities.size(); ++j) {
        EXPECT_NEAR(g->probabilities[j], e->probabilities[j], 1e-2) << "text " << k;
        EXPECT_NEAR(g->scores[j], e->scores[j], 3e-2) << "text " << k;
      }
      EXPECT_EQ(g->tokens, e->tokens);
    }
    EXPECT_EQ(graphed->stats().graphed_batches, graphed->stats().batches);
    EXPECT_EQ(eager->stats().graphed_batches, 0);
    const int64_t before = graphed->stats().graphed_batches;
    EngineRequest pair;
    pair.text = "a good film";
    pair.pair = "not bad";
    ASSERT_TRUE(ClassifyOne(*graphed, pair).ok());
    EXPECT_EQ(graphed->stats().graphed_batches, before);  // a pair: token types, eager
  }
}

// An embedding engine (mean pooling) with graphs on and off: the same vectors, single texts
// graphed, a request for token vectors run eagerly (bf16 and fp8).
TEST(GraphedEngineTest, EmbeddingGraphsOnAndOffGiveTheSameVectors) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  const std::string dir = testing::WriteSmallModelDir("graphed_embedding");
  for (models::AmpMode amp : {models::AmpMode::kBf16, models::AmpMode::kFp8}) {
    EngineOptions on;
    on.device = at::Device(at::kCUDA);
    on.amp = amp;
    on.pooling = SentencePooling::kMean;
    EngineOptions off = on;
    off.cuda_graph_max_tokens = 0;
    std::unique_ptr<InferenceEngine> graphed = *InferenceEngine::Load(dir, on);
    std::unique_ptr<InferenceEngine> eager = *InferenceEngine::Load(dir, off);
    ASSERT_EQ(graphed->kind(), ModelKind::kEmbedding);
    EXPECT_EQ(graphed->options().cuda_graph_max_tokens, 4096);
    for (int k = 0; k < 8; ++k) {
      EngineRequest r;
      r.text = testing::Words(1 + 3 * k, k);
      absl::StatusOr<EngineResult> g = ClassifyOne(*graphed, r);
      absl::StatusOr<EngineResult> e = ClassifyOne(*eager, r);
      ASSERT_TRUE(g.ok() && e.ok()) << g.status() << " " << e.status();
      ASSERT_EQ(g->embedding.size(), e->embedding.size());
      ASSERT_FALSE(e->embedding.empty());
      for (size_t j = 0; j < e->embedding.size(); ++j) {
        EXPECT_NEAR(g->embedding[j], e->embedding[j], 3e-2) << "text " << k << " at " << j;
      }
    }
    EXPECT_EQ(graphed->stats().graphed_batches, graphed->stats().batches);
    EXPECT_EQ(eager->stats().graphed_batches, 0);
    const int64_t before = graphed->stats().graphed_batches;
    EngineRequest tokens;
    tokens.text = testing::Words(5, 1);
    tokens.token_embeddings = true;
    absl::StatusOr<EngineResult> t = ClassifyOne(*graphed, tokens);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_FALSE(t->token_embeddings.empty());
    EXPECT_EQ(graphed->stats().graphed_batches, before);  // token vectors: eager
  }
}

// The chosen attention backend is on the model before the graphs are captured, so replays run
// it: flash and fa3 (FA2 where FA3 is not built or the head dim is not 64) graphed give the
// answers of the eager default.
TEST(GraphedEngineTest, GraphsCaptureTheChosenAttention) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  const std::string dir = testing::WriteSmallModelDir("graphed_attention");
  EngineOptions off;
  off.device = at::Device(at::kCUDA);
  off.amp = models::AmpMode::kBf16;
  off.cuda_graph_max_tokens = 0;
  std::unique_ptr<InferenceEngine> eager = *InferenceEngine::Load(dir, off);
  for (models::AttentionBackend backend :
       {models::AttentionBackend::kVarlenFlash, models::AttentionBackend::kVarlenFa3}) {
    const std::string name = models::AttentionBackendName(backend);
    EngineOptions on = off;
    on.cuda_graph_max_tokens = 4096;
    on.attention = backend;
    std::unique_ptr<InferenceEngine> graphed = *InferenceEngine::Load(dir, on);
    EXPECT_EQ(graphed->model().model->runtime().attention, backend) << name;
    EXPECT_EQ(graphed->options().cuda_graph_max_tokens, 4096) << name;
    for (int k = 0; k < 6; ++k) {
      EngineRequest r;
      r.text = testing::Words(1 + 5 * k, k);
      absl::StatusOr<EngineResult> g = ClassifyOne(*graphed, r);
      absl::StatusOr<EngineResult> e = ClassifyOne(*eager, r);
      ASSERT_TRUE(g.ok() && e.ok()) << name << ": " << g.status() << " " << e.status();
      for (size_t j = 0; j < e->probabilities.size(); ++j) {
        EXPECT_NEAR(g->probabilities[j], e->probabilities[j], 1e-2) << name << " text " << k;
      }
    }
    EXPECT_EQ(graphed->stats().graphed_batches, graphed->stats().batches) << name;
  }
}

// A graph replays what it captured, so the backends that read each batch's offsets on the host
// (dense, grouped, reference) run without graphs; the others keep them; cudnn needs a build with
// it. Options only: no device is touched.
TEST(GraphedEngineTest, HostPlannedAttentionRunsWithoutGraphs) {
  using models::AttentionBackend;
  const models::EncoderConfig config = testing::SmallConfig(/*vocab=*/40, /*labels=*/3);
  for (AttentionBackend backend :
       {AttentionBackend::kAuto, AttentionBackend::kVarlenFlash, AttentionBackend::kVarlenFa3,
        AttentionBackend::kVarlenEfficient, AttentionBackend::kDense,
        AttentionBackend::kVarlenGrouped, AttentionBackend::kVarlenReference}) {
    const std::string name = models::AttentionBackendName(backend);
    EngineOptions o;
    o.device = at::Device(at::kCUDA);
    o.amp = models::AmpMode::kBf16;
    o.attention = backend;
    ASSERT_TRUE(internal::ResolveEngineOptions(config, &o).ok()) << name;
    const bool on_host = backend == AttentionBackend::kDense ||
                         backend == AttentionBackend::kVarlenGrouped ||
                         backend == AttentionBackend::kVarlenReference;
    EXPECT_EQ(o.cuda_graph_max_tokens, on_host ? 0 : 4096) << name;
  }
  EngineOptions cudnn;
  cudnn.device = at::Device(at::kCUDA);
  cudnn.attention = AttentionBackend::kVarlenCudnn;
  const absl::Status s = internal::ResolveEngineOptions(config, &cudnn);
  EXPECT_EQ(s.ok(), cuda::CudnnAttentionBuilt()) << s;
  if (!s.ok()) {
    EXPECT_NE(s.message().find("no cuDNN attention"), std::string::npos) << s;
  }
}

// Off the GPU and in fp32 graphs are off; a negative bound is an error.
TEST(GraphedEngineTest, OptionsResolveAndCheck) {
  const std::string dir = testing::WriteSmallModelDir("graphed_options");
  absl::StatusOr<std::unique_ptr<InferenceEngine>> cpu = InferenceEngine::Load(dir, {});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->options().cuda_graph_max_tokens, 0);
  EngineOptions bad;
  bad.cuda_graph_max_tokens = -1;
  absl::StatusOr<std::unique_ptr<InferenceEngine>> e = InferenceEngine::Load(dir, bad);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
  EXPECT_NE(e.status().message().find("cuda_graph_max_tokens"), std::string::npos);
}

}  // namespace
}  // namespace padless::serve
