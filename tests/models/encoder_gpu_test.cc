// GPU only (skips without CUDA): the varlen flash path against the dense-mask path in bf16,
// checkpointing through flash attention under autocast (every policy), and what each policy keeps
// in GPU memory.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <string>
#include <vector>

#include "batch_factory.h"
#include "padless/cuda/memory_meter.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_layer.h"

namespace padless::models {
namespace {

using testing::MakePacked;
using testing::MakeVarlen;
using testing::RandomSequences;
using testing::ToDevice;

bool HasCuda() {
  return at::globalContext().hasCUDA() && at::detail::getCUDAHooks().deviceCount() > 0;
}

EncoderConfig GpuConfig() {
  return EncoderConfig()
      .vocab_size(1000)
      .hidden(256)
      .layers(4)
      .heads(4)
      .ffn(1024)
      .max_positions(512)
      .dropout(0)
      .attention_dropout(0);
}

TEST(EncoderGpuTest, VarlenFlashMatchesDenseMaskInBf16) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(31);
  EncoderClassifier model(GpuConfig());
  model->to(at::Device(at::kCUDA));
  model->train();
  const auto s = RandomSequences(7, 32, 8, 300, 1000, 2);
  const batching::Batch packed = ToDevice(MakePacked(s, 512), at::Device(at::kCUDA));
  const batching::Batch varlen = ToDevice(MakeVarlen(s), at::Device(at::kCUDA));
  AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
  ASSERT_EQ(model->ResolveBackend(packed), AttentionBackend::kVarlenFlash);

  model->set_attention_backend(AttentionBackend::kDense);
  const at::Tensor dense = model->forward(packed).to(at::kFloat);
  model->set_attention_backend(AttentionBackend::kVarlenFlash);
  const at::Tensor flash_packed = model->forward(packed).to(at::kFloat);
  const at::Tensor flash_varlen = model->forward(varlen).to(at::kFloat);
  EXPECT_LE((dense - flash_packed).abs().max().item<double>(), 2e-2);
  EXPECT_LE((dense - flash_varlen).abs().max().item<double>(), 2e-2);

  // Gradients flow through flash attention.
  model->zero_grad();
  ClassificationLoss(model->forward(packed), packed.labels).backward();
  for (const at::Tensor& p : model->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_TRUE(p.grad().isfinite().all().item<bool>());
  }
}

class GpuCheckpointTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuCheckpointTest, CheckpointingThroughFlashMatches) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(32);
  EncoderClassifier model(GpuConfig().dropout(0.1).attention_dropout(0.1));
  model->to(at::Device(at::kCUDA));
  model->train();
  const batching::Batch b =
      ToDevice(MakePacked(RandomSequences(8, 16, 8, 200, 1000, 2), 512), at::Device(at::kCUDA));
  auto step = [&](CheckpointPolicy policy) {
    model->set_checkpoint_policy(policy);
    model->zero_grad();
    at::manual_seed(77);
    AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
    at::Tensor loss = ClassificationLoss(model->forward(b), b.labels);
    loss.backward();
    std::vector<at::Tensor> grads;
    for (const at::Tensor& p : model->parameters()) grads.push_back(p.grad().clone());
    return std::make_pair(loss.item<double>(), grads);
  };
  const auto plain = step(CheckpointPolicy::None());
  const auto checked = step(*CheckpointPolicy::Parse(GetParam()));
  EXPECT_NEAR(plain.first, checked.first, 1e-6);
  for (size_t i = 0; i < plain.second.size(); ++i) {
    EXPECT_LE((plain.second[i] - checked.second[i]).abs().max().item<double>(), 1e-2) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, GpuCheckpointTest, ::testing::Values("all", "ffn", "attn"));

// The FFN block's own backward (gelu recomputed from its input) against the plain ops on CUDA
// under bf16 autocast: outputs and gradients within bf16 rounding.
TEST(EncoderGpuTest, FfnBlockMatchesPlainOpsUnderAutocast) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  const at::Device gpu(at::kCUDA);
  at::manual_seed(35);
  EncoderLayer layer(GpuConfig());
  layer->to(gpu);
  {
    at::NoGradGuard no_grad;
    for (at::Tensor w : layer->weights()) w.add_(at::randn_like(w) * 0.1);
  }
  const std::vector<at::Tensor>& w = layer->weights();
  LayerSpec spec;
  spec.heads = 4;
  const at::Tensor h0 = at::randn({4096, 256}, at::TensorOptions().device(gpu));
  const at::Tensor upstream = at::randn({4096, 256}, at::TensorOptions().device(gpu));
  auto run = [&](bool plain) {
    for (at::Tensor p : layer->parameters()) p.mutable_grad() = at::Tensor();
    const at::Tensor h = h0.clone().requires_grad_(true);
    at::Tensor out;
    {
      AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
      if (plain) {
        at::Tensor f = at::linear(h, w[kFfnInWeight], w[kFfnInBias]);
        f = at::linear(at::gelu(f), w[kFfnOutWeight], w[kFfnOutBias]);
        out = ToResidualStream(
            at::layer_norm(h + f, {256}, w[kFfnNormWeight], w[kFfnNormBias], spec.eps));
      } else {
        out = FfnBlockForward(h, w, spec);
      }
    }
    (out.to(at::kFloat) * upstream).sum().backward();
    std::vector<at::Tensor> r = {out.detach().to(at::kFloat), h.grad()};
    for (int i : {kFfnInWeight, kFfnInBias, kFfnOutWeight, kFfnOutBias}) r.push_back(w[i].grad());
    return r;
  };
  const std::vector<at::Tensor> plain = run(true);
  const std::vector<at::Tensor> fused = run(false);
  for (size_t i = 0; i < plain.size(); ++i) {
    ASSERT_TRUE(fused[i].defined()) << i;
    const double scale = plain[i].abs().max().item<double>();
    EXPECT_LE((plain[i] - fused[i]).abs().max().item<double>(), 2e-2 * scale) << i;
  }
}

// Under bf16 autocast, checkpointing every layer keeps one bf16 [T, H] boundary per layer (the
// RNG states live on the host), measured as the growth of live GPU bytes from 2 to 6 layers.
TEST(EncoderGpuTest, CheckpointBoundariesAreBf16) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  const at::Device gpu(at::kCUDA);
  cuda::MemoryMeter meter(gpu);
  const auto s = RandomSequences(9, 32, 64, 300, 1000, 2);
  const batching::Batch b = ToDevice(MakeVarlen(s), gpu);
  const int64_t tokens = b.input_ids.size(0);
  auto retained = [&](int64_t layers) {
    at::manual_seed(33);
    EncoderClassifier model(GpuConfig().layers(layers).dropout(0.1).attention_dropout(0.1));
    model->to(gpu);
    model->train();
    model->set_checkpoint_policy(CheckpointPolicy::All());
    torch::cuda::synchronize();
    const int64_t before = meter.Snapshot().allocated_bytes;
    at::Tensor logits;
    {
      AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);  // its weight-cast cache dies with it
      logits = model->forward(b);
    }
    torch::cuda::synchronize();
    return meter.Snapshot().allocated_bytes - before;
  };
  const int64_t per_layer = (retained(6) - retained(2)) / 4;
  const int64_t boundary = tokens * GpuConfig().hidden() * 2;
  EXPECT_GE(per_layer, boundary);
  // The caching allocator may hand out a block up to 1 MiB larger than asked; fp32 boundaries
  // would be 2x.
  EXPECT_LE(per_layer, boundary + (1 << 20)) << "boundary " << boundary;
  EXPECT_GT(boundary, 4 << 20);
}

// Peak GPU memory of one training step: every selective policy sits between none and all.
TEST(EncoderGpuTest, PolicyPeaksAreOrdered) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  const at::Device gpu(at::kCUDA);
  cuda::MemoryMeter meter(gpu);
  at::manual_seed(34);
  EncoderClassifier model(GpuConfig().layers(6).dropout(0.1).attention_dropout(0.1));
  model->to(gpu);
  model->train();
  const batching::Batch b = ToDevice(MakeVarlen(RandomSequences(10, 48, 64, 500, 1000, 2)), gpu);
  auto peak = [&](const std::string& policy) {
    model->set_checkpoint_policy(*CheckpointPolicy::Parse(policy));
    model->zero_grad();
    torch::cuda::synchronize();
    cuda::ScopedPeak region(meter);
    {
      AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
      ClassificationLoss(model->forward(b), b.labels).backward();
    }
    torch::cuda::synchronize();
    region.Stop();
    return region.PeakAllocatedDelta();
  };
  peak("none");  // warm-up: cuBLAS workspaces and gradients exist from here on
  const int64_t none = peak("none");
  const int64_t all = peak("all");
  const int64_t ffn = peak("ffn");
  const int64_t attn = peak("attn");
  EXPECT_LT(all, none / 2) << "none " << none << " all " << all;
  EXPECT_LT(ffn, none) << "ffn " << ffn;
  EXPECT_GT(ffn, all) << "ffn " << ffn;
  EXPECT_LT(attn, none) << "attn " << attn;
  EXPECT_GT(attn, all) << "attn " << attn;
}

}  // namespace
}  // namespace padless::models
