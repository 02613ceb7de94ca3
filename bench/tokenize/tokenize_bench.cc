// Tokenizer throughput on ../shared/data/imdb_train.tsv: padless's batch encoder (EncodeTexts,
// which adds [CLS]/[SEP], truncates and builds a TokenizedCorpus) against the plain SentencePiece
// Encode loop, in the same run. Counters:
//   MB/s (bytes_per_second) and tokens_per_s for each benchmark;
//   BM_OverheadAndScaling: overhead = padless 1-thread time / SentencePiece loop time (target
//   <= 1.10), scaling = padless 1-thread time / N-thread time, efficiency = scaling / N
//   (target >= 0.8), where N = hardware concurrency; plus CPU-time views of the same runs
//   (overhead_cpu, work_inflation, parallelism) that stay meaningful on a loaded machine.
// The model is a 16k unigram model trained on 3000 reviews (cached in /tmp), as in the reference
// figures in LIBTORCH.md. `--smoke` uses 300 reviews and a 2k model so CI can run the suite fast.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "padless/corpus/batch_encoder.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/tokenize/tokenizer.h"
#include "spm_baseline.h"

namespace padless::bench {
namespace {

using corpus::BatchEncodeOptions;
using tokenize::Tokenizer;

bool g_smoke = false;
// Set when a benchmark fails for a reason other than missing data, so the smoke test fails too.
bool g_failed = false;

void Fail(benchmark::State& state, const std::string& why) {
  g_failed = true;
  state.SkipWithError(why.c_str());
}

struct Data {
  std::unique_ptr<Tokenizer> tokenizer;
  SpmBaseline baseline;
  std::vector<std::string> texts;
  int64_t bytes = 0;
  std::string error;  // set when the data or model is unavailable: benchmarks then skip
};

std::unique_ptr<Tokenizer> LoadOrTrainModel(const std::vector<std::string>& texts, int vocab,
                                            std::string* error) {
  const std::string path =
      absl::StrCat("/tmp/padless_bench_imdb_", texts.size(), "_", vocab, "_v1.model");
  if (absl::StatusOr<Tokenizer> cached = Tokenizer::Load(path); cached.ok()) {
    return std::make_unique<Tokenizer>(*std::move(cached));
  }
  std::fprintf(stderr, "training a %d-piece model on %zu reviews (cached in %s)\n", vocab,
               texts.size(), path.c_str());
  tokenize::TrainOptions options;
  options.vocab_size = vocab;
  absl::StatusOr<Tokenizer> trained = Tokenizer::TrainFromSentences(texts, options);
  if (!trained.ok()) {
    *error = std::string(trained.status().message());
    g_failed = true;
    return nullptr;
  }
  const std::string tmp = absl::StrCat(path, ".", std::to_string(::getpid()));
  if (trained->Save(tmp).ok()) std::rename(tmp.c_str(), path.c_str());
  return std::make_unique<Tokenizer>(*std::move(trained));
}

Data& GetData() {
  static Data* data = [] {
    auto* d = new Data;
    const std::string path = std::string(PADLESS_SHARED_DATA) + "/imdb_train.tsv";
    absl::StatusOr<corpus::RawCorpus> corpus = corpus::ReadCorpus(path, {});
    if (!corpus.ok()) {
      d->error = std::string(corpus.status().message());
      return d;
    }
    const size_t limit = g_smoke ? 300 : corpus->examples.size();
    for (size_t i = 0; i < corpus->examples.size() && d->texts.size() < limit; ++i) {
      d->texts.push_back(std::move(corpus->examples[i].text));
      d->bytes += static_cast<int64_t>(d->texts.back().size());
    }
    const size_t train_reviews = std::min<size_t>(d->texts.size(), g_smoke ? 300 : 3000);
    const std::vector<std::string> sample(d->texts.begin(), d->texts.begin() + train_reviews);
    d->tokenizer = LoadOrTrainModel(sample, g_smoke ? 2000 : 16000, &d->error);
    if (d->tokenizer != nullptr) d->error = d->baseline.Load(d->tokenizer->Serialized());
    return d;
  }();
  return *data;
}

int HardwareThreads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

BatchEncodeOptions Options(int threads, int64_t max_length) {
  BatchEncodeOptions o;
  o.num_threads = threads;
  o.encode.max_length = max_length;
  return o;
}

void SetRates(benchmark::State& state, int64_t bytes, int64_t tokens) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(tokens) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

// Baseline: SentencePiece's Encode over every review, one thread.
void BM_SpmEncodeLoop(benchmark::State& state) {
  Data& d = GetData();
  if (!d.error.empty()) return state.SkipWithError(d.error.c_str());
  int64_t tokens = 0;
  for (auto _ : state) {
    tokens = d.baseline.EncodeAll(d.texts);
    benchmark::DoNotOptimize(tokens);
  }
  if (tokens < 0) return Fail(state, "SentencePiece Encode failed");
  SetRates(state, d.bytes, tokens);
}
BENCHMARK(BM_SpmEncodeLoop)->Unit(benchmark::kMillisecond)->UseRealTime();

// padless: EncodeTexts into a TokenizedCorpus. Args: threads (0: all), max_length (0: no limit).
void BM_PadlessEncode(benchmark::State& state) {
  Data& d = GetData();
  if (!d.error.empty()) return state.SkipWithError(d.error.c_str());
  const int threads = state.range(0) == 0 ? HardwareThreads() : static_cast<int>(state.range(0));
  const BatchEncodeOptions options = Options(threads, state.range(1));
  int64_t tokens = 0;
  for (auto _ : state) {
    absl::StatusOr<corpus::TokenizedCorpus> corpus =
        corpus::EncodeTexts(*d.tokenizer, d.texts, {}, {}, options);
    if (!corpus.ok()) return Fail(state, std::string(corpus.status().message()));
    tokens = corpus->total_tokens();
    benchmark::DoNotOptimize(corpus->flat_tokens().data());
  }
  SetRates(state, d.bytes, tokens);
  state.counters["threads"] = threads;
}
BENCHMARK(BM_PadlessEncode)
    ->ArgNames({"threads", "max_len"})
    ->Args({1, 0})
    ->Args({0, 0})
    ->Args({1, 512})
    ->Args({0, 512})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

double Seconds(const std::chrono::steady_clock::time_point& since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// CPU seconds used by the whole process so far. On a shared machine wall-clock ratios mix in
// other people's load; CPU time shows the work itself.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The ratios, from interleaved runs in the same iterations so that machine noise hits all three
// alike: the SentencePiece loop, padless on one thread and padless on all threads (no truncation,
// so all three do the same SentencePiece work).
void BM_OverheadAndScaling(benchmark::State& state) {
  Data& d = GetData();
  if (!d.error.empty()) return state.SkipWithError(d.error.c_str());
  const int threads = HardwareThreads();
  double spm = 0, one = 0, all = 0, cpu_spm = 0, cpu_one = 0, cpu_all = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    double cpu = ProcessCpuSeconds();
    benchmark::DoNotOptimize(d.baseline.EncodeAll(d.texts));
    const double t_spm = Seconds(start);
    cpu_spm += ProcessCpuSeconds() - cpu;
    start = std::chrono::steady_clock::now();
    cpu = ProcessCpuSeconds();
    auto single = corpus::EncodeTexts(*d.tokenizer, d.texts, {}, {}, Options(1, 0));
    const double t_one = Seconds(start);
    cpu_one += ProcessCpuSeconds() - cpu;
    start = std::chrono::steady_clock::now();
    cpu = ProcessCpuSeconds();
    auto multi = corpus::EncodeTexts(*d.tokenizer, d.texts, {}, {}, Options(threads, 0));
    const double t_all = Seconds(start);
    cpu_all += ProcessCpuSeconds() - cpu;
    if (!single.ok() || !multi.ok()) return Fail(state, "encoding failed");
    spm += t_spm;
    one += t_one;
    all += t_all;
    state.SetIterationTime(t_one);
  }
  // CPU-time views of the same runs: overhead_cpu is the wrapper's extra work per byte;
  // work_inflation = CPU of the N-thread run / CPU of the 1-thread run (1.0: threads add no
  // work, so scaling is bounded only by the cores actually free); parallelism = CPU / wall time
  // of the N-thread run (how many cores it really got).
  state.counters["overhead_cpu"] = cpu_one / cpu_spm;
  state.counters["work_inflation"] = cpu_all / cpu_one;
  state.counters["parallelism"] = cpu_all / all;
  state.counters["overhead"] = one / spm;
  state.counters["scaling"] = one / all;
  state.counters["efficiency"] = one / all / threads;
  state.counters["threads"] = threads;
  state.counters["spm_MBps"] = static_cast<double>(d.bytes) * state.iterations() / spm / 1e6;
  state.counters["padless_1t_MBps"] = static_cast<double>(d.bytes) * state.iterations() / one / 1e6;
  state.counters["padless_Nt_MBps"] = static_cast<double>(d.bytes) * state.iterations() / all / 1e6;
}
BENCHMARK(BM_OverheadAndScaling)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace padless::bench

int main(int argc, char** argv) {
  // --smoke is ours; everything else goes to Google Benchmark.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      padless::bench::g_smoke = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (const char* env = std::getenv("PADLESS_BENCH_SMOKE"); env != nullptr && env[0] == '1') {
    padless::bench::g_smoke = true;
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return padless::bench::g_failed ? 1 : 0;
}
