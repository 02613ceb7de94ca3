// GPU only (skips without CUDA): the varlen flash path against the dense-mask path in bf16, and
// checkpointing through flash attention under autocast.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <vector>

#include "batch_factory.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"

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

TEST(EncoderGpuTest, CheckpointingThroughFlashMatches) {
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
  const auto checked = step(CheckpointPolicy::All());
  EXPECT_NEAR(plain.first, checked.first, 1e-6);
  for (size_t i = 0; i < plain.second.size(); ++i) {
    EXPECT_LE((plain.second[i] - checked.second[i]).abs().max().item<double>(), 1e-2) << i;
  }
}

}  // namespace
}  // namespace padless::models
