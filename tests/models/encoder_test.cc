// The encoder gives the same logits, loss and gradients whichever layout carries the sequences:
// padded rows with a padding mask, packed rows with a block-diagonal mask, or the varlen layout.
#include "padless/models/encoder.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "batch_factory.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder_layer.h"

namespace padless::models {
namespace {

using testing::ChangeRuntime;
using testing::ExpectSameStep;
using testing::MakePacked;
using testing::MakePadded;
using testing::MakeVarlen;
using testing::MaxDiff;
using testing::RandomSequences;
using testing::RunStep;
using testing::Sequences;
using testing::StepResult;

EncoderConfig SmallConfig(Pooling pooling, bool pre_ln) {
  return EncoderConfig()
      .vocab_size(50)
      .hidden(32)
      .layers(2)
      .heads(4)
      .ffn(64)
      .max_positions(64)
      .num_labels(3)
      .dropout(0.0)
      .attention_dropout(0.0)
      .pooling(pooling)
      .pre_ln(pre_ln);
}

class LayoutEquivalenceTest : public ::testing::TestWithParam<std::tuple<Pooling, bool>> {};

TEST_P(LayoutEquivalenceTest, PackedAndVarlenMatchPadded) {
  const auto [pooling, pre_ln] = GetParam();
  at::manual_seed(11);
  EncoderClassifier model(SmallConfig(pooling, pre_ln));
  model->train();
  const Sequences s = RandomSequences(/*seed=*/5, /*n=*/9, /*min_len=*/2, /*max_len=*/20, 50, 3);

  const StepResult padded = RunStep(model, MakePadded(s));
  ASSERT_TRUE(std::isfinite(padded.loss.item<double>()));

  // Packed on CPU fp32 -> dense mask.
  ChangeRuntime(model, [&](ModelRuntime& r) { r.attention = AttentionBackend::kAuto; });
  const batching::Batch packed = MakePacked(s, /*row_length=*/32);
  ASSERT_EQ(model->ResolveBackend(packed), AttentionBackend::kDense);
  ASSERT_LT(packed.input_ids.size(0), 9) << "rows must hold several sequences";
  ExpectSameStep(padded, RunStep(model, packed), 1e-5);

  // The varlen reference, from a flat batch, from packed rows and from padded rows.
  // The same for the grouped backend (the CPU's default for varlen batches).
  for (AttentionBackend varlen :
       {AttentionBackend::kVarlenReference, AttentionBackend::kVarlenGrouped}) {
    SCOPED_TRACE(AttentionBackendName(varlen));
    ChangeRuntime(model, [&](ModelRuntime& r) { r.attention = varlen; });
    ExpectSameStep(padded, RunStep(model, MakeVarlen(s)), 1e-5);
    ExpectSameStep(padded, RunStep(model, packed), 1e-5);
    ExpectSameStep(padded, RunStep(model, MakePadded(s)), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(PoolingAndNorm, LayoutEquivalenceTest,
                         ::testing::Combine(::testing::Values(Pooling::kCls, Pooling::kMean),
                                            ::testing::Bool()));

TEST(AttentionBackendTest, NamesRoundTripAndUnknownNamesAreListed) {
  for (AttentionBackend b :
       {AttentionBackend::kAuto, AttentionBackend::kDense, AttentionBackend::kVarlenFlash,
        AttentionBackend::kVarlenEfficient, AttentionBackend::kVarlenReference,
        AttentionBackend::kVarlenGrouped, AttentionBackend::kVarlenCudnn,
        AttentionBackend::kVarlenFa3}) {
    absl::StatusOr<AttentionBackend> parsed = ParseAttentionBackend(AttentionBackendName(b));
    ASSERT_TRUE(parsed.ok()) << AttentionBackendName(b);
    EXPECT_EQ(*parsed, b);
  }
  EXPECT_TRUE(IsVarlen(AttentionBackend::kVarlenEfficient));
  EXPECT_TRUE(IsVarlen(AttentionBackend::kVarlenGrouped));
  EXPECT_TRUE(IsVarlen(AttentionBackend::kVarlenFa3));
  EXPECT_FALSE(IsVarlen(AttentionBackend::kDense));
  const absl::StatusOr<AttentionBackend> bad = ParseAttentionBackend("fast");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("efficient"), std::string::npos) << bad.status();
}

// kAuto on a GPU in half precision: FA3 from a mean of kFa3MinMeanTokens real tokens a sequence
// where it runs, FA2 below it, where it does not run, and for a batch without sequences.
TEST(EncoderTest, AutoPicksFa3ForLongEnoughSequencesWhereItRuns) {
  constexpr int64_t kMin = kFa3MinMeanTokens;
  EXPECT_EQ(AutoHalfPrecisionVarlenBackend(true, kMin * 10, 10), AttentionBackend::kVarlenFa3);
  EXPECT_EQ(AutoHalfPrecisionVarlenBackend(true, 65536, 120), AttentionBackend::kVarlenFa3);
  EXPECT_EQ(AutoHalfPrecisionVarlenBackend(true, kMin * 10 - 1, 10),
            AttentionBackend::kVarlenFlash);
  EXPECT_EQ(AutoHalfPrecisionVarlenBackend(true, 25 * 1000, 1000), AttentionBackend::kVarlenFlash);
  EXPECT_EQ(AutoHalfPrecisionVarlenBackend(false, 65536, 120), AttentionBackend::kVarlenFlash);
  EXPECT_EQ(AutoHalfPrecisionVarlenBackend(true, 0, 0), AttentionBackend::kVarlenFlash);
  EXPECT_EQ(AutoHalfPrecisionVarlenBackend(true, 4096, 0), AttentionBackend::kVarlenFlash);
  // Never on the CPU, whatever the model.
  EncoderClassifier model(EncoderConfig::Tiny());
  model->eval();
  EXPECT_FALSE(model->Fa3RunsCalls(at::Device(at::kCPU), at::kBFloat16));
}

TEST(EncoderTest, PaddingTokensDoNotChangeLogits) {
  for (Pooling pooling : {Pooling::kCls, Pooling::kMean}) {
    at::manual_seed(3);
    EncoderClassifier model(SmallConfig(pooling, false));
    model->eval();
    const Sequences s = RandomSequences(8, 6, 1, 15, 50, 3);
    batching::Batch padded = MakePadded(s);
    batching::Batch packed = MakePacked(s, 24);
    const at::Tensor base_padded = model->forward(padded);
    const at::Tensor base_packed = model->forward(packed);
    // Poison every padding slot with real-looking token ids.
    padded.input_ids.masked_fill_(padded.attention_mask.logical_not(), 17);
    packed.input_ids.masked_fill_(packed.attention_mask.logical_not(), 17);
    EXPECT_LE(MaxDiff(base_padded, model->forward(padded)), 1e-6);
    EXPECT_LE(MaxDiff(base_packed, model->forward(packed)), 1e-6);
  }
}

TEST(EncoderTest, PackedSequencesDoNotSeeTheirRowNeighbours) {
  for (Pooling pooling : {Pooling::kCls, Pooling::kMean}) {
    at::manual_seed(4);
    EncoderClassifier model(SmallConfig(pooling, false));
    model->eval();
    Sequences s = RandomSequences(9, 4, 5, 5, 50, 3);
    const at::Tensor before = model->forward(MakePacked(s, 20));  // all four in one row
    ASSERT_EQ(MakePacked(s, 20).input_ids.size(0), 1);
    for (int64_t& t : s.tokens[2]) t = (t % 40) + 5;  // change only sequence 2
    const at::Tensor after = model->forward(MakePacked(s, 20));
    for (int64_t i : {0, 1, 3}) EXPECT_LE(MaxDiff(before[i], after[i]), 1e-6) << i;
    EXPECT_GT(MaxDiff(before[2], after[2]), 1e-4);
  }
}

TEST(EncoderTest, MeanPoolingAveragesOnlyTheSequencesOwnTokens) {
  at::manual_seed(5);
  EncoderClassifier model(SmallConfig(Pooling::kMean, false).layers(1));
  model->eval();
  const Sequences s = RandomSequences(10, 5, 1, 12, 50, 3);
  const at::Tensor pooled = model->Encode(MakePacked(s, 16));
  // Each sequence alone (its own batch, no padding at all) pools to the same vector.
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    Sequences one;
    one.tokens = {s.tokens[i]};
    one.labels = {0};
    EXPECT_LE(MaxDiff(pooled[i], model->Encode(MakePadded(one))[0]), 1e-5) << i;
  }
}

TEST(EncoderTest, CheckBatchRejectsTooLongSequences) {
  EncoderClassifier model(SmallConfig(Pooling::kCls, false).max_positions(8));
  const Sequences s = RandomSequences(1, 2, 9, 9, 50, 3);
  const absl::Status status = model->CheckBatch(MakePacked(s, 20));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find("max_positions"), std::string::npos);
  EXPECT_TRUE(model->CheckBatch(MakePacked(RandomSequences(1, 2, 8, 8, 50, 3), 20)).ok());
}

// The FFN block keeps only gelu's input and recomputes gelu in backward; outputs and gradients
// must equal those of the plain ops, in fp32 and under bf16 autocast, for both GELU forms.
class FfnBlockTest : public ::testing::TestWithParam<std::tuple<Activation, bool>> {};

TEST_P(FfnBlockTest, MatchesPlainOps) {
  const auto [activation, autocast_on] = GetParam();
  at::manual_seed(41);
  const EncoderConfig config =
      EncoderConfig().hidden(32).heads(4).ffn(96).dropout(0).activation(activation);
  EncoderLayer layer(config, 0);
  // Non-zero biases and norm parameters, so that every gradient is exercised.
  {
    at::NoGradGuard no_grad;
    for (at::Tensor w : layer->weights()) w.add_(at::randn_like(w) * 0.1);
  }
  LayerSpec spec;
  spec.head_dim = 8;
  spec.activation = activation;
  const at::Tensor h0 = at::randn({3, 7, 32});
  const std::vector<at::Tensor>& w = layer->weights();
  auto run = [&](bool plain) {
    for (at::Tensor p : layer->parameters()) p.mutable_grad() = at::Tensor();
    const at::Tensor h = h0.clone().requires_grad_(true);
    at::Tensor out;
    {
      AutocastGuard autocast(at::kCPU, at::kBFloat16, autocast_on);
      if (plain) {
        const char* approximate = activation == Activation::kGeluTanh ? "tanh" : "none";
        at::Tensor f = at::linear(h, w[kFfnInWeight], w[kFfnInBias]);
        f = at::linear(at::gelu(f, approximate), w[kFfnOutWeight], w[kFfnOutBias]);
        const at::Tensor sum = autocast_on ? h.to(at::kFloat) + f : h + f;
        out = ToResidualStream(
            at::layer_norm(sum, {32}, w[kFfnNormWeight], w[kFfnNormBias], spec.eps));
      } else {
        out = FfnBlockForward(h, w, spec);
      }
    }
    // A fixed, non-uniform upstream gradient.
    (out.to(at::kFloat) * at::linspace(-1, 1, 32)).sum().backward();
    std::vector<at::Tensor> grads = {out.detach().to(at::kFloat), h.grad()};
    for (int i : {kFfnInWeight, kFfnInBias, kFfnOutWeight, kFfnOutBias, kFfnNormWeight}) {
      grads.push_back(w[i].grad());
    }
    return grads;
  };
  const std::vector<at::Tensor> plain = run(true);
  const std::vector<at::Tensor> fused = run(false);
  const double tolerance = autocast_on ? 2e-2 : 1e-5;
  for (size_t i = 0; i < plain.size(); ++i) {
    ASSERT_TRUE(fused[i].defined()) << i;
    EXPECT_EQ(fused[i].scalar_type(), plain[i].scalar_type()) << i;
    const double scale = plain[i].abs().max().item<double>();
    ASSERT_GT(scale, 0) << i;
    EXPECT_LE((plain[i] - fused[i]).abs().max().item<double>(), tolerance * scale) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(GeluForms, FfnBlockTest,
                         ::testing::Combine(::testing::Values(Activation::kGelu,
                                                              Activation::kGeluTanh),
                                            ::testing::Bool()));

TEST(EncoderTest, FreezingStopsGradients) {
  at::manual_seed(6);
  EncoderClassifier model(SmallConfig(Pooling::kCls, false));
  model->FreezeEmbeddings(true);
  model->FreezeLayersBelow(1);
  const Sequences s = RandomSequences(2, 4, 3, 9, 50, 3);
  const batching::Batch b = MakePadded(s);
  ClassificationLoss(model->forward(b), b.labels).backward();
  for (const auto& p : model->named_parameters()) {
    const bool frozen =
        p.key().find("embedding") != std::string::npos || p.key().rfind("layer0.", 0) == 0;
    EXPECT_EQ(p.value().grad().defined(), !frozen) << p.key();
  }
}

}  // namespace
}  // namespace padless::models
