// Google Benchmark suite of batching/: planning + collation throughput against a naive
// pad-to-longest collator (HF DataCollatorWithPadding style: at::full + one copy per row) timed in
// the same run, padding efficiency per strategy on IMDB-like lengths at max_len 512, and packing
// of 1M synthetic lengths against std::sort of the same lengths.
//
// Data: IMDB train from ../shared/data/imdb_train.tsv. With `--model=M.model` (a padless
// SentencePiece model, e.g. 16k unigram) it is tokenized for real, [CLS]/[SEP] added and truncated
// to 512 (head+tail); otherwise token counts are APPROXIMATED as min(512, round(1.34 * words) + 2)
// with random ids, and the counter `approx_lengths` is 1. `--smoke` shrinks every input.
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "padless/batching/collator.h"
#include "padless/batching/packer.h"
#include "padless/batching/padding_report.h"
#include "padless/batching/padding_stats.h"
#include "padless/batching/planner.h"
#include "padless/corpus/batch_encoder.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/label_map.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::batching {
namespace {

bool g_smoke = false;
bool g_approx = true;
std::string g_model;
std::map<std::string, double> g_baseline_rate;  // real tokens/s of the baselines, by name

// Seconds of CPU time used by this thread: the ratios below compare CPU time, so that other
// processes on a shared machine do not skew them.
double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<int64_t> ImdbLengthsFromWords(size_t limit) {
  std::vector<int64_t> lengths;
  std::ifstream in(std::string(PADLESS_SHARED_DATA) + "/imdb_train.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (lengths.size() < limit && std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    int64_t words = 0;
    bool in_word = false;
    for (size_t i = tab + 1; i < line.size(); ++i) {
      const bool space = line[i] == ' ' || line[i] == '\t';
      if (!space && !in_word) ++words;
      in_word = !space;
    }
    lengths.push_back(std::min<int64_t>(512, std::llround(1.34 * static_cast<double>(words)) + 2));
  }
  return lengths;
}

std::vector<int64_t> SyntheticLengths(size_t n, uint64_t seed, int64_t max) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dist(5.4, 0.75);  // IMDB-like: median ~230 tokens
  std::vector<int64_t> out(n);
  for (auto& v : out) v = std::min<int64_t>(max, std::max<int64_t>(2, std::llround(dist(rng))));
  return out;
}

absl::StatusOr<corpus::TokenizedCorpus> TokenizeImdb(const std::string& model) {
  absl::StatusOr<tokenize::Tokenizer> tok = tokenize::Tokenizer::Load(model);
  if (!tok.ok()) return tok.status();
  absl::StatusOr<corpus::RawCorpus> raw =
      corpus::ReadCorpus(std::string(PADLESS_SHARED_DATA) + "/imdb_train.tsv", {});
  if (!raw.ok()) return raw.status();
  if (g_smoke && raw->examples.size() > 2000) raw->examples.resize(2000);
  std::vector<std::string> names;
  for (const corpus::Example& e : raw->examples) names.push_back(e.label);
  corpus::BatchEncodeOptions options;
  options.encode.max_length = 512;
  return corpus::EncodeCorpus(*tok, *raw, corpus::LabelMap::FromLabels(names), options);
}

// The benchmark corpus: real token ids when a cache is given, else random ids with IMDB lengths.
const corpus::TokenizedCorpus& Corpus() {
  static const corpus::TokenizedCorpus corpus = [] {
    if (!g_model.empty()) {
      absl::StatusOr<corpus::TokenizedCorpus> c = TokenizeImdb(g_model);
      if (c.ok()) {
        g_approx = false;
        return std::move(*c);
      }
      std::fprintf(stderr, "cannot tokenize IMDB with %s (%s); using approximated lengths\n",
                   g_model.c_str(), std::string(c.status().message()).c_str());
    }
    std::vector<int64_t> lengths = ImdbLengthsFromWords(g_smoke ? 2000 : 25000);
    if (lengths.empty()) lengths = SyntheticLengths(g_smoke ? 2000 : 25000, 1, 512);
    std::mt19937 rng(7);
    corpus::TokenizedCorpus c;
    std::vector<int32_t> ids;
    for (size_t i = 0; i < lengths.size(); ++i) {
      ids.resize(lengths[i]);
      for (auto& id : ids) id = 5 + static_cast<int32_t>(rng() % 16000);
      c.Add(ids, {}, static_cast<int64_t>(i % 2));
    }
    return c;
  }();
  return corpus;
}

constexpr int64_t kMaxLen = 512;
constexpr int64_t kBatch = 32;
constexpr int64_t kMaxTokens = 16384;

// HF DataCollatorWithPadding in C++: random batches padded to the longest (truncated to 512),
// a full() per tensor and one narrow().copy_() per row and tensor.
void BM_BaselineNaivePadCollate(benchmark::State& state) {
  const corpus::TokenizedCorpus& corpus = Corpus();
  const std::vector<int64_t> lengths = corpus.Lengths();
  std::vector<int64_t> order(lengths.size());
  int64_t real = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = static_cast<int64_t>(i);
    real += std::min(lengths[i], kMaxLen);
  }
  std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
  const double start = ThreadSeconds();
  for (auto _ : state) {
    for (size_t b = 0; b < order.size(); b += kBatch) {
      const size_t n = std::min<size_t>(kBatch, order.size() - b);
      int64_t longest = 0;
      for (size_t i = 0; i < n; ++i)
        longest = std::max(longest, std::min(lengths[order[b + i]], kMaxLen));
      at::Tensor ids = at::full({static_cast<int64_t>(n), longest}, 0, at::kLong);
      at::Tensor mask = at::full({static_cast<int64_t>(n), longest}, 0, at::kLong);
      std::vector<int64_t> labels(n);
      for (size_t i = 0; i < n; ++i) {
        const int64_t ex = order[b + i];
        const int64_t len = std::min(lengths[ex], kMaxLen);
        auto tokens = corpus.tokens(static_cast<size_t>(ex));
        at::Tensor row = at::from_blob(const_cast<int32_t*>(tokens.data()), {len}, at::kInt);
        ids[i].narrow(0, 0, len).copy_(row);
        mask[i].narrow(0, 0, len).copy_(at::ones({len}, at::kLong));
        labels[i] = corpus.label(static_cast<size_t>(ex));
      }
      at::Tensor label_tensor = at::tensor(labels, at::kLong);
      benchmark::DoNotOptimize(ids.data_ptr());
      benchmark::DoNotOptimize(label_tensor.data_ptr());
    }
  }
  const double seconds = ThreadSeconds() - start;
  g_baseline_rate["naive"] = static_cast<double>(real) * state.iterations() / seconds;
  state.counters["real_tokens_per_s"] = benchmark::Counter(
      static_cast<double>(real) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["approx_lengths"] = g_approx ? 1 : 0;
}

// Planning + collating one whole epoch on one thread with padless.
void BM_PlanAndCollate(benchmark::State& state, PlannerOptions options) {
  const corpus::TokenizedCorpus& corpus = Corpus();
  const std::vector<int64_t> lengths = corpus.Lengths();
  const Planner planner(options);
  const Collator collator;
  PaddingStats stats;
  const double start = ThreadSeconds();
  for (auto _ : state) {
    absl::StatusOr<std::vector<BatchSpec>> plan = planner.Plan(lengths, 0);
    if (!plan.ok()) {
      state.SkipWithError(std::string(plan.status().message()).c_str());
      return;
    }
    for (const BatchSpec& spec : *plan) {
      absl::StatusOr<Batch> b = collator.Collate(corpus, spec);
      benchmark::DoNotOptimize(b->input_ids.data_ptr());
    }
    state.PauseTiming();
    stats = ComputePaddingStats(*plan);
    state.ResumeTiming();
  }
  const double seconds = ThreadSeconds() - start;
  const double real = static_cast<double>(stats.real_tokens) * state.iterations();
  state.counters["real_tokens_per_s"] = benchmark::Counter(real, benchmark::Counter::kIsRate);
  state.counters["padding_efficiency"] = stats.padding_efficiency;
  state.counters["distinct_shapes"] = static_cast<double>(stats.distinct_shapes);
  // The paused statistics are inside `seconds`, which makes this ratio conservative.
  if (g_baseline_rate.count("naive") != 0) {
    state.counters["speedup_vs_naive"] = real / seconds / g_baseline_rate["naive"];
  }
  state.counters["approx_lengths"] = g_approx ? 1 : 0;
}

std::vector<int64_t> MillionLengths() {
  return SyntheticLengths(g_smoke ? 20000 : 1000000, 11, kMaxLen);
}

// The floor of any decreasing-fit packer: sorting the lengths.
void BM_BaselineSortLengths(benchmark::State& state) {
  const std::vector<int64_t> lengths = MillionLengths();
  const double start = ThreadSeconds();
  for (auto _ : state) {
    std::vector<int64_t> copy = lengths;
    std::sort(copy.begin(), copy.end(), std::greater<int64_t>());
    benchmark::DoNotOptimize(copy.data());
  }
  const double seconds = ThreadSeconds() - start;
  g_baseline_rate["sort"] = static_cast<double>(lengths.size()) * state.iterations() / seconds;
  state.counters["lengths"] = static_cast<double>(lengths.size());
}

// Packing into rows of 512 with placements (what the planner does), or counting rows only.
void BM_Pack(benchmark::State& state, PackAlgorithm algorithm, bool placements) {
  const std::vector<int64_t> lengths = MillionLengths();
  std::vector<Placement> pieces(lengths.size());
  int64_t total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    pieces[i] = {static_cast<int64_t>(i), 0, lengths[i], 0};
    total += lengths[i];
  }
  PackOptions o;
  o.capacity = kMaxLen;
  o.algorithm = algorithm;
  int64_t rows = 0;
  const double start = ThreadSeconds();
  for (auto _ : state) {
    if (placements) {
      absl::StatusOr<std::vector<std::vector<Placement>>> packed = Pack(pieces, o);
      rows = static_cast<int64_t>(packed->size());
    } else {
      rows = *CountPackedRows(lengths, o);
    }
    // Through a const reference: Google Benchmark 1.7's non-const DoNotOptimize ("+m,r" asm
    // constraint) is miscompiled by GCC 13 and garbled `rows` on the GPU machine.
    benchmark::DoNotOptimize(static_cast<const int64_t&>(rows));
  }
  const double seconds = ThreadSeconds() - start;
  state.counters["ms_per_pack"] = 1000.0 * seconds / state.iterations();
  state.counters["efficiency"] = static_cast<double>(total) / (rows * kMaxLen);
  state.counters["lengths"] = static_cast<double>(lengths.size());
  if (g_baseline_rate.count("sort") != 0) {
    const double rate = static_cast<double>(lengths.size()) * state.iterations() / seconds;
    state.counters["time_vs_sort"] = g_baseline_rate["sort"] / rate;
  }
}

void RegisterAll() {
  benchmark::RegisterBenchmark("BM_BaselineNaivePadCollate", BM_BaselineNaivePadCollate)
      ->Unit(benchmark::kMillisecond);
  for (const NamedStrategy& s : StandardStrategies(kMaxLen, kBatch, kMaxTokens, 1234)) {
    benchmark::RegisterBenchmark(("BM_PlanAndCollate/" + s.name).c_str(), BM_PlanAndCollate,
                                 s.options)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_BaselineSortLengths", BM_BaselineSortLengths)
      ->Unit(benchmark::kMillisecond);
  const std::pair<const char*, PackAlgorithm> algorithms[] = {
      {"ffd", PackAlgorithm::kFirstFitDecreasing},
      {"bfd", PackAlgorithm::kBestFitDecreasing},
      {"histogram", PackAlgorithm::kHistogram}};
  for (const auto& [name, algorithm] : algorithms) {
    benchmark::RegisterBenchmark((std::string("BM_Pack1M/") + name).c_str(), BM_Pack, algorithm,
                                 true)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_PackCount1M/") + name).c_str(), BM_Pack,
                                 algorithm, false)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace padless::batching

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      padless::batching::g_smoke = true;
    } else if (std::strncmp(argv[i], "--model=", 8) == 0) {
      padless::batching::g_model = argv[i] + 8;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  padless::batching::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
