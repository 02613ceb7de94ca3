// Frozen-encoder feature extraction (issue 14): with the embeddings and every layer frozen, a
// training step keeps no activations of the encoder (autograd records nothing for ops whose
// inputs need no gradient), so its peak memory is a small fraction of full fine-tuning's. Measured
// with the counting CPU allocator on a MiniLM-shaped encoder (6 layers, hidden 384); the numbers
// are printed for the report. Its own binary: the counting allocator is process-wide.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "batch_factory.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/models/encoder.h"

namespace padless::models {
namespace {

// Peak bytes allocated above the start during forward + backward of one batch.
int64_t StepPeak(EncoderClassifier& model, const batching::Batch& batch) {
  cuda::MemoryMeter meter(c10::kCPU);
  cuda::ScopedPeak peak(meter);
  at::Tensor loss = ClassificationLoss(model->forward(batch), batch.labels);
  loss.backward();
  peak.Stop();
  for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
  return peak.PeakAllocatedDelta();
}

TEST(FrozenMemoryTest, FrozenEncoderKeepsNoActivations) {
  at::manual_seed(1);
  const EncoderConfig config = EncoderConfig()
                                   .vocab_size(30522)
                                   .hidden(384)
                                   .heads(12)
                                   .ffn(1536)
                                   .layers(6)
                                   .max_positions(512)
                                   .classifier_hidden(ClassifierHidden::kTanh);
  EncoderClassifier model(config);
  model->train();
  const testing::Sequences s = testing::RandomSequences(7, 32, 64, 128, 30522, 2);
  const batching::Batch batch = testing::MakeVarlen(s);
  cuda::MemoryMeter meter(c10::kCPU);  // installs the counting allocator before the steps
  StepPeak(model, batch);              // warm-up: one-time allocations
  const int64_t full = StepPeak(model, batch);
  model->FreezeEmbeddings(true);
  model->FreezeLayersBelow(3);
  const int64_t half = StepPeak(model, batch);
  model->FreezeLayersBelow(config.layers());
  const int64_t frozen = StepPeak(model, batch);
  std::printf(
      "step peak above start, MiniLM shape, 32 sequences of 64-128 tokens (fp32 CPU):\n"
      "  full fine-tuning %.1f MiB, embeddings + 3 of 6 layers frozen %.1f MiB, "
      "encoder frozen %.1f MiB\n",
      full / 1048576.0, half / 1048576.0, frozen / 1048576.0);
  EXPECT_LT(half, full * 0.75);
  // Only one layer's transient working set and the head remain.
  EXPECT_LT(frozen, full / 4);
}

}  // namespace
}  // namespace padless::models
