// ModernBERT on the GPU (issue 45): the varlen flash path with its sliding windows
// (_flash_attention_forward's window_size_left/right, and its backward through autograd) under
// bf16 autocast against the fp32 CPU reference (one SDPA call per sequence with a band mask):
// logits within 2e-2 and every gradient within 5e-2 relative to its largest entry, on sequences of
// 1 to 300 tokens against a +-8 window. Skips without a CUDA device.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "batch_factory.h"
#include "gpu_test_util.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"

namespace padless::models::modernbert_gpu_test {
namespace {

using testing::ChangeRuntime;
using testing::GpuModernBertConfig;
using testing::HasCuda;
using testing::MakePadded;
using testing::MakeVarlen;
using testing::RandomSequences;
using testing::Sequences;
using testing::ToDevice;

struct Step {
  at::Tensor logits;
  std::vector<std::pair<std::string, at::Tensor>> grads;
};

Step RunStep(EncoderClassifier& model, const batching::Batch& b, bool autocast) {
  model->zero_grad();
  Step r;
  {
    AutocastGuard guard(c10::DeviceType::CUDA, at::kBFloat16, autocast);
    r.logits = model->forward(b).to(at::kFloat).cpu();
    ClassificationLoss(r.logits, b.labels.cpu()).backward();
  }
  for (const auto& p : model->named_parameters()) {
    r.grads.emplace_back(p.key(), p.value().grad().to(at::kFloat).cpu());
  }
  return r;
}

double Relative(const at::Tensor& got, const at::Tensor& want) {
  return (got - want).abs().max().item<double>() / std::max(want.abs().max().item<double>(), 1e-6);
}

void ExpectClose(const Step& got, const Step& want) {
  EXPECT_LT(Relative(got.logits, want.logits), 2e-2);
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (size_t i = 0; i < got.grads.size(); ++i) {
    EXPECT_LT(Relative(got.grads[i].second, want.grads[i].second), 5e-2) << got.grads[i].first;
  }
}

TEST(ModernBertGpuTest, FlashWindowsMatchTheCpuReference) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(45);
  EncoderClassifier cpu(GpuModernBertConfig());
  cpu->eval();
  const Sequences s = RandomSequences(45, 12, 1, 300, 1000, 3);
  ChangeRuntime(cpu, [](ModelRuntime& r) { r.attention = AttentionBackend::kVarlenReference; });
  const Step want = RunStep(cpu, MakeVarlen(s), /*autocast=*/false);

  at::manual_seed(45);
  EncoderClassifier gpu(GpuModernBertConfig());
  gpu->to(at::kCUDA);
  gpu->eval();
  const at::Device cuda(at::kCUDA);
  const batching::Batch varlen = ToDevice(MakeVarlen(s), cuda);
  {
    AutocastGuard guard(c10::DeviceType::CUDA, at::kBFloat16);
    EXPECT_EQ(gpu->ResolveBackend(varlen),
              AutoHalfPrecisionVarlenBackend(gpu->Fa3RunsCalls(cuda, at::kBFloat16),
                                             varlen.real_tokens, varlen.num_sequences));
  }
  ExpectClose(RunStep(gpu, varlen, /*autocast=*/true), want);
  // Padded rows on the dense backend (SDPA with the band and padding mask) under autocast.
  ExpectClose(RunStep(gpu, ToDevice(MakePadded(s), cuda), /*autocast=*/true), want);
  // fp32 on the GPU: no windowed memory-efficient kernel, so the grouped backend.
  EXPECT_EQ(gpu->ResolveBackend(varlen), AttentionBackend::kVarlenGrouped);
  ExpectClose(RunStep(gpu, varlen, /*autocast=*/false), want);
}

// Flash applies the window: the same model with windows wider than every sequence differs.
TEST(ModernBertGpuTest, FlashWindowIsNotIgnored) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(46);
  EncoderClassifier narrow(GpuModernBertConfig());
  at::manual_seed(46);
  EncoderClassifier wide(GpuModernBertConfig().local_attention(4096));
  for (EncoderClassifier* m : {&narrow, &wide}) {
    (*m)->to(at::kCUDA);
    (*m)->eval();
  }
  const batching::Batch b =
      ToDevice(MakeVarlen(RandomSequences(46, 4, 100, 200, 1000, 3)), at::Device(at::kCUDA));
  at::NoGradGuard no_grad;
  AutocastGuard guard(c10::DeviceType::CUDA, at::kBFloat16);
  const at::Tensor a = narrow->forward(b).to(at::kFloat);
  const at::Tensor c = wide->forward(b).to(at::kFloat);
  EXPECT_GT((a - c).abs().max().item<double>(), 1e-2);
}

}  // namespace
}  // namespace padless::models::modernbert_gpu_test
