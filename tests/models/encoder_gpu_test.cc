// GPU only (skips without CUDA): the varlen flash path against the dense-mask path in bf16,
// checkpointing through flash attention under autocast (every policy), and what each policy keeps
// in GPU memory.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "batch_factory.h"
#include "gpu_test_util.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_layer.h"

namespace padless::models {
namespace {

using testing::ChangeRuntime;
using testing::GpuTestConfig;
using testing::HasCuda;
using testing::MakePacked;
using testing::MakeVarlen;
using testing::RandomSequences;
using testing::ToDevice;

TEST(EncoderGpuTest, VarlenFlashMatchesDenseMaskInBf16) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(31);
  EncoderClassifier model(GpuTestConfig(0.0));
  model->to(at::Device(at::kCUDA));
  model->train();
  const auto s = RandomSequences(7, 32, 8, 300, 1000, 2);
  const batching::Batch packed = ToDevice(MakePacked(s, 512), at::Device(at::kCUDA));
  const batching::Batch varlen = ToDevice(MakeVarlen(s), at::Device(at::kCUDA));
  AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
  // Flash, or FA3 where it runs (the sequences average more than kFa3MinMeanTokens).
  ASSERT_EQ(model->ResolveBackend(packed),
            AutoHalfPrecisionVarlenBackend(model->Fa3RunsCalls(packed.input_ids.device(),
                                                               at::kBFloat16),
                                           packed.real_tokens, packed.num_sequences));

  ChangeRuntime(model, [&](ModelRuntime& r) { r.attention = AttentionBackend::kDense; });
  const at::Tensor dense = model->forward(packed).to(at::kFloat);
  ChangeRuntime(model, [&](ModelRuntime& r) { r.attention = AttentionBackend::kVarlenFlash; });
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

// fp32 on a GPU (no autocast): varlen rows go to the memory-efficient kernel, which agrees with
// the per-sequence reference to fp32 rounding, logits and gradients (flash would run in bf16).
TEST(EncoderGpuTest, VarlenEfficientMatchesReferenceInFp32) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(32);
  EncoderClassifier model(GpuTestConfig(0.0));
  model->to(at::Device(at::kCUDA));
  model->train();
  const batching::Batch b =
      ToDevice(MakeVarlen(RandomSequences(9, 24, 8, 300, 1000, 2)), at::Device(at::kCUDA));
  ASSERT_EQ(model->ResolveBackend(b), AttentionBackend::kVarlenEfficient);
  auto run = [&](AttentionBackend backend) {
    ChangeRuntime(model, [&](ModelRuntime& r) { r.attention = backend; });
    model->zero_grad(/*set_to_none=*/true);
    const at::Tensor logits = model->forward(b);
    ClassificationLoss(logits, b.labels).backward();
    std::vector<at::Tensor> r = {logits.detach()};
    for (const at::Tensor& p : model->parameters()) r.push_back(p.grad().clone());
    return r;
  };
  const std::vector<at::Tensor> reference = run(AttentionBackend::kVarlenReference);
  const std::vector<at::Tensor> efficient = run(AttentionBackend::kVarlenEfficient);
  ASSERT_EQ(reference.size(), efficient.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    const double scale = std::max(1e-3, reference[i].abs().max().item<double>());
    EXPECT_LE((reference[i] - efficient[i]).abs().max().item<double>(), 1e-4 * scale) << i;
  }
  // A bf16 computation would miss the tolerance by far: the check can fail.
  ChangeRuntime(model, [&](ModelRuntime& r) { r.attention = AttentionBackend::kVarlenFlash; });
  const at::Tensor flash = model->forward(b).detach();
  EXPECT_GT((reference[0] - flash).abs().max().item<double>(),
            1e-4 * reference[0].abs().max().item<double>());
}

// Dense attention stays off cuDNN by default (a plan per shape) and gives LibTorch's process-wide
// switch back as it found it, either way; with the runtime option on, the results agree.
TEST(EncoderGpuTest, DenseAttentionLeavesTheCudnnSwitchAsFound) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(35);
  EncoderClassifier model(GpuTestConfig(0.0));
  model->to(at::Device(at::kCUDA));
  model->eval();
  const batching::Batch b =
      ToDevice(MakePacked(RandomSequences(6, 32, 8, 200, 1000, 2), 256), at::Device(at::kCUDA));
  AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
  ChangeRuntime(model, [&](ModelRuntime& r) { r.attention = AttentionBackend::kDense; });
  const bool found = at::globalContext().userEnabledCuDNNSDP();
  for (bool setting : {true, false}) {
    at::globalContext().setSDPUseCuDNN(setting);
    const at::Tensor off = model->forward(b).to(at::kFloat);
    EXPECT_EQ(at::globalContext().userEnabledCuDNNSDP(), setting);
    ChangeRuntime(model, [&](ModelRuntime& r) { r.dense_attention_cudnn = true; });
    const at::Tensor allowed = model->forward(b).to(at::kFloat);
    ChangeRuntime(model, [&](ModelRuntime& r) { r.dense_attention_cudnn = false; });
    EXPECT_LE((off - allowed).abs().max().item<double>(), 2e-2);
  }
  at::globalContext().setSDPUseCuDNN(found);
}

class GpuCheckpointTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuCheckpointTest, CheckpointingThroughFlashMatches) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(32);
  EncoderClassifier model(GpuTestConfig(0.1));
  // Both runs store the residual stream alike (by default only checkpointing makes it bf16), and
  // both run the generic layers (block-scoped policies checkpoint generic layers; the fused
  // layer's own recompute is compared in fused_layer_test.cc).
  ChangeRuntime(model, [&](ModelRuntime& r) { r.activation_memory = ActivationMemory::kLean; });
  ChangeRuntime(model, [&](ModelRuntime& r) { r.fused_layers = false; });
  model->to(at::Device(at::kCUDA));
  model->train();
  const batching::Batch b =
      ToDevice(MakePacked(RandomSequences(8, 16, 8, 200, 1000, 2), 512), at::Device(at::kCUDA));
  auto step = [&](CheckpointPolicy policy) {
    ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = policy; });
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
  EncoderLayer layer(GpuTestConfig(0.0), 0);
  layer->to(gpu);
  {
    at::NoGradGuard no_grad;
    for (at::Tensor w : layer->weights()) w.add_(at::randn_like(w) * 0.1);
  }
  const std::vector<at::Tensor>& w = layer->weights();
  LayerSpec spec;
  spec.head_dim = GpuTestConfig(0.0).head_dim();
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
// RNG states live on the host): what a forward pass leaves on the GPU (logits alive, no backward)
// grows by T * H * 2 bytes per layer.
//
// How it is measured, and why:
// - The first forward of a process allocates lazily and keeps for good: cuBLAS / cuBLASLt
//   workspaces (32 MiB per handle and stream on Hopper) and other library state. ctest runs every
//   test in its own process, so this test's first forward is the process's first: an earlier
//   version, which measured (retained(6) - retained(2)) / 4 with no warm-up, booked one ~34 MB
//   workspace allocation as ~8.5 MB "per layer" on the H200. Every configuration is therefore run
//   once unmeasured before it is measured, and the one-time bytes are printed.
// - The cache is emptied before each measured run so every run starts from the same allocator
//   state and splits its blocks alike.
// - The caching allocator hands out a whole free block when splitting it would leave 1 MiB or
//   less (kSmallSize), so one retained boundary may count up to 1 MiB more than asked for; blocks
//   kept once per model (embeddings, pooling) may differ by as much between two layer counts.
//   Hence the tolerance: kSlack per layer, plus kSlack per difference spread over its layers.
// - fp32 boundaries would add one more boundary per layer; the shapes make a boundary larger than
//   the whole tolerance, so that case fails. A run without autocast measures exactly that case
//   (the positive control); a run without dropout shows whether dropout state is kept.
TEST(EncoderGpuTest, CheckpointBoundariesAreBf16) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  constexpr int64_t kSlack = 1 << 20;
  const at::Device gpu(at::kCUDA);
  cuda::MemoryMeter meter(gpu);
  const auto s = RandomSequences(9, 64, 64, 300, 1000, 2);
  const batching::Batch b = ToDevice(MakeVarlen(s), gpu);
  const int64_t tokens = b.input_ids.size(0);
  const int64_t boundary = tokens * GpuTestConfig(0.0).hidden() * 2;
  // fp32 boundaries under autocast would add a boundary per layer: more than the upper tolerance.
  ASSERT_GT(boundary, 4 * kSlack) << "tokens " << tokens << ": too few to tell fp32 from bf16";

  struct Retained {
    int64_t allocated = 0;
    int64_t active = 0;
  };
  auto retained = [&](int64_t layers, bool fused, bool bf16, double dropout) {
    at::manual_seed(33);
    EncoderClassifier model(GpuTestConfig(dropout).layers(layers));
    ChangeRuntime(model, [&](ModelRuntime& r) { r.fused_layers = fused; });
    model->to(gpu);
    model->train();
    ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = CheckpointPolicy::All(); });
    torch::cuda::synchronize();
    meter.EmptyCache();
    const cuda::MemorySnapshot before = meter.Snapshot();
    at::Tensor logits;
    {
      AutocastGuard autocast(at::kCUDA, at::kBFloat16, bf16);  // its weight-cast cache dies with it
      logits = model->forward(b);
    }
    torch::cuda::synchronize();
    const cuda::MemorySnapshot after = meter.Snapshot();
    EXPECT_TRUE(logits.requires_grad());
    return Retained{after.allocated_bytes - before.allocated_bytes,
                    after.active_bytes - before.active_bytes};
  };

  // Both layer implementations (fused_layer.h and per-op autograd) keep one boundary per layer;
  // fp32 without autocast runs the generic path (flash needs bf16).
  struct Case {
    const char* name;
    bool fused;
    bool bf16;
    double dropout;
    int64_t bytes_per_element;  // of a boundary
  };
  const Case cases[] = {{"fused, bf16 autocast, dropout 0.1", true, true, 0.1, 2},
                        {"fused, bf16 autocast, no dropout", true, true, 0.0, 2},
                        {"generic, bf16 autocast, dropout 0.1", false, true, 0.1, 2},
                        {"fp32 (no autocast), dropout 0.1", true, false, 0.1, 4}};
  const int64_t layer_counts[] = {2, 4, 6};
  struct Check {
    std::string what;
    int64_t per_layer, expected, low, high;
  };
  std::vector<Check> checks;
  std::ostringstream report;
  report << "tokens " << tokens << ", bf16 boundary [T, H] " << boundary << " bytes, slack "
         << kSlack << "\n";
  for (const Case& c : cases) {
    // warm-up: one-time allocations
    const Retained first = retained(2, c.fused, c.bf16, c.dropout);
    std::vector<Retained> r;
    for (int64_t layers : layer_counts) r.push_back(retained(layers, c.fused, c.bf16, c.dropout));
    report << c.name << ": one-time bytes of the first forward " << first.allocated - r[0].allocated
           << "; retained allocated/active by layers:";
    for (size_t i = 0; i < r.size(); ++i) {
      report << " " << layer_counts[i] << "L " << r[i].allocated << "/" << r[i].active;
    }
    report << "; per layer:";
    const int64_t expected = boundary / 2 * c.bytes_per_element;
    for (size_t i = 1; i < r.size(); ++i) {
      const int64_t span = layer_counts[i] - layer_counts[i - 1];
      const int64_t per_layer = (r[i].allocated - r[i - 1].allocated) / span;
      report << " " << layer_counts[i - 1] << "->" << layer_counts[i] << "L " << per_layer << " ("
             << static_cast<double>(per_layer) / (tokens * GpuTestConfig(0.0).hidden())
             << " bytes per [T, H] element)";
      checks.push_back({std::string(c.name) + ", " + std::to_string(layer_counts[i - 1]) + "->" +
                            std::to_string(layer_counts[i]) + " layers",
                        per_layer, expected, expected - kSlack / span,
                        expected + kSlack + kSlack / span});
    }
    report << "\n";
  }
  SCOPED_TRACE(report.str());
  for (const Check& c : checks) {
    EXPECT_GE(c.per_layer, c.low) << c.what << ": expected " << c.expected << " per layer";
    EXPECT_LE(c.per_layer, c.high) << c.what << ": expected " << c.expected << " per layer";
  }
}

// Peak GPU memory of one training step: every selective policy sits between none and all.
TEST(EncoderGpuTest, PolicyPeaksAreOrdered) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  const at::Device gpu(at::kCUDA);
  cuda::MemoryMeter meter(gpu);
  at::manual_seed(34);
  EncoderClassifier model(GpuTestConfig(0.1).layers(6));
  model->to(gpu);
  model->train();
  const batching::Batch b = ToDevice(MakeVarlen(RandomSequences(10, 48, 64, 500, 1000, 2)), gpu);
  auto peak = [&](const std::string& policy) {
    ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = *CheckpointPolicy::Parse(policy); });
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
