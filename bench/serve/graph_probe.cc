// CUDA graphs for the serving forward, measured on and off (issue 26): for batches of the first N
// texts of a file (the engine's kVarlen batches, built by the same collator), the model's inference
// forward (InferenceMode, autocast, PrepareInference's weights, as serve/device_worker.cc runs it)
// timed back to back eagerly, then captured once into a CUDA graph and replayed. Eager time per
// forward is the larger of the host's launch time and the GPU's time, so the ratio shows where
// launches bound a batch and a graph would pay. The replayed logits are checked against the eager
// ones. A forward that cannot be captured (a host sync, a pageable copy) is reported, not hidden.
//   padless_graph_probe --model DIR --data FILE [--texts 1,8,64,512] [--amp bf16] [--iters 50]
// One JSON line per batch size; GPU only.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/InferenceMode.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "padless/batching/collator.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/model_files/model_io.h"
#include "padless/models/autocast.h"

ABSL_FLAG(std::string, model, "", "model directory (padless's or Hugging Face's)");
ABSL_FLAG(std::string, data, "", "texts (TSV, CSV, JSONL or plain text)");
ABSL_FLAG(std::string, texts, "1,8,64,512", "batch sizes in texts, comma-separated");
ABSL_FLAG(std::string, amp, "bf16", "bf16, fp16 or fp8 (FP8 inference weights)");
ABSL_FLAG(int64_t, max_len, 512, "tokens per text at most");
ABSL_FLAG(int, iters, 50, "timed forwards per measurement");

namespace padless::bench::serve {
namespace {

using Clock = std::chrono::steady_clock;

// The first n texts as one kVarlen batch on the GPU, collated as the engine's batch former does.
absl::StatusOr<batching::Batch> MakeBatch(const model_files::LoadedModel& m,
                                          const std::vector<corpus::Example>& examples, int64_t n) {
  tokenize::EncodeOptions encode;
  encode.max_length = absl::GetFlag(FLAGS_max_len);
  std::vector<tokenize::Encoding> encodings;
  for (int64_t i = 0; i < n; ++i) {
    absl::StatusOr<tokenize::Encoding> e =
        m.tokenizer.Encode(examples[i % examples.size()].text, encode);
    if (!e.ok()) return e.status();
    encodings.push_back(*std::move(e));
  }
  std::vector<const tokenize::Encoding*> sequences;
  for (const tokenize::Encoding& e : encodings) sequences.push_back(&e);
  batching::CollatorOptions options;
  options.pin_memory = true;
  absl::StatusOr<batching::Batch> b =
      batching::Collator(options).CollateVarlen(sequences, /*with_types=*/false);
  if (!b.ok()) return b.status();
  return b->To(at::Device(at::kCUDA));
}

at::Tensor Forward(model_files::LoadedModel& m, const batching::Batch& b, models::AmpMode amp) {
  c10::InferenceMode inference;
  models::AutocastGuard autocast(at::kCUDA, amp);
  return m.model->forward(b);
}

// Milliseconds per call of f, `iters` calls back to back, then one device sync.
template <typename F>
double MsPerCall(F&& f, int iters) {
  torch::cuda::synchronize();
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iters; ++i) f();
  torch::cuda::synchronize();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count() / iters;
}

void Probe(model_files::LoadedModel& m, const batching::Batch& b, models::AmpMode amp, int64_t texts) {
  const int iters = absl::GetFlag(FLAGS_iters);
  // Side stream: graphs capture off the default stream; eager runs there too, for a like compare.
  const c10::cuda::CUDAStreamGuard stream(c10::cuda::getStreamFromPool());
  at::Tensor eager;
  for (int i = 0; i < 3; ++i) eager = Forward(m, b, amp);  // warm: plans, caches, allocator
  const double eager_ms = MsPerCall([&] { Forward(m, b, amp); }, iters);
  std::string line = absl::StrCat("{\"texts\": ", texts, ", \"tokens\": ", b.real_tokens,
                                  ", \"amp\": \"", absl::GetFlag(FLAGS_amp),
                                  "\", \"eager_ms\": ", eager_ms);
  try {
    at::cuda::CUDAGraph graph;
    at::Tensor captured;
    graph.capture_begin();
    captured = Forward(m, b, amp);
    graph.capture_end();
    graph.replay();
    torch::cuda::synchronize();
    const double diff = (captured.to(at::kFloat) - eager.to(at::kFloat)).abs().max().item<double>();
    const double graph_ms = MsPerCall([&] { graph.replay(); }, iters);
    absl::StrAppend(&line, ", \"graph_ms\": ", graph_ms, ", \"speedup\": ", eager_ms / graph_ms,
                    ", \"max_abs_logit_diff\": ", diff, "}");
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    what = what.substr(0, what.find('\n'));
    for (char& c : what) {
      if (c == '"' || c == '\\') c = '\'';
    }
    absl::StrAppend(&line, ", \"graph\": \"capture failed: ", what, "\"}");
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

absl::Status Run() {
  if (!torch::cuda::is_available()) return absl::FailedPreconditionError("needs a CUDA device");
  absl::StatusOr<models::AmpMode> amp = models::ParseAmpMode(absl::GetFlag(FLAGS_amp));
  if (!amp.ok()) return amp.status();
  absl::StatusOr<model_files::LoadedModel> m =
      model_files::LoadModelDir(absl::GetFlag(FLAGS_model), at::Device(at::kCUDA));
  if (!m.ok()) return m.status();
  m->model->eval();
  const bool fp8 = *amp == models::AmpMode::kFp8;
  m->model->PrepareInference(*amp == models::AmpMode::kFp16 ? at::kHalf : at::kBFloat16, fp8);
  absl::StatusOr<corpus::RawCorpus> corpus = corpus::ReadCorpus(absl::GetFlag(FLAGS_data), {});
  if (!corpus.ok()) return corpus.status();
  for (absl::string_view piece : absl::StrSplit(absl::GetFlag(FLAGS_texts), ',')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(piece, &n) || n <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--texts: not a positive count: ", piece));
    }
    absl::StatusOr<batching::Batch> b = MakeBatch(*m, corpus->examples, n);
    if (!b.ok()) return b.status();
    Probe(*m, *b, *amp, n);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace padless::bench::serve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::Status s = padless::bench::serve::Run(); !s.ok()) {
    std::fprintf(stderr, "padless_graph_probe: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
