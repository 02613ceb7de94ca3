// Activation checkpointing changes memory, not results: with dropout on, the recompute replays the
// forward's RNG stream, so loss and gradients equal the unchecked run's; and the peak CPU memory,
// counted by the cuda engineer's counting allocator, drops.
#include "padless/models/checkpoint.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "batch_factory.h"
#include "padless/cuda/memory_meter.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"

namespace padless::models {
namespace {

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
  EXPECT_EQ(CheckpointPolicy::Parse("every:3")->every, 3);
  EXPECT_EQ(CheckpointPolicy::Parse("every:3")->ToString(), "every:3");
  for (const char* bad : {"", "every:", "every:0", "every:-1", "some", "every:2x"}) {
    EXPECT_FALSE(CheckpointPolicy::Parse(bad).ok()) << bad;
  }
  const CheckpointPolicy every2{2};
  EXPECT_TRUE(every2.Checkpoints(0));
  EXPECT_FALSE(every2.Checkpoints(1));
  EXPECT_TRUE(every2.Checkpoints(2));
  EXPECT_FALSE(CheckpointPolicy::None().Checkpoints(0));
}

class CheckpointEquivalenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckpointEquivalenceTest, SameLossAndGradientsWithDropout) {
  at::manual_seed(21);
  EncoderClassifier model(DropoutConfig());
  model->train();
  const Sequences s = RandomSequences(3, 8, 3, 24, 60, 2);
  for (const batching::Batch& b : {MakePadded(s), MakePacked(s, 48)}) {
    model->set_checkpoint_policy(CheckpointPolicy::None());
    const Step plain = TrainStep(model, b, 99);
    // Dropout is really on: another seed gives another loss.
    const Step other_seed = TrainStep(model, b, 100);
    ASSERT_GT((plain.loss - other_seed.loss).abs().item<double>(), 1e-6);

    model->set_checkpoint_policy(*CheckpointPolicy::Parse(GetParam()));
    const Step checked = TrainStep(model, b, 99);
    EXPECT_LE((plain.loss - checked.loss).abs().item<double>(), 1e-6);
    ASSERT_EQ(plain.grads.size(), checked.grads.size());
    for (size_t i = 0; i < plain.grads.size(); ++i) {
      EXPECT_LE((plain.grads[i] - checked.grads[i]).abs().max().item<double>(), 1e-6) << i;
    }
    // The RNG stream after the step is where it would be without recompute.
    at::manual_seed(5);
    model->set_checkpoint_policy(CheckpointPolicy::None());
    ClassificationLoss(model->forward(b), b.labels).backward();
    const at::Tensor after_plain = at::rand({4});
    at::manual_seed(5);
    model->set_checkpoint_policy(*CheckpointPolicy::Parse(GetParam()));
    ClassificationLoss(model->forward(b), b.labels).backward();
    EXPECT_TRUE(at::equal(after_plain, at::rand({4})));
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, CheckpointEquivalenceTest,
                         ::testing::Values("all", "every:2", "every:3"));

TEST(CheckpointTest, MatchesUnderCpuAutocast) {
  at::manual_seed(22);
  EncoderClassifier model(DropoutConfig().layers(2));
  model->train();
  const batching::Batch b = MakePadded(RandomSequences(4, 6, 3, 16, 60, 2));
  Step plain, checked;
  {
    AutocastGuard autocast(at::kCPU, at::kBFloat16);
    plain = TrainStep(model, b, 7);
  }
  model->set_checkpoint_policy(CheckpointPolicy::All());
  {
    AutocastGuard autocast(at::kCPU, at::kBFloat16);
    checked = TrainStep(model, b, 7);
  }
  EXPECT_LE((plain.loss - checked.loss).abs().item<double>(), 1e-6);
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    EXPECT_LE((plain.grads[i] - checked.grads[i]).abs().max().item<double>(), 1e-6) << i;
  }
}

TEST(CheckpointTest, FrozenLayersStillCheckpoint) {
  at::manual_seed(23);
  EncoderClassifier model(DropoutConfig().dropout(0).attention_dropout(0));
  model->FreezeEmbeddings(true);
  model->FreezeLayersBelow(2);
  const batching::Batch b = MakePadded(RandomSequences(5, 4, 3, 10, 60, 2));
  const Step plain = TrainStep(model, b, 1);
  model->set_checkpoint_policy(CheckpointPolicy::All());
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
  model->set_checkpoint_policy(CheckpointPolicy::All());
  const int64_t all = PeakOfStep(model, b, meter);
  model->set_checkpoint_policy(*CheckpointPolicy::Parse("every:2"));
  const int64_t every2 = PeakOfStep(model, b, meter);
  ASSERT_GT(none, 0) << "the counting allocator saw nothing";
  EXPECT_LT(all, none * 6 / 10) << "none " << none << " all " << all;
  EXPECT_LT(every2, none);
  EXPECT_LT(all, every2);
}

}  // namespace
}  // namespace padless::models
