// Trainer: a resumed run equals an uninterrupted one, an out-of-memory step split in pieces equals
// the unsplit step, the model learns a separable task, early stopping, gradual unfreezing,
// checkpoint rotation, the CSV log, and clear errors for bad data.
#include "padless/train/trainer.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "padless/models/fused_layer.h"
#include "padless/train/lr_schedule.h"
#include "padless/eval/metrics.h"
#include "padless/tokenize/special_tokens.h"
#include "padless/train/training_defaults.h"
#include "trainer_fixtures.h"

namespace padless::train {
namespace {

using testing::MaxDiff;
using testing::Params;
using testing::Plan;
using testing::Quiet;
using testing::SyntheticCorpus;
using testing::TempDir;
using testing::TinyConfig;

// The reference varlen attention, so that the fused layers (and their FP8 GEMMs) run on the CPU.
models::ModelRuntime ReferenceAttention() {
  models::ModelRuntime runtime;
  runtime.attention = models::AttentionBackend::kVarlenReference;
  return runtime;
}

TEST(TrainerTest, ResumeEqualsUninterruptedRun) {
  const auto data = SyntheticCorpus(1, 48);
  const auto dev = SyntheticCorpus(2, 16);
  struct Case {
    batching::Sampler sampler;
    const corpus::TokenizedCorpus* dev;
    int64_t stop_after;  // 3 optimizer steps per epoch: 2 and 4 stop mid-epoch
  };
  for (const Case& k :
       {Case{batching::Sampler::kRandom, nullptr, 2}, Case{batching::Sampler::kPacked, &dev, 4}}) {
    const TrainConfig config = Quiet().epochs(3).grad_accum(2).lr(1e-3);
    at::manual_seed(5);
    models::EncoderClassifier full(TinyConfig(0.1));
    const std::vector<at::Tensor> init = Params(full);
    absl::StatusOr<TrainResult> a =
        Trainer(full, config, Plan(k.sampler), at::kCPU).Train(data, k.dev);
    ASSERT_TRUE(a.ok()) << a.status();

    TempDir dir;
    at::manual_seed(5);
    models::EncoderClassifier first(TinyConfig(0.1));
    TrainConfig interrupted = config;
    interrupted.checkpoint_dir(dir.str()).stop_after(k.stop_after);
    absl::StatusOr<TrainResult> b =
        Trainer(first, interrupted, Plan(k.sampler), at::kCPU).Train(data, k.dev);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE(b->interrupted);
    ASSERT_EQ(b->steps, k.stop_after);

    at::manual_seed(999);  // a fresh process: other weights, another RNG state
    models::EncoderClassifier resumed(TinyConfig(0.1));
    TrainConfig resume = config;
    resume.checkpoint_dir(dir.str()).resume(true);
    absl::StatusOr<TrainResult> c =
        Trainer(resumed, resume, Plan(k.sampler), at::kCPU).Train(data, k.dev);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->steps, a->steps);
    EXPECT_GT(MaxDiff(Params(full), init), 1e-4) << "training must move the parameters";
    EXPECT_EQ(c->best_step, a->best_step);
    EXPECT_LE(MaxDiff(Params(full), Params(resumed)), 1e-6);
    if (k.dev == nullptr) {
      EXPECT_GT(MaxDiff(Params(full), Params(first)), 1e-4) << "the interrupted run must differ";
    }
  }
}

// FP8 (on the CPU, with the reference attention so that the fused layers and their FP8 GEMMs run):
// the checkpoint carries the FP8 scales and amax history, so the resumed run ends where the
// uninterrupted one does.
TEST(TrainerTest, Fp8ResumeEqualsUninterruptedRun) {
  const auto data = SyntheticCorpus(1, 48);
  TrainConfig config = Quiet().epochs(2).lr(1e-3).amp(models::AmpMode::kFp8);
  config.runtime(ReferenceAttention());
  auto train = [&](uint64_t seed, const TrainConfig& c) {
    at::manual_seed(seed);
    models::EncoderClassifier model(TinyConfig(0.0));
    absl::StatusOr<TrainResult> r =
        Trainer(model, c, Plan(batching::Sampler::kPacked), at::kCPU).Train(data, nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return model;
  };
  models::EncoderClassifier full = train(5, config);
  ASSERT_NE(full->runtime().fp8, nullptr);
  // Every GEMM operand's amax entered the history: FP8 did run.
  EXPECT_GT(full->runtime().fp8->state().narrow(0, 2, 1).min().item<float>(), 0.0f);
  TempDir dir;
  train(5, TrainConfig(config).checkpoint_dir(dir.str()).stop_after(4));
  models::EncoderClassifier resumed =
      train(999, TrainConfig(config).checkpoint_dir(dir.str()).resume(true));
  EXPECT_LE(MaxDiff(Params(full), Params(resumed)), 1e-6);
  EXPECT_TRUE(at::equal(full->runtime().fp8->state(), resumed->runtime().fp8->state()));
}

// --amp fp8 reports how many GEMMs ran in FP8: all of them through the fused layers, none when the
// run takes the generic layers (and then it says so).
TEST(TrainerTest, Fp8SaysHowManyGemmsRanInFp8) {
  const auto data = SyntheticCorpus(1, 16);
  for (const bool fused : {true, false}) {
    TrainConfig config = Quiet().max_steps(1).amp(models::AmpMode::kFp8);
    models::ModelRuntime runtime = ReferenceAttention();
    runtime.fused_layers = fused;
    config.runtime(runtime);
    at::manual_seed(5);
    models::EncoderClassifier model(TinyConfig(0.0));
    absl::StatusOr<TrainResult> r =
        Trainer(model, config, Plan(batching::Sampler::kPacked), at::kCPU).Train(data, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->fp8_gemms_total, 2 * models::kFusedLayerGemms);
    EXPECT_EQ(r->fp8_gemms, fused ? 2 * models::kFusedLayerGemms : 0) << "fused " << fused;
  }
  at::manual_seed(5);
  models::EncoderClassifier bf16(TinyConfig(0.0));
  absl::StatusOr<TrainResult> r =
      Trainer(bf16, Quiet().max_steps(1), Plan(batching::Sampler::kPacked), at::kCPU)
          .Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->fp8_gemms_total, 0);
}

TEST(TrainerTest, OutOfMemoryStepIsSplitAndEqualsTheUnsplitStep) {
  const auto data = SyntheticCorpus(3, 32);
  const TrainConfig config = Quiet().epochs(1).lr(1e-3);
  at::manual_seed(6);
  models::EncoderClassifier plain(TinyConfig(0.0));
  ASSERT_TRUE(
      Trainer(plain, config, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr).ok());

  at::manual_seed(6);
  models::EncoderClassifier split(TinyConfig(0.0));
  TrainConfig oom = config;
  int injected = 0;
  oom.before_forward = [&](const batching::Batch& b) {
    if (b.num_sequences > 3) {
      ++injected;
      TORCH_CHECK_WITH(OutOfMemoryError, false, "injected out of memory");
    }
  };
  absl::StatusOr<TrainResult> r =
      Trainer(split, oom, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(injected, 0);
  EXPECT_EQ(r->oom_events.size(), 2u * r->steps) << "8 -> 4 -> 2 sequences: two splits per step";
  EXPECT_LE(MaxDiff(Params(plain), Params(split)), 1e-5);
}

TEST(TrainerTest, OutOfMemoryOnASingleSequenceIsAnError) {
  const auto data = SyntheticCorpus(3, 8);
  at::manual_seed(6);
  models::EncoderClassifier model(TinyConfig(0.0));
  TrainConfig oom = Quiet().epochs(1);
  oom.before_forward = [](const batching::Batch&) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, "injected out of memory");
  };
  absl::StatusOr<TrainResult> r =
      Trainer(model, oom, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(TrainerTest, LearnsASeparableTaskAndLogs) {
  const auto data = SyntheticCorpus(4, 256);
  const auto dev = SyntheticCorpus(5, 64);
  TempDir dir;
  at::manual_seed(7);
  models::EncoderClassifier model(TinyConfig(0.0));
  const TrainConfig config = Quiet()
                                 .epochs(6)
                                 .lr(3e-3)
                                 .warmup_fraction(0.1)
                                 .log_csv(dir.file("log.csv"))
                                 .log_every(5)
                                 .checkpoint_dir(dir.file("ckpt"))
                                 .keep_checkpoints(2);
  absl::StatusOr<TrainResult> r =
      Trainer(model, config, Plan(batching::Sampler::kPacked), at::kCPU).Train(data, &dev);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->best_dev.has_value());
  EXPECT_GE(r->best_dev->metrics.accuracy, 0.9);
  // The best parameters are the ones left in the model.
  absl::StatusOr<eval::EvalResult> again = eval::Evaluate(model, dev, Plan(batching::Sampler::kRandom),
                                              at::kCPU, models::AmpMode::kOff, tokenize::kPadId);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_DOUBLE_EQ(again->metrics.accuracy, r->best_dev->metrics.accuracy);
  EXPECT_GT(r->padding_efficiency, 0.5);
  EXPECT_LE(r->padding_efficiency, 1.0);
  EXPECT_GT(r->real_tokens, 0);
  EXPECT_GT(r->peak_allocated_bytes, 0);
  // The last logging window's mean loss: positive, and below the untrained ln(2) of two classes.
  EXPECT_GT(r->final_loss, 0);
  EXPECT_LT(r->final_loss, 0.69);

  std::ifstream csv(dir.file("log.csv"));
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("step,epoch,loss,lr,real_tokens", 0), 0u);
  int64_t rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, r->steps);
  EXPECT_EQ(testing::FilesEndingWith(dir.file("ckpt"), ".pt").size(), 2u);
}

// Issue 13.4: a loss that stays at chance level (lr 0: nothing is learned) is flagged at the check
// step, or at the end of a run shorter than that; a model that learns is not.
TEST(TrainerTest, LossStuckAtChanceLevelIsFlagged) {
  const auto data = SyntheticCorpus(4, 128);
  at::manual_seed(7);
  models::EncoderClassifier stuck(TinyConfig(0.0));
  absl::StatusOr<TrainResult> r =
      Trainer(stuck, Quiet().epochs(2).lr(0).log_every(5).chance_check_step(20),
              Plan(batching::Sampler::kPacked), at::kCPU)
          .Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GE(r->steps, 20);
  EXPECT_TRUE(r->loss_at_chance) << "final loss " << r->final_loss;

  at::manual_seed(7);
  models::EncoderClassifier short_run(TinyConfig(0.0));  // default check step, fewer steps than that
  r = Trainer(short_run, Quiet().epochs(1).lr(0).log_every(5), Plan(batching::Sampler::kPacked),
              at::kCPU)
          .Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_LT(r->steps, kChanceLevelCheckStep);
  EXPECT_TRUE(r->loss_at_chance) << "final loss " << r->final_loss;

  at::manual_seed(7);
  models::EncoderClassifier learning(TinyConfig(0.0));
  r = Trainer(learning,
              Quiet().epochs(8).lr(3e-3).warmup_fraction(0.1).log_every(5).chance_check_step(100),
              Plan(batching::Sampler::kPacked), at::kCPU)
          .Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GE(r->steps, 100);
  EXPECT_FALSE(r->loss_at_chance) << "final loss " << r->final_loss;
}

// Issue 13.6: the copy of the best weights is kept on the host (never on the training device), it
// is a copy (training on does not change it), and it is what the model ends with.
TEST(TrainerTest, BestWeightsCopyLivesOnTheHost) {
  const auto data = SyntheticCorpus(4, 64);
  const auto dev = SyntheticCorpus(5, 32);
  at::manual_seed(7);
  models::EncoderClassifier model(TinyConfig(0.0));
  std::vector<std::vector<at::Tensor>> copies;  // each improvement's copy, as handed out
  std::vector<std::vector<at::Tensor>> values;  // their values then
  TrainConfig config = Quiet().epochs(4).lr(3e-3);
  config.on_best_weights = [&](const std::vector<at::Tensor>& best) {
    const std::vector<at::Tensor> live = model->parameters();
    ASSERT_EQ(best.size(), live.size());
    for (size_t i = 0; i < best.size(); ++i) {
      EXPECT_NE(best[i].data_ptr(), live[i].data_ptr()) << "not a copy";
      EXPECT_TRUE(at::equal(best[i], live[i].detach()));
    }
    copies.push_back(best);
    std::vector<at::Tensor> v;
    for (const at::Tensor& t : best) v.push_back(t.clone());
    values.push_back(std::move(v));
  };
  absl::StatusOr<TrainResult> r =
      Trainer(model, config, Plan(batching::Sampler::kPacked), at::kCPU).Train(data, &dev);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(copies.empty());
  const std::vector<at::Tensor> params = Params(model);
  for (size_t c = 0; c < copies.size(); ++c) {
    for (size_t i = 0; i < copies[c].size(); ++i) {
      EXPECT_TRUE(copies[c][i].device().is_cpu());
      EXPECT_TRUE(at::equal(copies[c][i], values[c][i])) << "changed after it was kept";
    }
  }
  // Each improvement replaces the copy; the model ends with the last one.
  EXPECT_EQ(MaxDiff(params, copies.back()), 0.0);
}

// Packing reshuffles every epoch, so epochs can have different batch counts; the run still ends
// at the last epoch's end, with that epoch's dev evaluation (it once stopped one batch short, by
// step count, and the saved model was the previous epoch's best).
TEST(TrainerTest, EveryEpochEndsWhenEpochsHaveDifferentBatchCounts) {
  // Small packing windows: how well a window packs depends on which sequences the shuffle puts
  // in it, so the batch count varies between epochs.
  const batching::PlannerOptions plan = Plan(batching::Sampler::kPacked).pack_window(12);
  constexpr int64_t kEpochs = 3;
  std::optional<corpus::TokenizedCorpus> data;
  std::vector<int64_t> batches;
  for (uint64_t seed = 1; seed < 40 && !data; ++seed) {
    corpus::TokenizedCorpus corpus = SyntheticCorpus(seed, 60);
    batching::Planner planner(plan);
    batches.clear();
    for (int64_t epoch = 0; epoch < kEpochs; ++epoch) {
      absl::StatusOr<std::vector<batching::BatchSpec>> p =
          planner.Plan(corpus.Lengths(), epoch, 0, 1);
      ASSERT_TRUE(p.ok()) << p.status();
      batches.push_back(static_cast<int64_t>(p->size()));
    }
    // Later epochs with more batches than the first: the case that stopped short.
    if (batches[0] + batches[1] + batches[2] > kEpochs * batches[0]) data = std::move(corpus);
  }
  ASSERT_TRUE(data.has_value()) << "no corpus whose later epochs have more batches";
  const auto dev = SyntheticCorpus(99, 16);
  at::manual_seed(3);
  models::EncoderClassifier model(TinyConfig(0.0));
  absl::StatusOr<TrainResult> r =
      Trainer(model, Quiet().epochs(kEpochs), plan, at::kCPU).Train(*data, &dev);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->epochs_completed, kEpochs);
  EXPECT_EQ(r->steps, batches[0] + batches[1] + batches[2]);
  EXPECT_TRUE(r->best_dev.has_value());
}

TEST(TrainerTest, EarlyStoppingWithoutImprovement) {
  const auto data = SyntheticCorpus(8, 32);
  const auto dev = SyntheticCorpus(9, 16);
  at::manual_seed(8);
  models::EncoderClassifier model(TinyConfig(0.0));
  // lr 0: dev accuracy never improves after the first evaluation.
  absl::StatusOr<TrainResult> r = Trainer(model, Quiet().epochs(10).lr(0).patience(2),
                                          Plan(batching::Sampler::kRandom), at::kCPU)
                                      .Train(data, &dev);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stopped_early);
  EXPECT_EQ(r->epochs_completed, 3);
}

// freeze_layers 2, unfreeze_every 1: epoch 0 trains no layer, epoch 1 layer 1, epoch 2 both (the
// top frozen layer thaws first). Frozen layers must keep their exact values, and their gradients
// must not even be computed.
TEST(TrainerTest, GradualUnfreezingThawsTheTopLayerEachEpoch) {
  const auto data = SyntheticCorpus(11, 48);  // 6 batches of 8: 6 optimizer steps per epoch
  at::manual_seed(12);
  models::EncoderClassifier model(TinyConfig(0.0));
  TrainConfig config = Quiet().epochs(3).lr(1e-2).freeze_layers(2).unfreeze_every(1);
  auto snapshot = [&] {
    std::map<std::string, at::Tensor> out;
    for (const auto& p : model->named_parameters()) out[p.key()] = p.value().detach().clone();
    return out;
  };
  // Per forward: which layers require grad, and the parameters before it.
  std::vector<std::vector<bool>> requires_grad;
  std::vector<std::map<std::string, at::Tensor>> before;
  config.before_forward = [&](const batching::Batch&) {
    std::vector<bool> layers(2, false);
    for (const auto& p : model->named_parameters()) {
      for (int l = 0; l < 2; ++l) {
        if (p.key().rfind("layer" + std::to_string(l) + ".", 0) == 0) {
          layers[l] = p.value().requires_grad();
        }
      }
      if (p.key().rfind("layer", 0) != 0) {
        EXPECT_TRUE(p.value().requires_grad()) << p.key() << " is never frozen";
      }
    }
    requires_grad.push_back(layers);
    before.push_back(snapshot());
  };
  absl::StatusOr<TrainResult> r =
      Trainer(model, config, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->steps, 18);
  ASSERT_EQ(requires_grad.size(), 18u);
  before.push_back(snapshot());  // after the last step
  for (size_t i = 0; i < 18; ++i) {
    const int64_t epoch = i / 6;
    EXPECT_EQ(requires_grad[i], (std::vector<bool>{epoch >= 2, epoch >= 1})) << "forward " << i;
  }
  // A layer is bitwise unchanged over every step it was frozen for, and moves once thawed.
  auto changed = [&](const std::string& prefix, size_t from, size_t to) {
    double d = 0;
    for (const auto& [name, t] : before[from]) {
      if (name.rfind(prefix, 0) == 0) {
        d = std::max(d, (t - before[to].at(name)).abs().max().item<double>());
      }
    }
    return d;
  };
  EXPECT_EQ(changed("layer0.", 0, 12), 0.0);
  EXPECT_EQ(changed("layer1.", 0, 6), 0.0);
  EXPECT_GT(changed("layer1.", 6, 12), 1e-4);
  EXPECT_GT(changed("layer0.", 12, 18), 1e-4);
  EXPECT_GT(changed("word_embeddings", 0, 6), 1e-4);
  EXPECT_GT(changed("head_", 0, 6), 1e-4);
}

TEST(TrainerTest, BadDataIsAClearError) {
  corpus::TokenizedCorpus bad_label = SyntheticCorpus(10, 4);
  bad_label.Add(std::vector<int32_t>{2, 11, 3}, {}, 5);
  models::EncoderClassifier model(TinyConfig(0.0));
  absl::StatusOr<TrainResult> r =
      Trainer(model, Quiet(), Plan(batching::Sampler::kRandom), at::kCPU).Train(bad_label, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("example 4"), std::string::npos) << r.status();

  corpus::TokenizedCorpus bad_token = SyntheticCorpus(10, 4);
  bad_token.Add(std::vector<int32_t>{2, 60, 3}, {}, 1);
  r = Trainer(model, Quiet(), Plan(batching::Sampler::kRandom), at::kCPU).Train(bad_token, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("token id 60"), std::string::npos) << r.status();

  // RoBERTa-style position ids start at an offset: max_len 64 does not fit 64 positions less 2.
  models::EncoderClassifier offset_model(TinyConfig(0.0).position_offset(2));
  r = Trainer(offset_model, Quiet(), Plan(batching::Sampler::kRandom), at::kCPU)
          .Train(SyntheticCorpus(10, 4), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("longest sequence 62"), std::string::npos)
      << r.status();
}

TEST(MetricsTest, AccuracyAndMacroF1) {
  // gold: 0 0 1 1 2; pred: 0 1 1 1 0.
  const eval::ClassificationMetrics m = eval::ComputeMetrics({0, 0, 1, 1, 2}, {0, 1, 1, 1, 0}, 4);
  EXPECT_DOUBLE_EQ(m.accuracy, 0.6);
  // F1: class 0: 2*1/(2+2)=0.5; class 1: 2*2/(2+3)=0.8; class 2: 0; class 3 absent.
  EXPECT_NEAR(m.macro_f1, (0.5 + 0.8 + 0.0) / 3, 1e-12);
}

TEST(LrScheduleTest, WarmupThenDecay) {
  EXPECT_DOUBLE_EQ(LearningRate(1.0, 0, 4, 10, LrDecay::kLinear), 0.25);
  EXPECT_DOUBLE_EQ(LearningRate(1.0, 3, 4, 10, LrDecay::kLinear), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(1.0, 7, 4, 10, LrDecay::kLinear), 0.5);
  EXPECT_NEAR(LearningRate(1.0, 7, 4, 10, LrDecay::kCosine), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(LearningRate(1.0, 10, 4, 10, LrDecay::kLinear), 0.0);
  EXPECT_DOUBLE_EQ(LearningRate(1.0, 9, 4, 10, LrDecay::kConstant), 1.0);
  EXPECT_FALSE(ParseLrDecay("step").ok());
}

}  // namespace
}  // namespace padless::train
