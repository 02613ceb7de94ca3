// padless profile-memory: peak memory of one training step of the encoder classifier for each
// sequence length x batch size x {fp32, bf16 AMP} x checkpointing {none, all} x {padded SDPA,
// varlen}, measured after a warm-up step; prints a table, writes CSV and an SVG chart, and fits
// fixed + per-token + per-token*length memory per configuration with its error on held-out
// lengths. Measurement: padless/cuda/memory/memory_meter.h; report and fit:
// padless/cuda/memory/memory_profile.h.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli_util.h"
#include "common_flags.h"
#include "flag_spelling.h"
#include "padless/batching/batch.h"
#include "padless/cuda/memory/memory_budget.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/cuda/memory/memory_profile.h"
#include "padless/models/autocast.h"
#include "padless/models/checkpoint_policy.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_config.h"
#include "padless/train/memory_planning.h"
#include "padless/train/memory_probe.h"
#include "padless/models/model_runtime.h"
#include "padless/train/optimizer.h"
#include "padless/base/atomic_file_writer.h"
#include "path_checks.h"
#include "subcommand.h"

ABSL_FLAG(std::string, sweep_preset, "base", "profile-memory: encoder preset (tiny, small, base)");
ABSL_FLAG(std::string, sweep_seq_lens, "64,128,256,384,512,768,1024,1536,2048,3072,4096",
          "profile-memory: sequence lengths to measure");
ABSL_FLAG(std::string, sweep_batch_sizes, "8,32", "profile-memory: batch sizes to measure");
ABSL_FLAG(std::string, sweep_amp, "off,bf16", "profile-memory: AMP modes (off = fp32, bf16)");
ABSL_FLAG(
    std::string, sweep_checkpoint, "none,all",
    "profile-memory: checkpoint policies (none, all, every:K, keep_last:K, selective, ffn, attn)");
ABSL_FLAG(std::string, sweep_attention, "padded,varlen",
          "profile-memory: padded (dense SDPA with a mask) and/or varlen (packed tokens)");
ABSL_FLAG(std::string, sweep_device, "auto",
          "profile-memory: auto (cuda when a CUDA device is available, else cpu), cuda "
          "(caching-allocator stats) or cpu (counting allocator)");
ABSL_FLAG(int64_t, sweep_max_tokens, 131072,
          "profile-memory: skip shapes with batch * seq_len above this");
ABSL_FLAG(int64_t, sweep_vocab_size, 0,
          "profile-memory: vocabulary size (0: the preset's); it only moves the fixed memory");
ABSL_FLAG(std::string, verify_budget, "",
          "profile-memory: also plan each configuration and length for this budget (e.g. 40GiB) "
          "as train --memory-budget does, run the planned batch, and check peak <= budget and "
          ">= 85% of it");
ABSL_FLAG(std::string, held_out_lens, "384,1536,3072",
          "profile-memory: lengths left out of the fit, to report its prediction error");

namespace padless::cli {
namespace {

constexpr absl::string_view kCommand = "profile-memory";

using cuda::MemoryProfilePoint;

absl::StatusOr<std::vector<int64_t>> ParseInts(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(FlagAsWritten(flag), ": '", part, "' is not a positive integer"));
    }
    out.push_back(v);
  }
  if (out.empty())
    return absl::InvalidArgumentError(absl::StrCat(FlagAsWritten(flag), " is empty"));
  return out;
}

std::vector<std::string> ParseList(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipEmpty());
}

struct SweepConfig {
  models::AmpMode amp;
  models::CheckpointPolicy policy;
  bool varlen;

  std::string Name() const {
    return absl::StrCat(amp == models::AmpMode::kOff ? "fp32" : models::AmpModeName(amp),
                        "/ckpt=", policy.ToString(), "/", varlen ? "varlen" : "padded");
  }
  batching::Layout layout() const {
    return varlen ? batching::Layout::kVarlen : batching::Layout::kPadded;
  }
};

// One model and optimizer shared by every measurement (the weights and the AdamW state are the
// same for all configurations; only the step's activations differ).
class Profiler {
 public:
  Profiler(const models::EncoderConfig& config, const c10::Device& device, cuda::MemoryMeter meter,
           bool quiet)
      : config_(config), device_(device), meter_(meter), quiet_(quiet), model_(config) {
    model_->to(device_);
    model_->train();
    std::vector<at::Tensor> params = model_->parameters();
    for (const at::Tensor& p : params) gradient_bytes_ += p.numel() * p.element_size();
    opt_ = std::make_unique<models::FusedAdamW>(params, std::vector<bool>(params.size(), true),
                                                models::AdamWOptions{});
  }

  // Peak memory of one step at (b, len) under `sc`, after a warm-up step of the same shape.
  absl::StatusOr<MemoryProfilePoint> Measure(const SweepConfig& sc, int64_t b, int64_t len) {
    models::ModelRuntime runtime;
    runtime.checkpoint = sc.policy;
    model_->set_runtime(runtime);
    MemoryProfilePoint point{sc.Name(), b, len};
    point.gradient_bytes = gradient_bytes_;
    absl::StatusOr<batching::Batch> batch =
        models::SyntheticTrainingBatch(sc.layout(), b, len, config_, device_);
    if (!batch.ok()) return batch.status();
    absl::StatusOr<models::StepMemory> m =
        models::MeasureTrainingStep(model_, *opt_, *batch, sc.amp, /*lr=*/0.0, meter_, device_);
    if (!m.ok()) return m.status();
    point.oom = m->oom;
    point.baseline_bytes = m->baseline_bytes;
    point.peak_allocated_bytes = m->peak_allocated_bytes;
    point.peak_reserved_bytes = m->peak_reserved_bytes;
    if (!quiet_) {
      absl::FPrintF(
          stderr, "%-28s b=%-4d s=%-5d %s\n", point.config, b, len,
          point.oom ? "out of memory"
                    : absl::StrCat("peak ", cuda::FormatBytes(point.peak_allocated_bytes),
                                   ", reserved ", cuda::FormatBytes(point.peak_reserved_bytes)));
    }
    return point;
  }

 private:
  models::EncoderConfig config_;
  c10::Device device_;
  cuda::MemoryMeter meter_;
  bool quiet_;
  models::EncoderClassifier model_;
  int64_t gradient_bytes_ = 0;
  std::unique_ptr<models::FusedAdamW> opt_;
};

void PrintPoints(const std::vector<MemoryProfilePoint>& points) {
  absl::PrintF("%-28s %6s %6s %12s %12s %12s\n", "config", "batch", "seq", "peak_alloc",
               "peak_resv", "activations");
  for (const MemoryProfilePoint& p : points) {
    absl::PrintF(
        "%-28s %6d %6d %12s %12s %12s\n", p.config, p.batch, p.seq_len,
        p.oom ? "OOM" : cuda::FormatBytes(p.peak_allocated_bytes),
        p.oom ? "OOM" : cuda::FormatBytes(p.peak_reserved_bytes),
        p.oom ? "OOM"
              : cuda::FormatBytes(p.peak_allocated_bytes - p.baseline_bytes - p.gradient_bytes));
  }
}

void PrintFits(const std::vector<cuda::ConfigFit>& fits, const std::vector<std::string>& skipped) {
  absl::PrintF(
      "\nmemory model per config: peak = fixed + a*b*s + c*b*s^2, fitted without the "
      "held-out lengths\n%-28s %10s %12s %12s %10s %10s\n",
      "config", "fixed", "a (B/tok)", "c (B/tok/s)", "max_err", "mean_err");
  for (const cuda::ConfigFit& f : fits) {
    absl::PrintF("%-28s %10s %12.0f %12.2f %9.2f%% %9.2f%%\n", f.config,
                 cuda::FormatBytes(static_cast<int64_t>(f.report.model.fixed_bytes())),
                 f.report.model.per_token_bytes(), f.report.model.per_token_seq_bytes(),
                 100 * f.report.max_relative_error, 100 * f.report.mean_relative_error);
  }
  for (const std::string& s : skipped) absl::PrintF("not fitted: %s\n", s);
}

absl::Status WriteOutputs(const std::vector<MemoryProfilePoint>& points,
                          const c10::Device& device) {
  const std::string csv = absl::GetFlag(FLAGS_csv);
  if (!csv.empty()) {
    if (absl::Status s = base::WriteFileAtomically(csv, cuda::MemoryProfileCsv(points)); !s.ok())
      return s;
  }
  const std::string svg = absl::GetFlag(FLAGS_svg);
  if (svg.empty()) return absl::OkStatus();
  const std::string title = absl::StrCat("padless: peak memory of one training step, preset ",
                                         absl::GetFlag(FLAGS_sweep_preset), " on ", device.str());
  return base::WriteFileAtomically(svg, cuda::MemoryProfileSvg(points, title));
}

// For every configuration and length: the plan `padless train --memory-budget` makes (probe ladder
// and choice of models::PlanForMemoryBudget, on a fresh model), then a training step of the planned
// batch measured as training runs it (a fresh optimizer, after the plan). A plan passes when that
// step's peak stays within the budget and uses at least 85% of it.
int VerifyBudget(const models::EncoderConfig& config, const c10::Device& device,
                 cuda::MemoryMeter& meter, const std::vector<models::AmpMode>& amps,
                 const std::vector<models::CheckpointPolicy>& policies,
                 const std::vector<bool>& varlens, const std::vector<int64_t>& lens, int64_t budget,
                 bool quiet) {
  constexpr double kMinUse = 0.85;
  absl::PrintF(
      "\nbudget check: %s; planned batch = models::PlanForMemoryBudget (as train "
      "--memory-budget)\n",
      cuda::FormatBytes(budget));
  absl::PrintF("%-28s %6s %8s %12s %12s %8s %s\n", "config", "seq", "rows", "probed", "measured",
               "used", "verdict");
  models::EncoderClassifier model(config);
  int failures = 0;
  for (models::AmpMode amp : amps) {
    for (const models::CheckpointPolicy& policy : policies) {
      for (bool varlen : varlens) {
        const SweepConfig sc{amp, policy, varlen};
        for (int64_t len : lens) {
          // Varlen packs sequences under a token budget; padded batches have a batch size.
          batching::PlannerOptions plan = varlen ? batching::PlannerOptions()
                                                       .sampler(batching::Sampler::kPacked)
                                                       .packed_layout(batching::Layout::kVarlen)
                                                       .max_tokens(len)
                                                       .max_len(len)
                                                 : batching::PlannerOptions()
                                                       .sampler(batching::Sampler::kRandom)
                                                       .batch_size(1)
                                                       .max_len(len);
          // The planner probes the model as its runtime is set: this sweep point's policy.
          models::ModelRuntime runtime;
          runtime.checkpoint = policy;
          model->set_runtime(runtime);
          models::MemoryPlanOptions mo;
          mo.budget_bytes = budget;
          mo.amp = amp;
          absl::StatusOr<models::MemoryPlan> mp =
              models::PlanForMemoryBudget(model, plan, mo, device);
          if (!mp.ok()) return Fail(kCommand, mp.status());
          if (!quiet) absl::FPrintF(stderr, "%s: %s\n", sc.Name(), mp->Summary());
          const int64_t rows = varlen ? mp->max_tokens / len : mp->batch_size;
          std::vector<at::Tensor> params = model->parameters();
          models::FusedAdamW opt(params, std::vector<bool>(params.size(), true),
                                 models::AdamWOptions{});
          absl::StatusOr<batching::Batch> batch =
              models::SyntheticTrainingBatch(sc.layout(), rows, len, config, device);
          if (!batch.ok()) return Fail(kCommand, batch.status());
          absl::StatusOr<models::StepMemory> m =
              models::MeasureTrainingStep(model, opt, *batch, amp, /*lr=*/0.0, meter, device);
          if (!m.ok()) return Fail(kCommand, m.status());
          const double used = static_cast<double>(m->peak_allocated_bytes) / budget;
          const bool over = m->oom || m->peak_allocated_bytes > budget;
          const bool ok = !over && used >= kMinUse;
          failures += ok ? 0 : 1;
          absl::PrintF("%-28s %6d %8d %12s %12s %7.1f%% %s\n", sc.Name(), len, rows,
                       cuda::FormatBytes(mp->measured_peak_bytes),
                       m->oom ? "OOM" : cuda::FormatBytes(m->peak_allocated_bytes), 100 * used,
                       ok ? "ok" : (over ? "OVER BUDGET" : "UNDER 85%"));
        }
      }
    }
  }
  absl::PrintF("budget check: %d plan(s) failed\n", failures);
  return failures == 0 ? kExitOk : kExitFailure;
}

// What to measure, from the flags.
struct Sweep {
  std::vector<int64_t> lens, batches, held_out;
  std::vector<models::AmpMode> amps;
  std::vector<models::CheckpointPolicy> policies;
  std::vector<bool> varlens;
  bool cuda = true;
  models::EncoderConfig config;
  int64_t max_tokens = 0;
  int64_t verify_budget = 0;  // 0: no budget check
  bool quiet = false;
};

// The configurations of the sweep: AMP modes, checkpoint policies, attention layouts.
absl::Status SweepConfigsFromFlags(Sweep& sweep) {
  for (const std::string& a : ParseList(absl::GetFlag(FLAGS_sweep_amp))) {
    auto m = models::ParseAmpMode(a);
    if (!m.ok())
      return absl::InvalidArgumentError(
          absl::StrCat(FlagAsWritten("sweep_amp"), ": ", m.status().message()));
    sweep.amps.push_back(*m);
  }
  for (const std::string& c : ParseList(absl::GetFlag(FLAGS_sweep_checkpoint))) {
    auto p = models::CheckpointPolicy::Parse(c);
    if (!p.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(FlagAsWritten("sweep_checkpoint"), ": ", p.status().message()));
    }
    sweep.policies.push_back(*p);
  }
  for (const std::string& a : ParseList(absl::GetFlag(FLAGS_sweep_attention))) {
    if (a != "padded" && a != "varlen") {
      return absl::InvalidArgumentError(
          absl::StrCat(FlagAsWritten("sweep_attention"), ": '", a, "' is not padded or varlen"));
    }
    sweep.varlens.push_back(a == "varlen");
  }
  if (sweep.amps.empty() || sweep.policies.empty() || sweep.varlens.empty()) {
    return absl::InvalidArgumentError(
        "--sweep_amp, --sweep_checkpoint and --sweep_attention must not be empty");
  }
  return absl::OkStatus();
}

// The model, the device and the budget to check; errors are usage errors.
absl::Status SweepModelFromFlags(Sweep& sweep) {
  const std::string device_name = absl::GetFlag(FLAGS_sweep_device);
  if (device_name != "auto" && device_name != "cuda" && device_name != "cpu") {
    return absl::InvalidArgumentError(absl::StrCat(FlagAsWritten("sweep_device"), ": '",
                                                   device_name, "' is not auto, cuda or cpu"));
  }
  sweep.cuda = device_name == "cuda" || (device_name == "auto" && torch::cuda::is_available());
  auto config = models::EncoderConfig::Preset(absl::GetFlag(FLAGS_sweep_preset));
  if (!config.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(FlagAsWritten("sweep_preset"), ": ", config.status().message()));
  }
  const int64_t vocab = absl::GetFlag(FLAGS_sweep_vocab_size);
  if (vocab < 0)
    return absl::InvalidArgumentError(
        absl::StrCat(FlagAsWritten("sweep_vocab_size"), " must be >= 0, got ", vocab));
  if (vocab > 0) config->vocab_size(vocab);
  int64_t longest = 0;
  for (int64_t l : sweep.lens) longest = std::max(longest, l);
  sweep.config = config->max_positions(std::max(config->max_positions(), longest));
  if (const std::string b = absl::GetFlag(FLAGS_verify_budget); !b.empty()) {
    auto parsed = cuda::ParseByteSize(b);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(FlagAsWritten("verify_budget"), ": ", parsed.status().message()));
    }
    sweep.verify_budget = *parsed;
  }
  return absl::OkStatus();
}

absl::StatusOr<Sweep> SweepFromFlags() {
  Sweep sweep;
  for (auto [flag, value, out] :
       {std::make_tuple("sweep_seq_lens", absl::GetFlag(FLAGS_sweep_seq_lens), &sweep.lens),
        std::make_tuple("sweep_batch_sizes", absl::GetFlag(FLAGS_sweep_batch_sizes),
                        &sweep.batches),
        std::make_tuple("held_out_lens", absl::GetFlag(FLAGS_held_out_lens), &sweep.held_out)}) {
    auto ints = ParseInts(flag, value);
    if (!ints.ok()) return ints.status();
    *out = std::move(*ints);
  }
  if (absl::Status s = SweepConfigsFromFlags(sweep); !s.ok()) return s;
  if (absl::Status s = SweepModelFromFlags(sweep); !s.ok()) return s;
  sweep.max_tokens = absl::GetFlag(FLAGS_sweep_max_tokens);
  sweep.quiet = absl::GetFlag(FLAGS_quiet);
  return sweep;
}

// Every configuration x batch x length within max_tokens, measured.
absl::StatusOr<std::vector<MemoryProfilePoint>> MeasureSweep(const Sweep& sweep,
                                                             Profiler& profiler) {
  std::vector<MemoryProfilePoint> points;
  for (models::AmpMode amp : sweep.amps) {
    for (const models::CheckpointPolicy& policy : sweep.policies) {
      for (bool varlen : sweep.varlens) {
        for (int64_t b : sweep.batches) {
          for (int64_t len : sweep.lens) {
            if (b * len > sweep.max_tokens) continue;
            auto point = profiler.Measure({amp, policy, varlen}, b, len);
            if (!point.ok()) return point.status();
            points.push_back(*point);
          }
        }
      }
    }
  }
  return points;
}

int RunSweep(const Sweep& sweep, const c10::Device& device, cuda::MemoryMeter& meter) {
  auto profiler = std::make_unique<Profiler>(sweep.config, device, meter, sweep.quiet);
  absl::StatusOr<std::vector<MemoryProfilePoint>> points = MeasureSweep(sweep, *profiler);
  if (!points.ok()) return Fail(kCommand, points.status());
  PrintPoints(*points);
  std::vector<std::string> skipped;
  const std::vector<cuda::ConfigFit> fits = cuda::FitPerConfig(*points, sweep.held_out, &skipped);
  PrintFits(fits, skipped);
  if (absl::Status s = WriteOutputs(*points, device); !s.ok()) return Fail(kCommand, s);
  if (sweep.verify_budget == 0) return kExitOk;
  profiler.reset();  // its model and optimizer state would be charged to every plan
  return VerifyBudget(sweep.config, device, meter, sweep.amps, sweep.policies, sweep.varlens,
                      sweep.lens, sweep.verify_budget, sweep.quiet);
}

int RunProfileMemory(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(kCommand, absl::StrCat("unexpected argument '", args[0], "'"));
  absl::StatusOr<Sweep> sweep = SweepFromFlags();
  if (!sweep.ok()) return Usage(kCommand, std::string(sweep.status().message()));
  if (absl::Status s = CheckPathFlags({{"csv", absl::GetFlag(FLAGS_csv), PathUse::kOutputFile},
                                       {"svg", absl::GetFlag(FLAGS_svg), PathUse::kOutputFile}});
      !s.ok()) {
    return Fail(kCommand, s);
  }
  if (sweep->cuda && !torch::cuda::is_available()) {
    return Fail(kCommand, absl::FailedPreconditionError(absl::StrCat(
                              FlagAsWritten("sweep_device"),
                              " cuda: no CUDA device; use cpu or auto to profile the CPU (counting "
                              "allocator)")));
  }
  const c10::Device device = sweep->cuda ? c10::Device(c10::kCUDA, 0) : c10::kCPU;
  auto meter = cuda::MemoryMeter::Create(device);
  if (!meter.ok()) return Fail(kCommand, meter.status());
  at::manual_seed(static_cast<int64_t>(absl::GetFlag(FLAGS_seed)));
  try {
    return RunSweep(*sweep, device, *meter);
  } catch (const c10::Error& e) {
    return Fail(kCommand, absl::InternalError(e.what_without_backtrace()));
  }
}

}  // namespace

const Subcommand kProfileMemoryCommand = {
    "profile-memory",
    "peak memory of a training step per sequence length, with a fitted memory model",
    "usage: padless profile-memory [--sweep_preset base] [--sweep_seq_lens 64,...,4096]\n"
    "       [--sweep_batch_sizes 8,32] [--sweep_amp off,bf16] [--sweep_checkpoint none,all]\n"
    "       [--sweep_attention padded,varlen] [--verify_budget 40GiB] [--csv out.csv]\n"
    "       [--svg out.svg]",
    {"sweep_preset", "sweep_seq_lens", "sweep_batch_sizes", "sweep_amp", "sweep_checkpoint",
     "sweep_attention", "sweep_device", "sweep_max_tokens", "sweep_vocab_size", "held_out_lens",
     "verify_budget", "csv", "svg", "seed", "quiet"},
    RunProfileMemory};

}  // namespace padless::cli
