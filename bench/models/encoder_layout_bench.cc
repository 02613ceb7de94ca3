// encoder_layout_bench: training-step throughput of the encoder on the same sequences laid out
// three ways (padded rows, packed rows, flat varlen), as real tokens per second and as the ratio
// to the padded layout measured in the same run, plus peak memory. Lengths follow IMDB's
// distribution (log-normal, median 231 tokens, p90 ~620) truncated at --max-len.
//
//   encoder_layout_bench [--device cpu|cuda] [--preset tiny|small|base] [--amp off|bf16]
//                        [--steps N] [--warmup N] [--max-len N] [--max-tokens N] [--batch-size N]
//                        [--sequences N] [--checkpoint POLICY] [--smoke]
// POLICY: none, all, every:K, keep_last:K, ffn, attn, ... (models::CheckpointPolicy::Parse).
#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/batching/collator.h"
#include "padless/batching/padding_report.h"
#include "padless/batching/planner.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/models/autocast.h"
#include "padless/models/checkpoint_policy.h"
#include "padless/models/encoder.h"
#include "padless/models/model_runtime.h"
#include "padless/train/optimizer.h"

namespace padless::models {
namespace {

struct Options {
  std::string device = "cpu";
  std::string preset = "tiny";
  std::string amp = "off";
  std::string checkpoint = "none";
  int64_t steps = 10;
  int64_t warmup = 3;
  int64_t max_len = 512;
  int64_t max_tokens = 16384;
  int64_t batch_size = 32;
  int64_t sequences = 2000;
};

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    auto number = [&](int64_t* out) {
      std::string v;
      return value(&v) && absl::SimpleAtoi(v, out);
    };
    bool ok = true;
    if (a == "--smoke") {
      o->preset = "tiny", o->steps = 2, o->warmup = 1, o->max_len = 64, o->max_tokens = 512;
      o->batch_size = 8, o->sequences = 64;
    } else if (a == "--device")
      ok = value(&o->device);
    else if (a == "--preset")
      ok = value(&o->preset);
    else if (a == "--amp")
      ok = value(&o->amp);
    else if (a == "--checkpoint")
      ok = value(&o->checkpoint);
    else if (a == "--steps")
      ok = number(&o->steps);
    else if (a == "--warmup")
      ok = number(&o->warmup);
    else if (a == "--max-len")
      ok = number(&o->max_len);
    else if (a == "--max-tokens")
      ok = number(&o->max_tokens);
    else if (a == "--batch-size")
      ok = number(&o->batch_size);
    else if (a == "--sequences")
      ok = number(&o->sequences);
    else
      ok = false;
    if (!ok) {
      std::fprintf(stderr, "encoder_layout_bench: bad argument '%s' (see the file header)\n",
                   a.c_str());
      return false;
    }
  }
  return o->steps > 0 && o->warmup >= 0 && o->max_len >= 8 && o->max_tokens >= o->max_len;
}

corpus::TokenizedCorpus ImdbLikeCorpus(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> length(std::log(231.0), 0.77);
  std::uniform_int_distribution<int32_t> token(5, static_cast<int32_t>(vocab - 1));
  corpus::TokenizedCorpus c;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = std::clamp<int64_t>(std::llround(length(rng)), 8, 3500);
    std::vector<int32_t> ids(len);
    for (int32_t& t : ids) t = token(rng);
    c.Add(ids, {}, static_cast<int64_t>(i % 2));
  }
  return c;
}

struct Row {
  std::string name;
  std::string backend;
  double efficiency = 0;
  double tokens_per_s = 0;
  int64_t peak_bytes = 0;
};

int Main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) return 2;
  const c10::Device device(o.device);
  if (device.is_cuda() &&
      !(at::globalContext().hasCUDA() && at::detail::getCUDAHooks().deviceCount() > 0)) {
    std::fprintf(stderr, "encoder_layout_bench: no CUDA device\n");
    return 1;
  }
  absl::StatusOr<EncoderConfig> preset = EncoderConfig::Preset(o.preset);
  absl::StatusOr<AmpMode> amp = ParseAmpMode(o.amp);
  absl::StatusOr<CheckpointPolicy> policy = CheckpointPolicy::Parse(o.checkpoint);
  if (!preset.ok() || !amp.ok() || !policy.ok()) {
    std::fprintf(stderr, "encoder_layout_bench: bad --preset, --amp or --checkpoint\n");
    return 2;
  }
  const EncoderConfig config = preset->vocab_size(16000)
                                   .max_positions(std::max<int64_t>(512, o.max_len))
                                   .dropout(0.1)
                                   .attention_dropout(0.1);
  const corpus::TokenizedCorpus corpus = ImdbLikeCorpus(o.sequences, config.vocab_size(), 1);
  const std::vector<int64_t> lengths = corpus.Lengths();
  cuda::MemoryMeter meter(device);

  std::vector<Row> rows;
  for (const auto& [name, strategy] : std::vector<std::pair<std::string, std::string>>{
           {"padded", "random_pad_longest"}, {"packed", "packed_bfd"}, {"varlen", "varlen_bfd"}}) {
    batching::PlannerOptions plan;
    for (const batching::NamedStrategy& s :
         batching::StandardStrategies(o.max_len, o.batch_size, o.max_tokens, 1)) {
      if (s.name == strategy) plan = s.options;
    }
    absl::StatusOr<std::vector<batching::BatchSpec>> specs =
        batching::Planner(plan).Plan(lengths, 0);
    if (!specs.ok() || specs->empty()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), specs.status().ToString().c_str());
      return 1;
    }
    const batching::Collator collator;
    std::vector<batching::Batch> batches;
    for (int64_t i = 0; i < o.warmup + o.steps; ++i) {
      absl::StatusOr<batching::Batch> b = collator.Collate(corpus, (*specs)[i % specs->size()]);
      if (!b.ok()) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), b.status().ToString().c_str());
        return 1;
      }
      batches.push_back(b->To(device, /*non_blocking=*/false));
    }
    at::manual_seed(1);
    EncoderClassifier model(config);
    model->to(device);
    model->train();
    ModelRuntime runtime;
    runtime.checkpoint = *policy;
    model->set_runtime(runtime);
    std::vector<at::Tensor> params = model->parameters();
    train::FusedAdamW optimizer(params, std::vector<bool>(params.size(), true), train::AdamWOptions{});
    Row row{name, AttentionBackendName(model->ResolveBackend(batches.front()))};
    if (*amp != AmpMode::kOff) {
      AutocastGuard guard(device.type(), *amp);
      row.backend = AttentionBackendName(model->ResolveBackend(batches.front()));
    }
    int64_t real = 0, slots = 0;
    at::Tensor loss;
    std::chrono::steady_clock::time_point start;
    meter.EmptyCache();
    meter.ResetPeak();
    for (int64_t i = 0; i < o.warmup + o.steps; ++i) {
      if (i == o.warmup) {
        if (loss.defined()) loss.item<float>();  // drain the queue before timing
        start = std::chrono::steady_clock::now();
      }
      const batching::Batch& b = batches[i];
      {
        AutocastGuard guard(device.type(), *amp);
        loss = ClassificationLoss(model->forward(b), b.labels);
      }
      loss.backward();
      optimizer.Step(1e-4, /*skip=*/at::Tensor(), train::ClipDivisor(train::GlobalGradNorm(params), 1.0));
      optimizer.ZeroGrad();
      if (i >= o.warmup) {
        real += b.real_tokens;
        slots += b.real_tokens + b.padded_tokens;
      }
    }
    loss.item<float>();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    row.efficiency = static_cast<double>(real) / slots;
    row.tokens_per_s = real / seconds;
    row.peak_bytes = meter.Snapshot().peak_allocated_bytes;
    rows.push_back(row);
  }
  absl::PrintF(
      "encoder_layout_bench: preset %s on %s, amp %s, checkpoint %s, %d timed steps, "
      "max_len %d, max_tokens %d, batch_size %d\n",
      o.preset, device.str(), o.amp, o.checkpoint, o.steps, o.max_len, o.max_tokens, o.batch_size);
  absl::PrintF("%-8s %-10s %10s %16s %14s %12s\n", "layout", "attention", "efficiency",
               "real tokens/s", "vs padded", "peak MiB");
  for (const Row& r : rows) {
    absl::PrintF("%-8s %-10s %9.1f%% %16.0f %13.2fx %12.1f\n", r.name, r.backend,
                 100 * r.efficiency, r.tokens_per_s, r.tokens_per_s / rows.front().tokens_per_s,
                 r.peak_bytes / 1048576.0);
  }
  return 0;
}

}  // namespace
}  // namespace padless::models

int main(int argc, char** argv) { return padless::models::Main(argc, argv); }
