// The Python anchors (bench/baselines/hf_bert.py and torch_packed.py), run as subprocesses in the
// same invocation as padless so that ratios compare runs on one GPU under one set of conditions.
// Each script appends one JSON line per strategy; this parses them into AnchorRow.
#ifndef PADLESS_BENCH_E2E_ANCHORS_H_
#define PADLESS_BENCH_E2E_ANCHORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace padless::bench::e2e {

struct AnchorRow {
  std::string impl;      // "hf_transformers" or "plain_pytorch"
  std::string strategy;  // e.g. "pad_longest", "packed_varlen"
  bool checkpoint = false;
  double real_tokens_per_s = 0;
  double padding_efficiency = 0;
  double step_ms = 0;
  double tflops = 0;
  double matmul_tflops = 0;
  double mfu = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t static_bytes = 0;  // weights + grads + optimizer state
  std::string torch;
  std::string gpu;

  std::string Name() const;  // "hf_transformers:pad_longest/ckpt_none"
  int64_t activation_bytes() const { return peak_allocated_bytes - static_bytes; }
};

// Parses the JSON lines of the anchors' --json file; `source` names it in errors (source:line).
absl::StatusOr<std::vector<AnchorRow>> ParseAnchorJsonLines(absl::string_view text,
                                                            const std::string& source);

struct AnchorOptions {
  std::string python = "python3";
  std::string baselines_dir;  // holds hf_bert.py and torch_packed.py
  std::string lengths_path;
  std::string out_dir;  // JSON lines and logs of every script run go here
  std::string hf_strategies = "pad_to_max,pad_longest,group_by_length";
  int64_t budget = 16384;
  int64_t max_len = 512;
  int64_t vocab_size = 16000;
  int warmup_steps = 10;
  int steps = 50;
  uint64_t seed = 1234;
  std::vector<bool> checkpoint_policies = {false};  // false: none, true: per-layer checkpointing
};

// One script invocation and what came of it.
struct AnchorRun {
  std::string command;
  std::string log_path;
  int exit_code = 0;
  std::string error;  // empty on success
  std::vector<AnchorRow> rows;
};

// Runs hf_bert.py and torch_packed.py once per checkpoint policy. A failing script does not stop
// the others; its AnchorRun carries the error and the tail of its log.
std::vector<AnchorRun> RunAnchors(const AnchorOptions& options);

// Single-quotes `arg` for /bin/sh.
std::string ShellQuote(absl::string_view arg);

}  // namespace padless::bench::e2e

#endif  // PADLESS_BENCH_E2E_ANCHORS_H_
