// padless profile-memory: peak memory of one training step of the encoder classifier for each
// sequence length x batch size x {fp32, bf16 AMP} x checkpointing {none, all} x {padded SDPA,
// varlen}, measured after a warm-up step; prints a table, writes CSV and an SVG chart, and fits
// fixed + per-token + per-token*length memory per configuration with its error on held-out
// lengths. The sweep and the budget check: padless/train/memory_sweep.h; measurement:
// padless/cuda/memory/memory_meter.h; report and fit: padless/cuda/memory/memory_profile.h. This
// file maps the flags onto them and prints.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <cstdio>
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
#include "padless/base/atomic_file_writer.h"
#include "padless/cuda/memory/memory_budget.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/cuda/memory/memory_profile.h"
#include "padless/models/autocast.h"
#include "padless/models/checkpoint_policy.h"
#include "padless/models/encoder_config.h"
#include "padless/train/memory_sweep.h"
#include "path_checks.h"
#include "subcommand.h"

ABSL_FLAG(std::string, sweep_preset, "base",
          "profile-memory: encoder preset (tiny, small, base, modernbert-base)");
// To ModernBERT's position limit: the long inputs where memory per length matters most.
ABSL_FLAG(std::string, sweep_seq_lens, "64,128,256,384,512,768,1024,1536,2048,3072,4096,6144,8192",
          "profile-memory: sequence lengths to measure (the preset's positions are raised to the "
          "longest)");
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
ABSL_FLAG(std::string, held_out_lens, "384,1536,3072,6144",
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

// For every configuration and length: the plan `padless train --memory-budget` makes and a step of
// the planned batch (train::CheckMemoryBudgetPlans), one line each as it is known. A plan passes
// when that step's peak stays within the budget and uses at least 85% of it.
int VerifyBudget(const train::MemorySweepOptions& options, const c10::Device& device,
                 cuda::MemoryMeter& meter, int64_t budget) {
  absl::PrintF(
      "\nbudget check: %s; planned batch = train::PlanForMemoryBudget (as train "
      "--memory-budget)\n",
      cuda::FormatBytes(budget));
  absl::PrintF("%-28s %6s %8s %12s %12s %8s %s\n", "config", "seq", "rows", "probed", "measured",
               "used", "verdict");
  absl::StatusOr<int64_t> failures = train::CheckMemoryBudgetPlans(
      options, budget, device, meter, [](const train::BudgetCheck& c) {
        if (c.no_row_fits) {  // the planner's refusal: its message says what one row needs
          absl::PrintF("%-28s %6d %8d %12s %12s %8s no row fits: %s\n", c.config, c.seq_len, 0, "-",
                       "-", "-", c.why);
          return;
        }
        absl::PrintF("%-28s %6d %8d %12s %12s %7.1f%% %s\n", c.config, c.seq_len, c.rows,
                     cuda::FormatBytes(c.probed_peak_bytes),
                     c.oom ? "OOM" : cuda::FormatBytes(c.peak_allocated_bytes), 100 * c.used,
                     c.ok ? "ok" : (c.over_budget ? "OVER BUDGET" : "UNDER 85%"));
      });
  if (!failures.ok()) return Fail(kCommand, failures.status());
  absl::PrintF("budget check: %d plan(s) failed\n", *failures);
  return *failures == 0 ? kExitOk : kExitFailure;
}

// What to measure, from the flags.
struct Sweep {
  train::MemorySweepOptions options;  // lengths, batches, configurations, model, max_tokens
  std::vector<int64_t> held_out;
  bool cuda = true;
  int64_t verify_budget = 0;  // 0: no budget check
};

// The configurations of the sweep: AMP modes, checkpoint policies, attention layouts.
absl::Status SweepConfigsFromFlags(train::MemorySweepOptions& sweep) {
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
  sweep.options.config = *config;  // train::MeasureMemorySweep fits max_positions to the lengths
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
       {std::make_tuple("sweep_seq_lens", absl::GetFlag(FLAGS_sweep_seq_lens), &sweep.options.lens),
        std::make_tuple("sweep_batch_sizes", absl::GetFlag(FLAGS_sweep_batch_sizes),
                        &sweep.options.batches),
        std::make_tuple("held_out_lens", absl::GetFlag(FLAGS_held_out_lens), &sweep.held_out)}) {
    auto ints = ParseInts(flag, value);
    if (!ints.ok()) return ints.status();
    *out = std::move(*ints);
  }
  if (absl::Status s = SweepConfigsFromFlags(sweep.options); !s.ok()) return s;
  if (absl::Status s = SweepModelFromFlags(sweep); !s.ok()) return s;
  sweep.options.max_tokens = absl::GetFlag(FLAGS_sweep_max_tokens);
  sweep.options.quiet = absl::GetFlag(FLAGS_quiet);
  return sweep;
}

int RunSweep(const Sweep& sweep, const c10::Device& device, cuda::MemoryMeter& meter) {
  absl::StatusOr<std::vector<MemoryProfilePoint>> points =
      train::MeasureMemorySweep(sweep.options, device, meter);
  if (!points.ok()) return Fail(kCommand, points.status());
  PrintPoints(*points);
  std::vector<std::string> skipped;
  const std::vector<cuda::ConfigFit> fits = cuda::FitPerConfig(*points, sweep.held_out, &skipped);
  PrintFits(fits, skipped);
  if (absl::Status s = WriteOutputs(*points, device); !s.ok()) return Fail(kCommand, s);
  if (sweep.verify_budget == 0) return kExitOk;
  return VerifyBudget(sweep.options, device, meter, sweep.verify_budget);
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
    "usage: padless profile-memory [--sweep_preset base] [--sweep_seq_lens 64,...,8192]\n"
    "       [--sweep_batch_sizes 8,32] [--sweep_amp off,bf16] [--sweep_checkpoint none,all]\n"
    "       [--sweep_attention padded,varlen] [--verify_budget 40GiB] [--csv out.csv]\n"
    "       [--svg out.svg]",
    {"sweep_preset", "sweep_seq_lens", "sweep_batch_sizes", "sweep_amp", "sweep_checkpoint",
     "sweep_attention", "sweep_device", "sweep_max_tokens", "sweep_vocab_size", "held_out_lens",
     "verify_budget", "csv", "svg", "seed", "quiet"},
    RunProfileMemory};

}  // namespace padless::cli
