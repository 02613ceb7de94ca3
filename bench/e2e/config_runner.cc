#include "config_runner.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "padless/batching/loader.h"
#include "padless/batching/padding_stats.h"
#include "padless/batching/planner.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/models/attention.h"
#include "padless/models/autocast.h"
#include "padless/models/checkpoint_policy.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_config.h"
#include "padless/models/model_runtime.h"
#include "padless/tokenize/special_tokens.h"
#include "padless/train/grad_scaler.h"
#include "padless/train/optimizer.h"
#include "padless/train/train_config.h"
#include "padless/train/train_step.h"
#include "step_trace.h"

#ifdef PADLESS_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace padless::bench::e2e {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void Synchronize(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
}

constexpr double kWeightDecay = 0.01;

int64_t ParamBytes(const std::vector<at::Tensor>& params) {
  int64_t bytes = 0;
  for (const at::Tensor& p : params) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  return bytes;
}

// The `count` batches of the run: the planned epoch from its start, repeated if it is shorter
// (tiny smoke corpora).
absl::StatusOr<std::vector<batching::BatchSpec>> PlanRun(const RunConfig& config,
                                                         const corpus::TokenizedCorpus& corpus,
                                                         const RunOptions& o, int64_t count) {
  const batching::Planner planner(PlannerOptionsFor(config.strategy, o.budget, o.max_len, o.seed));
  const std::vector<int64_t> lengths = corpus.Lengths();
  absl::StatusOr<std::vector<batching::BatchSpec>> epoch = planner.Plan(lengths, /*epoch=*/0);
  if (!epoch.ok()) {
    return absl::Status(epoch.status().code(),
                        absl::StrCat(config.Name(), ": planning: ", epoch.status().message()));
  }
  if (epoch->empty())
    return absl::InvalidArgumentError(absl::StrCat(config.Name(), ": empty plan"));
  std::vector<batching::BatchSpec> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    out.push_back((*epoch)[static_cast<size_t>(i) % epoch->size()]);
  return out;
}

// The timed steps are over: their wall time and memory peaks.
void EndTiming(const c10::Device& device, Clock::time_point start,
               const std::optional<cuda::MemoryMeter>& meter, RunResult& r) {
  Synchronize(device);
  r.seconds = SecondsBetween(start, Clock::now());
  if (!meter) return;
  const cuda::MemorySnapshot mem = meter->Snapshot();
  r.peak_allocated_bytes = mem.peak_allocated_bytes;
  r.peak_reserved_bytes = mem.peak_reserved_bytes;
}

// The configuration's name with '/' and ':' (not allowed or awkward in file names) as '_'.
std::string TraceFileName(const RunConfig& config) {
  std::string name = config.Name();
  for (char& c : name)
    if (c == '/' || c == ':') c = '_';
  return name;
}

// The encoder of the run: the preset, sized to the corpus's vocabulary, labels and max_len.
absl::StatusOr<models::EncoderConfig> ModelConfigFor(const RunOptions& o) {
  absl::StatusOr<models::EncoderConfig> model_config = models::EncoderConfig::Preset(o.preset);
  if (!model_config.ok()) return model_config.status();
  model_config->vocab_size(o.vocab_size).num_labels(o.num_labels).max_positions(o.max_len);
  if (o.attention_dropout >= 0) model_config->attention_dropout(o.attention_dropout);
  if (absl::Status s = model_config->Validate(); !s.ok()) return s;
  return model_config;
}

// How the configuration runs the encoder: its checkpointing, layers and attention.
absl::StatusOr<models::ModelRuntime> RuntimeFor(const RunConfig& config, const RunOptions& o) {
  absl::StatusOr<models::CheckpointPolicy> policy =
      models::CheckpointPolicy::Parse(config.checkpoint);
  if (!policy.ok()) return policy.status();
  models::ModelRuntime runtime;
  runtime.checkpoint = *policy;
  runtime.fused_layers = !config.generic_layers;
  runtime.dense_attention_cudnn = o.sdpa_cudnn;
  // Packed rows with a block-diagonal mask must stay on dense SDPA; the encoder's automatic
  // choice would gather them into the varlen layout on a GPU.
  const bool varlen = config.strategy == Strategy::kPackedVarlen;
  runtime.attention = config.strategy == Strategy::kPackedDense ? models::AttentionBackend::kDense
                      : varlen                                  ? o.varlen_attention
                                                                : models::AttentionBackend::kAuto;
  return runtime;
}

train::TrainStepOptions StepOptionsFor(const RunConfig& config, const RunOptions& o) {
  train::TrainStepOptions step_options;
  step_options.amp = config.precision == Precision::kFp8    ? models::AmpMode::kFp8
                     : config.precision == Precision::kBf16 ? models::AmpMode::kBf16
                                                            : models::AmpMode::kOff;
  step_options.clip_norm = o.clip_norm;
  return step_options;
}

absl::StatusOr<std::unique_ptr<batching::Loader>> MakeLoader(
    const corpus::TokenizedCorpus& corpus, const std::vector<batching::BatchSpec>& specs,
    const RunOptions& o) {
  batching::LoaderOptions loader_options;
  loader_options.num_workers = o.loader_workers;
  loader_options.prefetch = o.prefetch;
  loader_options.collator.pad_id = o.pad_id;
  loader_options.device = o.device;
  return batching::Loader::Create(&corpus, specs, loader_options);
}

// What is known of the result before the first step: the optimizer's description and the
// counts and FLOPs of the timed batches.
RunResult PlannedResult(const RunConfig& config, const RunOptions& o, double clip_norm,
                        const std::vector<batching::BatchSpec>& timed,
                        const models::EncoderConfig& model_config) {
  RunResult r;
  r.config = config;
  r.optimizer = absl::StrCat("AdamW (fused multi-tensor kernel, at::_fused_adamw_; lr ", o.lr,
                             ", wd ", kWeightDecay, " except biases and norms), grad clip ",
                             clip_norm > 0 ? absl::StrCat(clip_norm) : "off",
                             ", through padless train's TrainStep");
  r.steps = o.steps;
  r.flops = TrainingFlops(timed, ModelShape::Of(model_config));
  r.distinct_shapes = batching::ComputePaddingStats(timed).distinct_shapes;
  for (const batching::BatchSpec& s : timed) {
    r.sequences += s.num_sequences();
    r.real_tokens += s.real_tokens();
    r.token_slots += s.token_slots();
  }
  return r;
}

// What the step loop drives, built by RunUnchecked.
struct StepLoop {
  const RunConfig& config;
  const RunOptions& o;
  int64_t total;  // warmup + timed + traced steps
  models::EncoderClassifier model;
  train::TrainStep& train_step;
  models::AmpMode amp;
  batching::Loader& loader;
  int64_t param_bytes;  // of the parameters, which is also what their gradients take
  std::optional<cuda::MemoryMeter>& meter;
};

// Warmup is over: the allocator's cache, cuDNN/cuBLAS plans and optimizer state exist.
void StartTiming(const StepLoop& loop, Clock::time_point& start, RunResult& r) {
  Synchronize(loop.o.device);
  if (loop.meter) {
    loop.meter->ResetPeak();
    // Gradients are dropped after every step, so they are counted from the parameter sizes.
    r.static_bytes = loop.meter->Snapshot().allocated_bytes + loop.param_bytes;
  }
  start = Clock::now();
}

// How far the host runs ahead of the GPU, measured without a profiler (one slows the host and
// opens gaps an unprofiled run does not have): once the host has enqueued a timed step, whether
// the GPU has already finished the step before (RunResult::host_lead_under_a_step).
class HostLeadProbe {
 public:
  explicit HostLeadProbe(const c10::Device& device) : on_(device.is_cuda()) {}

  void AfterTimedStep(RunResult& r) {
#ifdef PADLESS_TORCH_HAS_CUDA
    if (!on_) return;
    // The event recorded after the step before (none before the first timed step).
    if (enqueued_ > 0 && events_[(enqueued_ + 1) % 2].query()) ++r.host_lead_under_a_step;
    events_[enqueued_ % 2].record();
    ++enqueued_;
#else
    (void)r;
#endif
  }

 private:
  bool on_;
#ifdef PADLESS_TORCH_HAS_CUDA
  at::cuda::CUDAEvent events_[2];
  int64_t enqueued_ = 0;
#endif
};

// Trains step `step` on the loader's next batch; a timed step adds its wait for the batch and
// its loss (on the device) to `r` and `loss_sum`.
absl::Status TrainOneStep(const StepLoop& loop, int64_t step, bool timing, at::Tensor& loss_sum,
                          RunResult& r) {
  const Clock::time_point wait_start = Clock::now();
  absl::StatusOr<std::optional<batching::Batch>> next = loop.loader.Next();
  if (timing) r.data_wait_seconds += SecondsBetween(wait_start, Clock::now());
  if (!next.ok()) return next.status();
  if (!next->has_value()) {
    return absl::InternalError(absl::StrCat(loop.config.Name(), ": loader ended after ", step,
                                            " of ", loop.total, " batches"));
  }
  if (absl::Status s = loop.model->CheckBatch(**next); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat(loop.config.Name(), " step ", step, ": ", s.message()));
  }
  if (step == 0) {
    models::AutocastGuard autocast(loop.o.device.type(), loop.amp);
    r.backend = models::AttentionBackendName(loop.model->ResolveBackend(**next));
  }
  absl::StatusOr<train::StepResult> trained =
      loop.train_step.Run(step, loop.o.lr, {train::StepBatch{nullptr, std::move(**next)}});
  if (!trained.ok()) {
    return absl::Status(trained.status().code(), absl::StrCat(loop.config.Name(), " step ", step,
                                                              ": ", trained.status().message()));
  }
  // Accumulated on the device: reading the loss every step would sync the host with the GPU.
  if (timing) loss_sum.add_(trained->loss);
  return absl::OkStatus();
}

// Runs the warmup steps, the timed ones (measured into `r`) and the traced ones (their trace
// saved under trace_dir).
absl::Status RunSteps(const StepLoop& loop, RunResult& r) {
  const RunOptions& o = loop.o;
  const int64_t timed_end = o.warmup_steps + o.steps;
  at::Tensor loss_sum = at::zeros({}, at::TensorOptions().device(o.device).dtype(at::kFloat));
  Clock::time_point start;
  StepTrace trace(o.trace_host);
  HostLeadProbe lead(o.device);
  for (int64_t step = 0; step < loop.total; ++step) {
    const bool timing = step >= o.warmup_steps && step < timed_end;
    if (step == timed_end) {
      EndTiming(o.device, start, loop.meter, r);
      if (absl::Status s = trace.Start(); !s.ok()) return s;
    }
    if (step == o.warmup_steps) StartTiming(loop, start, r);
    if (absl::Status s = TrainOneStep(loop, step, timing, loss_sum, r); !s.ok()) return s;
    if (timing) lead.AfterTimedStep(r);
  }
  if (loop.total == timed_end) {
    EndTiming(o.device, start, loop.meter, r);
  } else {
    Synchronize(o.device);
    const std::string path = absl::StrCat(o.trace_dir, "/", TraceFileName(loop.config), ".json");
    if (absl::Status s = trace.Save(path); !s.ok()) return s;
  }
  r.mean_loss = loss_sum.item<double>() / static_cast<double>(o.steps);
  return absl::OkStatus();
}

absl::StatusOr<RunResult> RunUnchecked(const RunConfig& config,
                                       const corpus::TokenizedCorpus& corpus, const RunOptions& o) {
  if (o.steps < 1 || o.warmup_steps < 0) {
    return absl::InvalidArgumentError("--steps must be >= 1 and --warmup_steps >= 0");
  }
  const int64_t timed_end = o.warmup_steps + o.steps;
  const int64_t total = timed_end + (o.trace_dir.empty() ? 0 : o.trace_steps);
  absl::StatusOr<std::vector<batching::BatchSpec>> specs = PlanRun(config, corpus, o, total);
  if (!specs.ok()) return specs.status();
  const std::vector<batching::BatchSpec> timed(specs->begin() + o.warmup_steps,
                                               specs->begin() + timed_end);
  absl::StatusOr<models::EncoderConfig> model_config = ModelConfigFor(o);
  if (!model_config.ok()) return model_config.status();

  // Only CUDA memory is metered. On the CPU, MemoryMeter installs padless's counting allocator,
  // whose DataPtr context differs from its data pointer; CPU kernels that call
  // Allocator::raw_allocate (seen with fp32 training) then die on an internal assert. CPU runs
  // (the smoke test) report zero memory instead.
  std::optional<cuda::MemoryMeter> meter;
  if (o.device.is_cuda()) meter.emplace(o.device);
  at::manual_seed(o.seed);
  models::EncoderClassifier model(*model_config);
  model->to(o.device);
  model->train();
  absl::StatusOr<models::ModelRuntime> runtime = RuntimeFor(config, o);
  if (!runtime.ok()) return runtime.status();
  model->set_runtime(*runtime);
  // The step users run: `padless train`'s TrainStep with the trainer's optimizer (the fused
  // multi-tensor AdamW, no decay of biases and norms) and clipping as RunOptions says (none by
  // default, like the anchors: `padless train --clip-norm 0`). That includes its non-finite check,
  // decided on the device (no host sync per step; the bench never reads the outcome). The loss
  // stays on the device too. No loss scaling: the bench runs fp32, bf16 or fp8 (bf16 with FP8
  // GEMMs).
  train::AdamWParameters params = train::ParametersForAdamW(model);
  train::AdamWOptions adamw_options;
  adamw_options.weight_decay = kWeightDecay;
  train::FusedAdamW optimizer(params.params, params.decay, adamw_options);
  train::GradScalerOptions no_loss_scaling;
  no_loss_scaling.enabled = false;
  train::GradScaler scaler(no_loss_scaling);
  const train::TrainStepOptions step_options = StepOptionsFor(config, o);
  train::TrainStep train_step(model, params.params, optimizer, scaler, o.device, step_options);
  absl::StatusOr<std::unique_ptr<batching::Loader>> loader = MakeLoader(corpus, *specs, o);
  if (!loader.ok()) return loader.status();

  RunResult r = PlannedResult(config, o, step_options.clip_norm, timed, *model_config);
  const StepLoop loop{
      config, o, total, model, train_step, step_options.amp, **loader, ParamBytes(params.params),
      meter};
  if (absl::Status s = RunSteps(loop, r); !s.ok()) return s;
  return r;
}

}  // namespace

absl::StatusOr<RunResult> RunConfiguration(const RunConfig& config,
                                           const corpus::TokenizedCorpus& corpus,
                                           const RunOptions& options) {
  absl::StatusOr<RunResult> result;
  try {
    result = RunUnchecked(config, corpus, options);
  } catch (const c10::Error& e) {
    result = absl::InternalError(
        absl::StrCat(config.Name(), ": LibTorch error: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    result = absl::InternalError(absl::StrCat(config.Name(), ": ", e.what()));
  }
  // Everything of this configuration is gone now; hand the cache back so that the next one's
  // reserved peak is its own.
  if (options.device.is_cuda()) cuda::MemoryMeter(options.device).EmptyCache();
  return result;
}

absl::StatusOr<double> MeasureMatmulTflops(const c10::Device& device, int64_t n, int reps) {
#ifdef PADLESS_TORCH_HAS_CUDA
  if (!device.is_cuda()) {
    return absl::FailedPreconditionError("the bf16 matmul rate is measured on CUDA devices only");
  }
  try {
    const auto opts = at::TensorOptions().device(device).dtype(at::kBFloat16);
    const at::Tensor a = at::randn({n, n}, opts);
    const at::Tensor b = at::randn({n, n}, opts);
    at::Tensor c = at::empty({n, n}, opts);
    for (int i = 0; i < 3; ++i) at::mm_out(c, a, b);
    at::cuda::CUDAEvent begin(cudaEventDefault);
    at::cuda::CUDAEvent end(cudaEventDefault);
    begin.record();
    for (int i = 0; i < reps; ++i) at::mm_out(c, a, b);
    end.record();
    end.synchronize();
    const double ms = begin.elapsed_time(end);
    if (ms <= 0) return absl::InternalError("matmul timing: elapsed time is not positive");
    return 2.0 * static_cast<double>(n) * n * n * reps / (ms / 1000.0) / 1e12;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("matmul timing: ", e.what_without_backtrace()));
  }
#else
  (void)device;
  (void)n;
  (void)reps;
  return absl::FailedPreconditionError("LibTorch was built without CUDA");
#endif
}

std::string DeviceName(const c10::Device& device) {
#ifdef PADLESS_TORCH_HAS_CUDA
  if (device.is_cuda()) {
    try {
      return at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index())->name;
    } catch (const c10::Error& e) {
      return absl::StrCat("CUDA device (name unavailable: ", e.what_without_backtrace(), ")");
    }
  }
#endif
  return "CPU";
}

std::string TorchVersion() { return TORCH_VERSION; }

bool CudaAvailable() { return torch::cuda::is_available(); }

void SetTorchThreads(int n) {
  if (n > 0) at::set_num_threads(n);
}

}  // namespace padless::bench::e2e
