// Activation checkpointing changes memory, not results: with dropout on, the recompute replays the
// forward's RNG stream, so loss and gradients equal the unchecked run's; and the peak CPU memory,
// counted by the cuda engineer's counting allocator, drops.
#include "padless/models/recompute.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "batch_factory.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_layer.h"

namespace padless::models {
namespace {

using testing::ChangeRuntime;
using testing::MakePacked;
using testing::MakePadded;
using testing::RandomSequences;
using testing::Sequences;

EncoderConfig DropoutConfig() {
  return EncoderConfig()
      .vocab_size(60)
      .hidden(32)
      .layers(4)
      .heads(4)
      .ffn(64)
      .max_positions(64)
      .num_labels(2)
      .dropout(0.2)
      .attention_dropout(0.2);
}

struct Step {
  at::Tensor loss;
  std::vector<at::Tensor> grads;
};

Step TrainStep(EncoderClassifier& model, const batching::Batch& b, uint64_t seed) {
  model->zero_grad();
  at::manual_seed(seed);
  Step s;
  s.loss = ClassificationLoss(model->forward(b), b.labels);
  s.loss.backward();
  for (const at::Tensor& p : model->parameters()) {
    s.grads.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
  }
  return s;
}

TEST(CheckpointPolicyTest, Parses) {
  EXPECT_EQ(CheckpointPolicy::Parse("none")->every, 0);
  EXPECT_EQ(CheckpointPolicy::Parse("all")->every, 1);
  EXPECT_EQ(CheckpointPolicy::Parse("all")->scope, CheckpointScope::kLayer);
  EXPECT_EQ(CheckpointPolicy::Parse("every:3")->every, 3);
  EXPECT_EQ(CheckpointPolicy::Parse("every:3")->scope, CheckpointScope::kLayer);
  EXPECT_EQ(CheckpointPolicy::Parse("ffn")->every, 1);
  EXPECT_EQ(CheckpointPolicy::Parse("ffn")->scope, CheckpointScope::kFfn);
  EXPECT_EQ(CheckpointPolicy::Parse("attn")->scope, CheckpointScope::kAttention);
  EXPECT_EQ(CheckpointPolicy::Parse("attn/every:2")->every, 2);
  EXPECT_EQ(CheckpointPolicy::Parse("attn/every:2")->scope, CheckpointScope::kAttention);
  EXPECT_EQ(CheckpointPolicy::Parse("keep_last:2")->keep_last, 2);
  EXPECT_EQ(CheckpointPolicy::Parse("keep_last:2")->every, 1);
  EXPECT_EQ(CheckpointPolicy::Parse("ffn/keep_last:1")->scope, CheckpointScope::kFfn);
  EXPECT_EQ(CheckpointPolicy::Parse("selective")->scope, CheckpointScope::kSelective);
  EXPECT_EQ(CheckpointPolicy::Parse("selective")->every, 1);
  EXPECT_EQ(CheckpointPolicy::Parse("selective/keep_last:2")->keep_last, 2);
  for (const char* text :
       {"none", "all", "every:3", "keep_last:1", "ffn", "attn", "ffn/every:4", "attn/every:2",
        "ffn/keep_last:3", "selective", "selective/every:2", "selective/keep_last:1"}) {
    EXPECT_EQ(CheckpointPolicy::Parse(text)->ToString(), text);
  }
  for (const char* bad : {"",
                          "every:",
                          "every:0",
                          "every:-1",
                          "some",
                          "every:2x",
                          "ffnx",
                          "ffn/",
                          "ffn/all",
                          "attn/every:0",
                          "ffn:every:2",
                          "all/every:2",
                          "/every:2",
                          "keep_last:0",
                          "keep_last:",
                          "ffn/keep_last:-1",
                          "Keep_last:1",
                          "selective/",
                          "selectivex",
                          "selective/all",
                          "ffn/selective"}) {
    const absl::StatusOr<CheckpointPolicy> p = CheckpointPolicy::Parse(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find(std::string("'") + bad + "'"), std::string::npos);
  }
  const CheckpointPolicy every2{2};
  EXPECT_TRUE(every2.Checkpoints(0, 4));
  EXPECT_FALSE(every2.Checkpoints(1, 4));
  EXPECT_TRUE(every2.Checkpoints(2, 4));
  EXPECT_FALSE(CheckpointPolicy::None().Checkpoints(0, 4));
  const CheckpointPolicy keep2 = *CheckpointPolicy::Parse("keep_last:2");
  EXPECT_TRUE(keep2.Checkpoints(0, 4));
  EXPECT_TRUE(keep2.Checkpoints(1, 4));
  EXPECT_FALSE(keep2.Checkpoints(2, 4));
  EXPECT_FALSE(keep2.Checkpoints(3, 4));
  EXPECT_FALSE(keep2.Checkpoints(0, 2));
  EXPECT_EQ(*CheckpointPolicy::Parse("every:1"), CheckpointPolicy::All());
  EXPECT_NE(*CheckpointPolicy::Parse("ffn"), CheckpointPolicy::All());
}

class CheckpointEquivalenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckpointEquivalenceTest, SameLossAndGradientsWithDropout) {
  at::manual_seed(21);
  EncoderClassifier model(DropoutConfig());
  model->train();
  const Sequences s = RandomSequences(3, 8, 3, 24, 60, 2);
  for (const batching::Batch& b : {MakePadded(s), MakePacked(s, 48)}) {
    ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = CheckpointPolicy::None(); });
    const Step plain = TrainStep(model, b, 99);
    // Dropout is really on: another seed gives another loss.
    const Step other_seed = TrainStep(model, b, 100);
    ASSERT_GT((plain.loss - other_seed.loss).abs().item<double>(), 1e-6);

    ChangeRuntime(model,
                  [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse(GetParam()); });
    const Step checked = TrainStep(model, b, 99);
    EXPECT_LE((plain.loss - checked.loss).abs().item<double>(), 1e-6);
    ASSERT_EQ(plain.grads.size(), checked.grads.size());
    for (size_t i = 0; i < plain.grads.size(); ++i) {
      EXPECT_LE((plain.grads[i] - checked.grads[i]).abs().max().item<double>(), 1e-6) << i;
    }
    // The RNG stream after the step is where it would be without recompute.
    at::manual_seed(5);
    ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = CheckpointPolicy::None(); });
    ClassificationLoss(model->forward(b), b.labels).backward();
    const at::Tensor after_plain = at::rand({4});
    at::manual_seed(5);
    ChangeRuntime(model,
                  [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse(GetParam()); });
    ClassificationLoss(model->forward(b), b.labels).backward();
    EXPECT_TRUE(at::equal(after_plain, at::rand({4})));
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, CheckpointEquivalenceTest,
                         ::testing::Values("all", "every:2", "every:3", "keep_last:1", "ffn",
                                           "attn", "ffn/every:2", "attn/keep_last:2", "selective"));

class CheckpointAutocastTest : public ::testing::TestWithParam<std::string> {};

// The boundaries are bf16 in both paths, so checkpointing still changes nothing.
TEST_P(CheckpointAutocastTest, MatchesUnderCpuAutocast) {
  at::manual_seed(22);
  EncoderClassifier model(DropoutConfig().layers(2));
  // Both runs store the residual stream alike (by default only checkpointing makes it bf16).
  ChangeRuntime(model, [&](ModelRuntime& r) { r.activation_memory = ActivationMemory::kLean; });
  model->train();
  const batching::Batch b = MakePadded(RandomSequences(4, 6, 3, 16, 60, 2));
  Step plain, checked;
  {
    AutocastGuard autocast(at::kCPU, at::kBFloat16);
    plain = TrainStep(model, b, 7);
  }
  ChangeRuntime(model,
                [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse(GetParam()); });
  {
    AutocastGuard autocast(at::kCPU, at::kBFloat16);
    checked = TrainStep(model, b, 7);
  }
  EXPECT_EQ(checked.loss.scalar_type(), at::kFloat);
  EXPECT_LE((plain.loss - checked.loss).abs().item<double>(), 1e-6);
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    ASSERT_TRUE(checked.grads[i].defined()) << i;
    EXPECT_EQ(checked.grads[i].scalar_type(), at::kFloat) << i;
    EXPECT_LE((plain.grads[i] - checked.grads[i]).abs().max().item<double>(), 1e-6) << i;
  }
}

// kAuto: lean activations (bf16 residual stream under autocast) exactly when a layer is
// checkpointed; without checkpointing the stream stays fp32, as kFast keeps it.
TEST(ActivationMemoryTest, AutoIsLeanExactlyWhenCheckpointing) {
  using Mode = ActivationMemory;
  const batching::Batch b = MakePadded(RandomSequences(4, 6, 3, 16, 60, 2));
  auto loss = [&](Mode mode, const char* policy) {
    at::manual_seed(23);
    EncoderClassifier model(DropoutConfig().layers(2));
    ChangeRuntime(model, [&](ModelRuntime& r) { r.activation_memory = mode; });
    ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse(policy); });
    model->train();
    AutocastGuard autocast(at::kCPU, at::kBFloat16);
    return TrainStep(model, b, 7).loss.item<double>();
  };
  const double auto_none = loss(Mode::kAuto, "none"), fast_none = loss(Mode::kFast, "none");
  const double lean_none = loss(Mode::kLean, "none");
  EXPECT_EQ(auto_none, fast_none);
  EXPECT_NE(auto_none, lean_none);  // the bf16 stream rounds: the knob does something
  EXPECT_EQ(loss(Mode::kAuto, "all"), loss(Mode::kLean, "all"));
  EXPECT_NEAR(lean_none, fast_none, 5e-2);
}

INSTANTIATE_TEST_SUITE_P(Policies, CheckpointAutocastTest,
                         ::testing::Values("all", "ffn", "attn", "every:2"));

TEST(ResidualStreamTest, AutocastDtypeOnlyUnderAutocast) {
  at::manual_seed(25);
  EncoderLayer layer(DropoutConfig().dropout(0).attention_dropout(0), 0);
  LayerSpec spec;
  spec.head_dim = 8;
  AttentionContext ctx;
  ctx.mask = at::ones({2, 1, 1, 5}, at::kBool);
  const at::Tensor x = at::randn({2, 5, 32});
  const at::Tensor fp32 = EncoderLayerForward(x, layer->weights(), spec, ctx);
  EXPECT_EQ(fp32.scalar_type(), at::kFloat);
  EXPECT_TRUE(ToResidualStream(x).is_same(x));
  AutocastGuard autocast(at::kCPU, at::kBFloat16);
  EXPECT_EQ(ToResidualStream(x).scalar_type(), at::kBFloat16);
  const at::Tensor h = AttentionBlockForward(x, layer->weights(), spec, ctx);
  EXPECT_EQ(h.scalar_type(), at::kBFloat16);
  const at::Tensor bf16 = FfnBlockForward(h, layer->weights(), spec);
  EXPECT_EQ(bf16.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(bf16, EncoderLayerForward(x, layer->weights(), spec, ctx)));
  // Post-LN output: unit-scale values, so bf16's 8 mantissa bits bound the difference.
  EXPECT_LE((bf16.to(at::kFloat) - fp32).abs().max().item<double>(), 0.1);
  EXPECT_GT((bf16.to(at::kFloat) - fp32).abs().max().item<double>(), 0.0);
}

// What checkpointing every layer keeps after forward: one boundary per layer, [T, H] in the
// autocast dtype under autocast (2 bytes) and in fp32 without it (4 bytes). Measured as the
// growth of the live bytes from 2 to 6 layers, so that embeddings, pooling and head cancel out.
class BoundaryBytesTest : public ::testing::TestWithParam<bool> {};

TEST_P(BoundaryBytesTest, OneBoundaryPerLayerInTheStreamDtype) {
  const bool autocast_on = GetParam();
  cuda::MemoryMeter meter(at::Device(at::kCPU));  // installs the counting allocator first
  constexpr int64_t kSeqs = 16, kLen = 128, kHidden = 64;
  const batching::Batch b = MakePadded(RandomSequences(26, kSeqs, kLen, kLen, 60, 2));
  auto retained = [&](int64_t layers) {
    at::manual_seed(27);
    EncoderClassifier model(
        DropoutConfig().layers(layers).hidden(kHidden).ffn(128).max_positions(kLen));
    model->train();
    ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = CheckpointPolicy::All(); });
    const int64_t before = meter.Snapshot().allocated_bytes;
    at::Tensor logits;
    {
      // The guard's weight-cast cache is cleared on exit: only the graph's saved tensors remain.
      AutocastGuard autocast(at::kCPU, at::kBFloat16, autocast_on);
      logits = model->forward(b);
    }
    EXPECT_TRUE(logits.requires_grad());
    return meter.Snapshot().allocated_bytes - before;
  };
  const int64_t per_layer = (retained(6) - retained(2)) / 4;
  const int64_t boundary = kSeqs * kLen * kHidden * (autocast_on ? 2 : 4);
  // Besides the boundary, each checkpoint keeps its RNG state (about 5 KB for the CPU stream).
  EXPECT_GE(per_layer, boundary);
  EXPECT_LE(per_layer, boundary + 16 * 1024);
}

INSTANTIATE_TEST_SUITE_P(Autocast, BoundaryBytesTest, ::testing::Bool());

TEST(CheckpointTest, FrozenLayersStillCheckpoint) {
  at::manual_seed(23);
  EncoderClassifier model(DropoutConfig().dropout(0).attention_dropout(0));
  model->FreezeEmbeddings(true);
  model->FreezeLayersBelow(2);
  const batching::Batch b = MakePadded(RandomSequences(5, 4, 3, 10, 60, 2));
  const Step plain = TrainStep(model, b, 1);
  ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = CheckpointPolicy::All(); });
  model->zero_grad();
  const at::Tensor loss = ClassificationLoss(model->forward(b), b.labels);
  loss.backward();
  EXPECT_LE((plain.loss - loss).abs().item<double>(), 1e-6);
  size_t i = 0;
  for (const at::Tensor& p : model->parameters()) {
    EXPECT_EQ(p.grad().defined(), p.requires_grad());
    if (p.grad().defined()) {
      EXPECT_LE((plain.grads[i] - p.grad()).abs().max().item<double>(), 1e-6);
    }
    ++i;
  }
}

// The FFN block keeps gelu's input but not its output: exactly one [T, ffn] tensor less than
// the plain ops keep until backward.
TEST(FfnMemoryTest, KeepsOneFfnWideTensorLessThanPlainOps) {
  cuda::MemoryMeter meter(at::Device(at::kCPU));
  at::manual_seed(28);
  constexpr int64_t kTokens = 512, kHidden = 32, kFfn = 128;
  EncoderLayer layer(DropoutConfig().hidden(kHidden).ffn(kFfn).dropout(0), 0);
  const std::vector<at::Tensor>& w = layer->weights();
  LayerSpec spec;
  spec.head_dim = 8;
  const at::Tensor h = at::randn({kTokens, kHidden}).requires_grad_(true);
  auto retained = [&](bool plain) {
    const int64_t before = meter.Snapshot().allocated_bytes;
    at::Tensor out;
    if (plain) {
      at::Tensor f = at::linear(h, w[kFfnInWeight], w[kFfnInBias]);
      f = at::linear(at::gelu(f), w[kFfnOutWeight], w[kFfnOutBias]);
      out = at::layer_norm(h + f, {kHidden}, w[kFfnNormWeight], w[kFfnNormBias], spec.eps);
    } else {
      out = FfnBlockForward(h, w, spec);
    }
    EXPECT_TRUE(out.requires_grad());
    return meter.Snapshot().allocated_bytes - before;
  };
  const int64_t plain = retained(true);
  const int64_t fused = retained(false);
  EXPECT_EQ(plain - fused, kTokens * kFfn * 4) << "plain " << plain << " fused " << fused;
}

// Peak bytes the counting CPU allocator saw during one forward + backward.
int64_t PeakOfStep(EncoderClassifier& model, const batching::Batch& b, cuda::MemoryMeter& meter) {
  model->zero_grad();
  cuda::ScopedPeak peak(meter);
  ClassificationLoss(model->forward(b), b.labels).backward();
  peak.Stop();
  return peak.PeakAllocatedDelta();
}

TEST(CheckpointTest, LowersPeakCpuMemory) {
  cuda::MemoryMeter meter(at::Device(at::kCPU));  // installs the counting allocator first
  at::manual_seed(24);
  EncoderClassifier model(DropoutConfig().layers(6).hidden(64).ffn(256).max_positions(128));
  model->train();
  const batching::Batch b = MakePadded(RandomSequences(6, 16, 100, 128, 60, 2));
  PeakOfStep(model, b, meter);  // warm-up: gradient buffers exist from here on
  const int64_t none = PeakOfStep(model, b, meter);
  ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = CheckpointPolicy::All(); });
  const int64_t all = PeakOfStep(model, b, meter);
  ChangeRuntime(model,
                [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse("every:2"); });
  const int64_t every2 = PeakOfStep(model, b, meter);
  ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse("ffn"); });
  const int64_t ffn = PeakOfStep(model, b, meter);
  ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse("attn"); });
  const int64_t attn = PeakOfStep(model, b, meter);
  ChangeRuntime(model,
                [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse("keep_last:1"); });
  const int64_t keep1 = PeakOfStep(model, b, meter);
  ChangeRuntime(model,
                [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse("keep_last:3"); });
  const int64_t keep3 = PeakOfStep(model, b, meter);
  ASSERT_GT(none, 0) << "the counting allocator saw nothing";
  EXPECT_LT(all, none * 6 / 10) << "none " << none << " all " << all;
  EXPECT_LT(every2, none);
  EXPECT_LT(all, every2);
  // Each block policy keeps the other block's activations: between none and all.
  EXPECT_LT(ffn, none) << "ffn " << ffn;
  EXPECT_GT(ffn, all) << "ffn " << ffn;
  EXPECT_LT(attn, none) << "attn " << attn;
  EXPECT_GT(attn, all) << "attn " << attn;
  // Backward starts with the last layer: keeping its activations replaces their recompute.
  EXPECT_LE(keep1, all + all / 50) << "keep_last:1 " << keep1;
  EXPECT_GT(keep3, keep1) << "keep_last:3 " << keep3;
  EXPECT_LT(keep3, none) << "keep_last:3 " << keep3;
}

}  // namespace
}  // namespace padless::models
