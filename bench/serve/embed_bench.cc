// padless_bench_embed: the engine as an embedding or rerank service sees it, offline (issue 44).
// InferenceEngine::Load of a sentence-transformers directory (an embedding model) or of a
// cross-encoder (a reranker); every text (or pair) of --data submitted in chunks with the queue
// kept full; each embedding finished on the host as /embed does (FinishEmbedding: the model's
// Normalize, all dimensions), each reranker score read: text in, vectors (scores) out on the host.
// Prints one JSON line in the fields of bench/baselines/embed_anchors.py (texts/s, real tokens/s,
// MFU over the dense bf16 matmul rate measured in the same run), and writes the outputs of the
// first --keep inputs as a float32 .npy ([keep, dimension], or [keep, 1] scores) so that
// bench/serve/embed_table.py compares them with sentence-transformers' in the same call.
// bench/serve/embed_serve.sh runs it beside the anchors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "config_runner.h"
#include "padless/base/npy_writer.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/cuda/kernels/fa3_attention.h"
#include "padless/serve/inference_engine.h"
#include "run_config.h"

ABSL_FLAG(std::string, model, "",
          "a sentence-transformers directory (embeddings) or a cross-encoder (rerank)");
ABSL_FLAG(std::string, data, "",
          "TSV/CSV/JSONL: texts to embed, or (query, text) pairs to score (label, text, "
          "text_pair)");
ABSL_FLAG(int64_t, limit, 0, "at most this many inputs (0: all)");
ABSL_FLAG(int64_t, warmup, 512, "inputs run before timing");
ABSL_FLAG(std::string, device, "cuda", "cuda or cpu");
ABSL_FLAG(std::string, amp, "bf16",
          "off (fp32), bf16, fp16, fp8 (FP8 weights) or int8 (int8 weights, CPU)");
ABSL_FLAG(int64_t, max_len, 512, "tokens per input, special tokens included");
ABSL_FLAG(int64_t, max_batch_tokens, 32768, "engine: real tokens per device batch (0: default)");
ABSL_FLAG(int64_t, max_batch_requests, 1024, "engine: sequences per device batch");
ABSL_FLAG(int64_t, max_queued, 8192, "engine: requests accepted but not finished");
ABSL_FLAG(int64_t, submit_chunk, 64, "inputs per Submit call");
ABSL_FLAG(int, tokenizer_threads, 0, "engine: tokenizer threads (0: auto)");
ABSL_FLAG(int64_t, cuda_graph_max_tokens, 4096,
          "engine: CUDA graphs below this many tokens (0: off)");
ABSL_FLAG(std::string, attention, "auto",
          "engine: attention backend (auto, flash, fa3, cudnn, efficient, dense, grouped, "
          "reference); fa3 runs FA3 only in a build with PADLESS_FA3_ATTENTION (\"fa3_built\" in "
          "the JSON line), FA2 otherwise");
ABSL_FLAG(int64_t, keep, 64, "outputs of the first inputs written to --vectors_out");
ABSL_FLAG(std::string, vectors_out, "", "write the first --keep outputs here (.npy, float32)");
ABSL_FLAG(std::string, label, "", "the 'name' field (default padless_embed / padless_rerank)");

namespace padless::bench::serve {
namespace {

using Clock = std::chrono::steady_clock;
using padless::serve::EngineRequest;
using padless::serve::EngineResult;
using padless::serve::InferenceEngine;
using padless::serve::ModelKind;
using padless::serve::RequestHandle;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Pairs become (query, text) requests, as /rerank sends them: text = the query, pair = the text.
absl::StatusOr<std::vector<EngineRequest>> ReadRequests(const std::string& path, int64_t limit) {
  corpus::ReaderOptions options;
  options.require_label = false;
  absl::StatusOr<corpus::RawCorpus> corpus = corpus::ReadCorpus(path, options);
  if (!corpus.ok()) return corpus.status();
  std::vector<EngineRequest> out;
  for (corpus::Example& e : corpus->examples) {
    if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
    EngineRequest r;
    r.text = std::move(e.text);
    if (e.has_pair) r.pair = std::move(e.text_pair);
    out.push_back(std::move(r));
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no texts"));
  return out;
}

struct OfflineResult {
  double seconds = 0;
  int64_t inputs = 0;
  int64_t tokens = 0;
  double flops = 0;
  int64_t width = 0;                     // values per output: the dimension, or 1 (a score)
  std::vector<std::vector<float>> kept;  // the first --keep outputs, in input order
};

// What a service does with one result before answering: the embedding as /embed returns it by
// default (normalized when the model's pipeline ends with Normalize), or the reranker's score
// (the sigmoid of its one logit). Non-finite values are an error, not a number to time.
absl::StatusOr<std::vector<float>> FinishOutput(const InferenceEngine& engine, EngineResult& r) {
  std::vector<float> out;
  if (engine.kind() == ModelKind::kEmbedding) {
    const padless::serve::EmbeddingInfo* info = engine.embedding_info();
    if (absl::Status s = padless::serve::FinishEmbedding(r.embedding, info->normalize, 0);
        !s.ok()) {
      return s;
    }
    if (static_cast<int64_t>(r.embedding.size()) != info->dimension) {
      return absl::InternalError(absl::StrCat("an embedding of ", r.embedding.size(),
                                              " values, the model's dimension is ",
                                              info->dimension));
    }
    out = std::move(r.embedding);
  } else {
    if (r.probabilities.size() != 1) {
      return absl::InternalError(
          absl::StrCat("a reranker result with ", r.probabilities.size(), " scores, not 1"));
    }
    out = {r.probabilities[0]};
  }
  for (float v : out) {
    if (!std::isfinite(v)) return absl::InternalError("a non-finite output value");
  }
  return out;
}

// Submits every request in chunks, keeping at most max_queued / 2 in flight, and finishes each
// result as it comes back.
absl::StatusOr<OfflineResult> RunOffline(InferenceEngine& engine,
                                         const std::vector<EngineRequest>& requests, size_t keep) {
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_submit_chunk)));
  const size_t max_in_flight =
      static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_max_queued) / 2));
  const e2e::ModelShape shape = e2e::ModelShape::Of(engine.model().config);
  OfflineResult r;
  std::deque<RequestHandle> in_flight;
  auto collect = [&]() -> absl::Status {
    for (absl::StatusOr<EngineResult>& c : in_flight.front().Wait()) {
      if (!c.ok()) return c.status();
      r.tokens += c->tokens;
      r.flops += e2e::ForwardFlops(c->tokens, shape);
      absl::StatusOr<std::vector<float>> out = FinishOutput(engine, *c);
      if (!out.ok()) return out.status();
      r.width = static_cast<int64_t>(out->size());
      if (r.kept.size() < keep) r.kept.push_back(*std::move(out));
    }
    in_flight.pop_front();
    return absl::OkStatus();
  };
  const Clock::time_point start = Clock::now();
  for (size_t i = 0; i < requests.size(); i += chunk) {
    const size_t n = std::min(chunk, requests.size() - i);
    while (in_flight.size() * chunk >= max_in_flight) {
      if (absl::Status s = collect(); !s.ok()) return s;
    }
    absl::StatusOr<RequestHandle> h = engine.Submit(absl::MakeConstSpan(&requests[i], n));
    if (!h.ok()) return h.status();
    in_flight.push_back(*std::move(h));
  }
  while (!in_flight.empty()) {
    if (absl::Status s = collect(); !s.ok()) return s;
  }
  r.seconds = Seconds(Clock::now() - start);
  r.inputs = static_cast<int64_t>(requests.size());
  return r;
}

absl::StatusOr<std::unique_ptr<InferenceEngine>> LoadEngine() {
  padless::serve::EngineOptions o;
  o.device = c10::Device(absl::GetFlag(FLAGS_device) == "cuda" ? c10::kCUDA : c10::kCPU);
  o.int8_weights = absl::GetFlag(FLAGS_amp) == "int8";
  if (!o.int8_weights) {
    absl::StatusOr<models::AmpMode> amp = models::ParseAmpMode(absl::GetFlag(FLAGS_amp));
    if (!amp.ok()) return amp.status();
    o.amp = *amp;
  }
  o.max_len = absl::GetFlag(FLAGS_max_len);
  o.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  o.max_batch_requests = absl::GetFlag(FLAGS_max_batch_requests);
  o.max_queued_requests = absl::GetFlag(FLAGS_max_queued);
  o.tokenizer_threads = absl::GetFlag(FLAGS_tokenizer_threads);
  o.cuda_graph_max_tokens = absl::GetFlag(FLAGS_cuda_graph_max_tokens);
  absl::StatusOr<models::AttentionBackend> attention =
      models::ParseAttentionBackend(absl::GetFlag(FLAGS_attention));
  if (!attention.ok()) return attention.status();
  o.attention = *attention;
  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine =
      InferenceEngine::Load(absl::GetFlag(FLAGS_model), o);
  if (!engine.ok()) return engine.status();
  if ((*engine)->kind() == ModelKind::kClassifier) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::GetFlag(FLAGS_model),
                     " loads as a classifier; this bench takes an embedding model or a reranker "
                     "(padless_bench_serve measures classifiers)"));
  }
  if ((*engine)->kind() == ModelKind::kEmbedding && (*engine)->embedding_info() == nullptr) {
    return absl::InternalError("an embedding engine without its EmbeddingInfo");
  }
  return engine;
}

absl::Status WriteKept(const OfflineResult& r, const std::string& path) {
  absl::StatusOr<std::unique_ptr<base::NpyWriter>> npy =
      base::NpyWriter::Open(path, static_cast<int64_t>(r.kept.size()), r.width);
  if (!npy.ok()) return npy.status();
  for (const std::vector<float>& row : r.kept) {
    if (absl::Status s = (*npy)->AppendRow(row); !s.ok()) return s;
  }
  return (*npy)->Commit();
}

void PrintOffline(const InferenceEngine& engine, const OfflineResult& r, double matmul_tflops,
                  const std::string& device) {
  const bool embed = engine.kind() == ModelKind::kEmbedding;
  std::string name = absl::GetFlag(FLAGS_label);
  if (name.empty()) name = embed ? "padless_embed" : "padless_rerank";
  const double tflops = r.flops / r.seconds / 1e12;
  // fa3_built: without FA3 in the build, "fa3" runs FA2.
  std::printf(
      "{\"name\": \"%s\", \"task\": \"%s\", \"mode\": \"offline\", \"device\": \"%s\", "
      "\"amp\": \"%s\", \"attention\": \"%s\", \"fa3_built\": %s, \"texts\": %lld, "
      "\"tokens\": %lld, \"seconds\": %.4f, \"texts_per_s\": %.1f, \"real_tokens_per_s\": %.1f, "
      "\"tflops\": %.4f, \"matmul_tflops\": %.1f, \"mfu\": %.4f, \"dimension\": %lld}\n",
      name.c_str(), embed ? "embed" : "rerank", device.c_str(), absl::GetFlag(FLAGS_amp).c_str(),
      models::AttentionBackendName(engine.options().attention).c_str(),
      cuda::Fa3AttentionBuilt() ? "true" : "false", static_cast<long long>(r.inputs),
      static_cast<long long>(r.tokens), r.seconds, r.inputs / r.seconds, r.tokens / r.seconds,
      tflops, matmul_tflops, matmul_tflops > 0 ? tflops / matmul_tflops : 0.0,
      static_cast<long long>(r.width));
  std::fflush(stdout);
}

absl::Status Run() {
  absl::StatusOr<std::vector<EngineRequest>> requests =
      ReadRequests(absl::GetFlag(FLAGS_data), absl::GetFlag(FLAGS_limit));
  if (!requests.ok()) return requests.status();
  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine = LoadEngine();
  if (!engine.ok()) return engine.status();
  const bool pairs = (*requests)[0].pair.has_value();
  if (((*engine)->kind() == ModelKind::kReranker) != pairs) {
    return absl::InvalidArgumentError(absl::StrCat(
        absl::GetFlag(FLAGS_model), " is a ", padless::serve::ModelKindName((*engine)->kind()),
        " but ", absl::GetFlag(FLAGS_data), pairs ? " holds pairs" : " holds single texts"));
  }
  const c10::Device device = (*engine)->options().device;
  absl::StatusOr<double> matmul = e2e::MeasureMatmulTflops(device);
  const int64_t warm = std::min<int64_t>(absl::GetFlag(FLAGS_warmup), requests->size());
  absl::StatusOr<OfflineResult> warmup = RunOffline(
      **engine, std::vector<EngineRequest>(requests->begin(), requests->begin() + warm), 0);
  if (!warmup.ok()) return warmup.status();
  const size_t keep = static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_keep)));
  absl::StatusOr<OfflineResult> offline = RunOffline(**engine, *requests, keep);
  if (!offline.ok()) return offline.status();
  PrintOffline(**engine, *offline, matmul.ok() ? *matmul : 0.0, e2e::DeviceName(device));
  if (absl::GetFlag(FLAGS_vectors_out).empty()) return absl::OkStatus();
  return WriteKept(*offline, absl::GetFlag(FLAGS_vectors_out));
}

}  // namespace
}  // namespace padless::bench::serve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_model).empty() || absl::GetFlag(FLAGS_data).empty()) {
    std::fprintf(stderr, "padless_bench_embed: --model and --data are required\n");
    return 2;
  }
  const absl::Status s = padless::bench::serve::Run();
  if (!s.ok()) {
    std::fprintf(stderr, "padless_bench_embed: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
