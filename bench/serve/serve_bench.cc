// padless_bench_serve: the serving engine measured as a service sees it (issue 26).
//   offline: every text of --data through InferenceEngine from raw text to probabilities, the
//            queue kept full; texts/s, real tokens/s and MFU (forward FLOPs over the measured
//            dense bf16 matmul rate of the same run).
//   online:  single-text requests arriving as a Poisson process at --loads x the offline rate for
//            --online_seconds each; p50/p90/p99 latency, throughput, requests refused (429).
// Prints one JSON line per measurement (the anchors in bench/baselines/ print the same fields),
// and writes the token lengths the engine saw (--lengths_out) so that the model-only anchors run
// the very same sequences. bench/serve/h200_serve.sh runs it with the anchors in one call.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "config_runner.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/cuda/kernels/fa3_attention.h"
#include "padless/model_files/model_io.h"
#include "padless/serve/inference_engine.h"
#include "run_config.h"
#include "step_trace.h"

ABSL_FLAG(std::string, model, "", "model directory (padless's or a Hugging Face one)");
ABSL_FLAG(std::string, data, "", "TSV/CSV/JSONL file whose texts are classified");
ABSL_FLAG(int64_t, limit, 0, "classify at most this many texts (0: all)");
ABSL_FLAG(int64_t, warmup, 512, "texts classified before timing");
ABSL_FLAG(std::string, device, "cuda", "cuda or cpu");
ABSL_FLAG(std::string, amp, "bf16",
          "off (fp32), bf16, fp16, fp8 (FP8 weights) or int8 (int8 weights, CPU)");
ABSL_FLAG(int64_t, max_len, 512, "tokens per text, special tokens included");
ABSL_FLAG(int64_t, max_batch_tokens, 32768, "engine: real tokens per device batch");
ABSL_FLAG(int64_t, max_batch_requests, 1024, "engine: sequences per device batch");
ABSL_FLAG(int64_t, max_queued, 8192, "engine: requests accepted but not finished");
ABSL_FLAG(int64_t, submit_chunk, 64, "offline: texts per Submit call");
ABSL_FLAG(int, tokenizer_threads, 0, "engine: tokenizer threads (0: auto)");
ABSL_FLAG(int64_t, cuda_graph_max_tokens, 4096,
          "engine: CUDA graphs below this many tokens (0: off)");
ABSL_FLAG(std::string, attention, "auto",
          "engine: attention backend (auto, flash, fa3, cudnn, efficient, dense, grouped, "
          "reference); fa3 runs FA3 only in a build with PADLESS_FA3_ATTENTION (\"fa3_built\" in "
          "the JSON line), FA2 otherwise");
ABSL_FLAG(bool, last_layer_all_rows, false,
          "compute every row of the last layer (ModelRuntime::last_layer_rows_only off), to "
          "measure what computing the [CLS] rows alone saves");
ABSL_FLAG(std::string, loads, "0.75,1.0", "online: arrival rates as fractions of offline");
ABSL_FLAG(double, online_seconds, 8, "online: seconds of arrivals per load");
ABSL_FLAG(std::string, lengths_out, "", "write each text's token count, one per line");
ABSL_FLAG(std::string, label, "padless_engine", "the 'name' field of the JSON lines");
ABSL_FLAG(std::string, trace, "",
          "write a GPU-only Kineto trace of an offline pass over --trace_texts texts here "
          "(bench/e2e/trace_summary.py sums it per kernel family)");
ABSL_FLAG(int64_t, trace_texts, 2000, "texts in the traced pass");

namespace padless::bench::serve {
namespace {

using Clock = std::chrono::steady_clock;
using padless::serve::EngineResult;
using padless::serve::EngineRequest;
using padless::serve::InferenceEngine;
using padless::serve::RequestHandle;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

absl::StatusOr<std::vector<EngineRequest>> ReadRequests(const std::string& path, int64_t limit) {
  absl::StatusOr<corpus::RawCorpus> corpus = corpus::ReadCorpus(path, {});
  if (!corpus.ok()) return corpus.status();
  std::vector<EngineRequest> out;
  for (const corpus::Example& e : corpus->examples) {
    if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
    EngineRequest r;
    r.text = e.text;
    if (e.has_pair) r.pair = e.text_pair;
    out.push_back(std::move(r));
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no texts"));
  return out;
}

// The served model's shape, for the forward FLOPs (run_config.h's ForwardFlops, as the e2e bench).
struct OfflineResult {
  double seconds = 0;
  int64_t texts = 0;
  int64_t tokens = 0;
  double flops = 0;
  std::vector<int64_t> lengths;  // per text, the engine's token count (windows summed)
};

// Submits every request in chunks, keeping at most `max_queued` in flight, and waits for all.
absl::StatusOr<OfflineResult> RunOffline(InferenceEngine& engine,
                                         const std::vector<EngineRequest>& requests) {
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_submit_chunk)));
  const size_t max_in_flight =
      static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_max_queued) / 2));
  OfflineResult r;
  std::deque<RequestHandle> in_flight;
  auto collect = [&]() -> absl::Status {
    for (absl::StatusOr<EngineResult>& c : in_flight.front().Wait()) {
      if (!c.ok()) return c.status();
      r.lengths.push_back(c->tokens);
      r.tokens += c->tokens;
      r.flops += e2e::ForwardFlops(c->tokens, e2e::ModelShape::Of(engine.model().config));
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
  r.texts = static_cast<int64_t>(requests.size());
  return r;
}

struct OnlineResult {
  double load = 0;
  double offered_per_s = 0;
  double completed_per_s = 0;
  int64_t refused = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  double graphed_share = 0;  // of the device batches, those that replayed a CUDA graph
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - 1);
  return v[i];
}

// Open-loop Poisson arrivals of single texts at `rate` per second for `seconds`; a collector
// thread waits on the handles in arrival order (the engine serves in FIFO order).
OnlineResult RunOnline(InferenceEngine& engine, const std::vector<EngineRequest>& requests,
                       double rate, double seconds) {
  struct Pending {
    Clock::time_point sent;
    RequestHandle handle;
  };
  std::mutex mu;
  std::deque<Pending> pending;
  bool done_sending = false;
  std::vector<double> latencies_ms;
  std::thread collector([&] {
    for (;;) {
      std::unique_lock<std::mutex> lock(mu);
      if (pending.empty()) {
        if (done_sending) return;
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      Pending p = std::move(pending.front());
      pending.pop_front();
      lock.unlock();
      p.handle.Wait();
      latencies_ms.push_back(1e3 * Seconds(Clock::now() - p.sent));
    }
  });
  OnlineResult r;
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> gap(rate);
  const Clock::time_point start = Clock::now();
  Clock::time_point next = start;
  int64_t sent = 0;
  while (Seconds(next - start) < seconds) {
    std::this_thread::sleep_until(next);
    absl::StatusOr<RequestHandle> h =
        engine.Submit(absl::MakeConstSpan(&requests[sent % requests.size()], 1));
    ++sent;
    if (!h.ok()) {
      ++r.refused;
    } else {
      std::lock_guard<std::mutex> lock(mu);
      pending.push_back({Clock::now(), *std::move(h)});
    }
    next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done_sending = true;
  }
  collector.join();
  const double elapsed = Seconds(Clock::now() - start);
  r.offered_per_s = sent / seconds;
  r.completed_per_s = latencies_ms.size() / elapsed;
  r.p50_ms = Percentile(latencies_ms, 0.50);
  r.p90_ms = Percentile(latencies_ms, 0.90);
  r.p99_ms = Percentile(latencies_ms, 0.99);
  r.max_ms = Percentile(latencies_ms, 1.0);
  return r;
}

// Mean device time of the batches that were at least 90% full, in ms: "one full batch".
class BatchTimes {
 public:
  void Observe(const padless::serve::BatchStats& s, int64_t budget) {
    if (s.tokens * 10 < budget * 9) return;
    std::lock_guard<std::mutex> lock(mu_);
    sum_ms_ += 1e-6 * static_cast<double>(s.device_time.count());
    ++count_;
  }
  double MeanMs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_ == 0 ? 0 : sum_ms_ / count_;
  }

 private:
  mutable std::mutex mu_;
  double sum_ms_ = 0;
  int64_t count_ = 0;
};

absl::StatusOr<std::unique_ptr<InferenceEngine>> MakeEngine() {
  padless::serve::EngineOptions o;
  o.device = c10::Device(absl::GetFlag(FLAGS_device) == "cuda" ? c10::kCUDA : c10::kCPU);
  // int8: fp32 with int8 weights on the CPU (EngineOptions::int8_weights), as predict/serve read
  // it.
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
  absl::StatusOr<model_files::LoadedModel> loaded =
      model_files::LoadModelDir(absl::GetFlag(FLAGS_model), o.device);
  if (!loaded.ok()) return loaded.status();
  models::ModelRuntime runtime = loaded->model->runtime();
  runtime.last_layer_rows_only = !absl::GetFlag(FLAGS_last_layer_all_rows);
  loaded->model->set_runtime(runtime);
  return InferenceEngine::Create(*std::move(loaded), o);
}

// The attention backend the engine ran, and whether this build has FA3 at all (without it,
// "fa3" runs FA2): two JSON fields.
std::string AttentionFields(models::AttentionBackend attention) {
  return absl::StrCat("\"attention\": \"", models::AttentionBackendName(attention),
                      "\", \"fa3_built\": ", cuda::Fa3AttentionBuilt() ? "true" : "false");
}

void PrintOffline(const OfflineResult& r, double matmul_tflops, const std::string& device,
                  models::AttentionBackend attention) {
  const double tflops = r.flops / r.seconds / 1e12;
  std::printf(
      "{\"name\": \"%s\", \"mode\": \"offline\", \"device\": \"%s\", \"amp\": \"%s\", %s, "
      "\"texts\": %lld, \"seconds\": %.4f, \"texts_per_s\": %.1f, \"real_tokens_per_s\": %.1f, "
      "\"tflops\": %.4f, \"matmul_tflops\": %.1f, \"mfu\": %.4f}\n",
      absl::GetFlag(FLAGS_label).c_str(), device.c_str(), absl::GetFlag(FLAGS_amp).c_str(),
      AttentionFields(attention).c_str(), static_cast<long long>(r.texts), r.seconds,
      r.texts / r.seconds, r.tokens / r.seconds, tflops, matmul_tflops,
      matmul_tflops > 0 ? tflops / matmul_tflops : 0.0);
}

void PrintOnline(const OnlineResult& r, double offline_per_s, double full_batch_ms,
                 models::AttentionBackend attention) {
  std::printf(
      "{\"name\": \"%s\", \"mode\": \"online\", %s, \"load\": %.2f, "
      "\"offered_per_s\": %.1f, \"completed_per_s\": %.1f, \"vs_offline\": %.3f, "
      "\"refused\": %lld, \"p50_ms\": %.2f, \"p90_ms\": %.2f, \"p99_ms\": %.2f, "
      "\"max_ms\": %.2f, \"full_batch_ms\": %.2f, \"p99_over_full_batch\": %.2f, "
      "\"graphed_share\": %.3f}\n",
      absl::GetFlag(FLAGS_label).c_str(), AttentionFields(attention).c_str(), r.load,
      r.offered_per_s, r.completed_per_s, r.completed_per_s / offline_per_s,
      static_cast<long long>(r.refused), r.p50_ms, r.p90_ms, r.p99_ms, r.max_ms, full_batch_ms,
      full_batch_ms > 0 ? r.p99_ms / full_batch_ms : 0.0, r.graphed_share);
}

absl::Status WriteLengths(const std::vector<int64_t>& lengths, const std::string& path) {
  std::string text;
  for (int64_t n : lengths) absl::StrAppend(&text, n, "\n");
  return base::WriteFileAtomically(path, text);
}

// A GPU-only trace (no host operators: they would open gaps that an untraced run does not have)
// of one offline pass over the first texts, after the timed runs.
absl::Status TraceOffline(InferenceEngine& engine, const std::vector<EngineRequest>& requests) {
  const int64_t n = std::min<int64_t>(absl::GetFlag(FLAGS_trace_texts), requests.size());
  e2e::StepTrace trace(/*record_host=*/false);
  if (absl::Status s = trace.Start(); !s.ok()) return s;
  absl::StatusOr<OfflineResult> r =
      RunOffline(engine, std::vector<EngineRequest>(requests.begin(), requests.begin() + n));
  if (!r.ok()) return r.status();
  return trace.Save(absl::GetFlag(FLAGS_trace));
}

absl::Status Run() {
  absl::StatusOr<std::vector<EngineRequest>> requests =
      ReadRequests(absl::GetFlag(FLAGS_data), absl::GetFlag(FLAGS_limit));
  if (!requests.ok()) return requests.status();
  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine = MakeEngine();
  if (!engine.ok()) return engine.status();
  BatchTimes batch_times;
  const int64_t budget = (*engine)->options().max_batch_tokens;
  (*engine)->SetBatchObserver(
      [&](const padless::serve::BatchStats& s) { batch_times.Observe(s, budget); });
  const c10::Device device = (*engine)->options().device;
  absl::StatusOr<double> matmul = e2e::MeasureMatmulTflops(device);
  const int64_t warm = std::min<int64_t>(absl::GetFlag(FLAGS_warmup), requests->size());
  absl::StatusOr<OfflineResult> warmup = RunOffline(
      **engine, std::vector<EngineRequest>(requests->begin(), requests->begin() + warm));
  if (!warmup.ok()) return warmup.status();
  absl::StatusOr<OfflineResult> offline = RunOffline(**engine, *requests);
  if (!offline.ok()) return offline.status();
  const models::AttentionBackend attention = (*engine)->options().attention;
  PrintOffline(*offline, matmul.ok() ? *matmul : 0.0, e2e::DeviceName(device), attention);
  if (!absl::GetFlag(FLAGS_lengths_out).empty()) {
    if (absl::Status s = WriteLengths(offline->lengths, absl::GetFlag(FLAGS_lengths_out)); !s.ok())
      return s;
  }
  if (!absl::GetFlag(FLAGS_trace).empty()) {
    if (absl::Status s = TraceOffline(**engine, *requests); !s.ok()) return s;
  }
  const double offline_rate = offline->texts / offline->seconds;
  for (absl::string_view piece :
       absl::StrSplit(absl::GetFlag(FLAGS_loads), ',', absl::SkipEmpty())) {
    double load = 0;
    if (!absl::SimpleAtod(piece, &load) || load <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--loads: not a positive number: ", piece));
    }
    const padless::serve::EngineStats before = (*engine)->stats();
    OnlineResult r =
        RunOnline(**engine, *requests, load * offline_rate, absl::GetFlag(FLAGS_online_seconds));
    const padless::serve::EngineStats after = (*engine)->stats();
    r.load = load;
    r.graphed_share = static_cast<double>(after.graphed_batches - before.graphed_batches) /
                      std::max<int64_t>(1, after.batches - before.batches);
    PrintOnline(r, offline_rate, batch_times.MeanMs(), attention);
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace padless::bench::serve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_model).empty() || absl::GetFlag(FLAGS_data).empty()) {
    std::fprintf(stderr, "padless_bench_serve: --model and --data are required\n");
    return 2;
  }
  const absl::Status s = padless::bench::serve::Run();
  if (!s.ok()) {
    std::fprintf(stderr, "padless_bench_serve: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
