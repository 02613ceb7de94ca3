// Trains one benchmark configuration for a fixed number of steps and measures it: real tokens/s,
// padding efficiency, peak memory, the time blocked on the loader, and the FLOPs of the real
// tokens. Also the device facts of the report: the dense bf16 matmul rate (the MFU denominator),
// the GPU name and the LibTorch version.
#ifndef PADLESS_BENCH_E2E_CONFIG_RUNNER_H_
#define PADLESS_BENCH_E2E_CONFIG_RUNNER_H_

#include <cstdint>
#include <string>

#include <c10/core/Device.h>

#include "absl/status/statusor.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/models/attention.h"
#include "run_config.h"

namespace padless::bench::e2e {

struct RunOptions {
  std::string preset = "base";  // models::EncoderConfig preset
  int64_t vocab_size = 16000;
  int64_t pad_id = 0;  // the corpus tokenizer's special_ids().pad
  int64_t num_labels = 2;
  int64_t max_len = 512;
  int64_t budget = 16384;  // token slots per step
  int warmup_steps = 10;
  int steps = 50;  // timed
  int loader_workers = 2;
  int prefetch = 4;
  double lr = 1e-4;
  // Gradient clipping of the training step (0: none). The Python anchors do not clip, so the
  // comparison runs without it by default; `padless train` clips at 1.0 unless --clip-norm 0.
  double clip_norm = 0;
  // true lets dense SDPA use cuDNN attention (ModelRuntime::dense_attention_cudnn): cuDNN builds
  // a new plan for every new sequence length, which batches of varying length pay for.
  bool sdpa_cudnn = false;
  // The attention backend of the varlen strategies (kAuto: FA2 under bf16 on a GPU; kVarlenFa3
  // runs FlashAttention-3 where built, for the calls without attention dropout).
  models::AttentionBackend varlen_attention = models::AttentionBackend::kAuto;
  // The model's dropout on the attention probabilities; negative: the preset's (0.1 for BERT).
  // The plain-PyTorch peer (bench/baselines/torch_packed.py) has none.
  double attention_dropout = -1;
  uint64_t seed = 1234;
  c10::Device device = c10::Device(c10::kCPU);
  // Non-empty: after the timed steps, `trace_steps` more steps run under the PyTorch profiler and
  // their trace goes to <trace_dir>/<configuration>.json (not part of the timing).
  std::string trace_dir;
  int trace_steps = 3;
  // false: the trace records the GPU's work only (step_trace.h says why).
  bool trace_host = true;
};

// What one configuration measured, over the timed steps only.
struct RunResult {
  RunConfig config;
  std::string backend;    // the attention backend the encoder resolved for the first batch
  std::string optimizer;  // e.g. "AdamW (fused, at::_fused_adamw_)"
  int64_t steps = 0;
  int64_t sequences = 0;
  int64_t real_tokens = 0;
  int64_t token_slots = 0;
  int64_t distinct_shapes = 0;   // of the timed batches
  double seconds = 0;            // wall time of the timed steps, device synchronized at both ends
  double data_wait_seconds = 0;  // host time blocked in Loader::Next during the timed steps
  // CUDA: timed steps (after the first) at whose end of enqueueing the GPU had already finished
  // the step before: the host led the GPU by less than a step there, so the GPU may have waited
  // for it. Near all of them: the host limits the run; near none: the GPU does.
  int64_t host_lead_under_a_step = 0;
  double flops = 0;                  // training FLOPs of the real tokens (TrainingFlops)
  int64_t peak_allocated_bytes = 0;  // since the reset after warmup
  int64_t peak_reserved_bytes = 0;
  // Weights + gradients + optimizer state, measured right before the first timed step.
  int64_t static_bytes = 0;
  double mean_loss = 0;  // over the timed steps (read once, at the end)

  double tokens_per_second() const { return seconds > 0 ? real_tokens / seconds : 0; }
  double padding_efficiency() const {
    return token_slots > 0 ? static_cast<double>(real_tokens) / token_slots : 0;
  }
  double step_ms() const { return steps > 0 ? 1000.0 * seconds / steps : 0; }
  double data_wait_share() const { return seconds > 0 ? data_wait_seconds / seconds : 0; }
  double host_lead_under_a_step_share() const {
    return steps > 1 ? static_cast<double>(host_lead_under_a_step) / (steps - 1) : 0;
  }
  int64_t activation_bytes() const { return peak_allocated_bytes - static_bytes; }
  double tflops() const { return seconds > 0 ? flops / seconds / 1e12 : 0; }
};

absl::StatusOr<RunResult> RunConfiguration(const RunConfig& config,
                                           const corpus::TokenizedCorpus& corpus,
                                           const RunOptions& options);

// Dense bf16 matmul rate in TFLOP/s: n x n x n products timed with CUDA events after a warmup.
// FailedPrecondition on a CPU device (no MFU there).
absl::StatusOr<double> MeasureMatmulTflops(const c10::Device& device, int64_t n = 8192,
                                           int reps = 20);

// "NVIDIA H200" (or "CPU"), and LibTorch's version string.
std::string DeviceName(const c10::Device& device);
std::string TorchVersion();
bool CudaAvailable();
// LibTorch's intra-op CPU threads (at::set_num_threads); n <= 0 keeps the default.
void SetTorchThreads(int n);

}  // namespace padless::bench::e2e

#endif  // PADLESS_BENCH_E2E_CONFIG_RUNNER_H_
