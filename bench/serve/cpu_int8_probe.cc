// Where the CPU forward's time goes (issue 44): the engine's model forward alone, on the engine's
// own batches, timed and profiled per ATen operator, to set beside
// bench/serve/cpu_int8_profile.py's profile of transformers under quantize_dynamic on the same
// token lengths. The texts of --data are tokenized as the engine does, cut into varlen batches of
// at most --max_batch_tokens real tokens in arrival order (the engine's batch former), and the
// forward (InferenceMode, PrepareInference's weights, int8 when --amp int8, the logits' softmax:
// serve/batch_scores.cc) runs them back to back. The host-side costs the engine adds around the
// forward (tokenizing, collating) are timed on their own, single-threaded.
//   padless_cpu_int8_probe --model DIR --data FILE [--amp int8] [--max_batch_tokens 2048]
//                          [--passes 2] [--profile] [--threads 0]
// JSON lines: one "probe_forward" row per timed pass, one "probe_host" row, and with --profile
// one "probe_op" row per operator (self time: its own, less the operators it called), largest
// first, from one more pass under at::RecordFunction callbacks.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "padless/batching/collator.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/model_files/model_io.h"
#include "cpu_host_setup.h"

ABSL_FLAG(std::string, model, "", "model directory (padless's or Hugging Face's)");
ABSL_FLAG(std::string, data, "", "texts (TSV, CSV, JSONL or plain text)");
ABSL_FLAG(int64_t, limit, 0, "texts at most (0: all)");
ABSL_FLAG(std::string, amp, "int8", "off (fp32) or int8 (int8 weights)");
ABSL_FLAG(int64_t, max_len, 512, "tokens per text at most");
ABSL_FLAG(int64_t, max_batch_tokens, 2048, "real tokens per batch (the engine's CPU default)");
ABSL_FLAG(int64_t, max_batch_requests, 1024, "sequences per batch");
ABSL_FLAG(int, passes, 2, "timed passes over all batches (after one warm-up pass)");
ABSL_FLAG(bool, profile, false, "one more pass with per-operator self times");
ABSL_FLAG(int, threads, 0, "at::set_num_threads (0: leave LibTorch's default)");
ABSL_FLAG(int, workers, 1,
          "threads each running every workers-th batch at once (with --threads 1: forwards side "
          "by side instead of one forward's OpenMP team)");
ABSL_FLAG(bool, other_thread, false,
          "run the passes on a new thread after a parallel op on the main thread, as the engine "
          "does (its device worker runs forwards; the main thread loaded the model)");
ABSL_FLAG(bool, release_main_team, false,
          "with --other_thread: release the main thread's OpenMP threads first "
          "(serve/cpu_host_setup.h)");
ABSL_FLAG(std::string, label, "padless", "the 'name' prefix of the JSON lines");

namespace padless::bench::serve {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Per-operator self time from RecordFunction callbacks on this thread (the forward's thread; the
// OpenMP team's work counts within the operator that forked it).
class OpProfile {
 public:
  struct Total {
    int64_t calls = 0;
    double self_s = 0;
  };

  void Start() {
    active_ = this;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&OnEnter, &OnExit).scopes({at::RecordScope::FUNCTION}));
  }
  void Stop() {
    at::removeCallback(handle_);
    active_ = nullptr;
  }
  const std::map<std::string, Total>& totals() const { return totals_; }

 private:
  struct Frame {
    Clock::time_point start;
    double children_s = 0;
  };
  struct Context : at::ObserverContext {};

  static std::unique_ptr<at::ObserverContext> OnEnter(const at::RecordFunction&) {
    active_->stack_.push_back({Clock::now(), 0.0});
    return std::make_unique<Context>();
  }
  static void OnExit(const at::RecordFunction& fn, at::ObserverContext*) {
    OpProfile& p = *active_;
    const Frame f = p.stack_.back();
    p.stack_.pop_back();
    const double total = SecondsSince(f.start);
    if (!p.stack_.empty()) p.stack_.back().children_s += total;
    Total& t = p.totals_[fn.name()];
    ++t.calls;
    t.self_s += total - f.children_s;
  }

  static inline OpProfile* active_ = nullptr;
  at::CallbackHandle handle_ = 0;
  std::vector<Frame> stack_;
  std::map<std::string, Total> totals_;
};

struct Batches {
  std::vector<batching::Batch> batches;
  int64_t texts = 0;
  int64_t tokens = 0;
  double tokenize_s = 0;
  double collate_s = 0;
};

// The engine's batches: arrival order, cut at the token or sequence budget.
absl::StatusOr<Batches> MakeBatches(const model_files::LoadedModel& m,
                                    const std::vector<corpus::Example>& examples) {
  tokenize::EncodeOptions encode;
  encode.max_length = absl::GetFlag(FLAGS_max_len);
  Batches out;
  std::vector<tokenize::Encoding> encodings;
  Clock::time_point start = Clock::now();
  for (const corpus::Example& e : examples) {
    absl::StatusOr<tokenize::Encoding> enc = m.tokenizer.Encode(e.text, encode);
    if (!enc.ok()) return enc.status();
    encodings.push_back(*std::move(enc));
  }
  out.tokenize_s = SecondsSince(start);
  start = Clock::now();
  const batching::Collator collator;
  std::vector<const tokenize::Encoding*> current;
  int64_t current_tokens = 0;
  auto flush = [&]() -> absl::Status {
    if (current.empty()) return absl::OkStatus();
    absl::StatusOr<batching::Batch> b = collator.CollateVarlen(current, /*with_types=*/false);
    if (!b.ok()) return b.status();
    out.batches.push_back(*std::move(b));
    current.clear();
    current_tokens = 0;
    return absl::OkStatus();
  };
  for (const tokenize::Encoding& e : encodings) {
    const int64_t n = static_cast<int64_t>(e.ids.size());
    if (current_tokens + n > absl::GetFlag(FLAGS_max_batch_tokens) ||
        static_cast<int64_t>(current.size()) >= absl::GetFlag(FLAGS_max_batch_requests)) {
      if (absl::Status s = flush(); !s.ok()) return s;
    }
    current.push_back(&e);
    current_tokens += n;
    out.tokens += n;
  }
  if (absl::Status s = flush(); !s.ok()) return s;
  out.collate_s = SecondsSince(start);
  out.texts = static_cast<int64_t>(encodings.size());
  return out;
}

// The device worker's forward of one batch (serve/batch_scores.cc), in fp32.
void Forward(models::EncoderClassifierImpl& model, const batching::Batch& b) {
  c10::InferenceMode inference;
  at::softmax(model.forward(b).to(at::kFloat), 1);
}

double Pass(models::EncoderClassifierImpl& model, const Batches& b) {
  const Clock::time_point start = Clock::now();
  const size_t workers = static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_workers)));
  if (workers == 1) {
    for (const batching::Batch& batch : b.batches) Forward(model, batch);
    return SecondsSince(start);
  }
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      for (size_t i = w; i < b.batches.size(); i += workers) Forward(model, b.batches[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  return SecondsSince(start);
}

void PrintProfile(const OpProfile& profile, double pass_s) {
  std::vector<std::pair<std::string, OpProfile::Total>> rows(profile.totals().begin(),
                                                             profile.totals().end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.self_s > b.second.self_s; });
  for (const auto& [name, t] : rows) {
    std::printf(
        "{\"name\": \"%s_op\", \"amp\": \"%s\", \"op\": \"%s\", \"calls\": %lld, "
        "\"self_ms\": %.3f, \"share\": %.4f}\n",
        absl::GetFlag(FLAGS_label).c_str(), absl::GetFlag(FLAGS_amp).c_str(), name.c_str(),
        static_cast<long long>(t.calls), 1e3 * t.self_s, t.self_s / pass_s);
  }
}

void TimedPasses(models::EncoderClassifierImpl& model, const Batches& b) {
  Pass(model, b);  // warm-up: allocator, FBGEMM's buffers, OpenMP team
  for (int i = 0; i < absl::GetFlag(FLAGS_passes); ++i) {
    const double s = Pass(model, b);
    std::printf(
        "{\"name\": \"%s_forward\", \"amp\": \"%s\", \"threads\": %d, \"pass\": %d, "
        "\"texts\": %lld, \"seconds\": %.4f, \"texts_per_s\": %.1f, \"real_tokens_per_s\": %.1f}\n",
        absl::GetFlag(FLAGS_label).c_str(), absl::GetFlag(FLAGS_amp).c_str(), at::get_num_threads(),
        i + 1, static_cast<long long>(b.texts), s, b.texts / s, b.tokens / s);
    std::fflush(stdout);
  }
}

absl::Status Run() {
  const std::string amp = absl::GetFlag(FLAGS_amp);
  if (amp != "off" && amp != "int8") {
    return absl::InvalidArgumentError(absl::StrCat("--amp: off or int8, not ", amp));
  }
  if (absl::GetFlag(FLAGS_threads) > 0) at::set_num_threads(absl::GetFlag(FLAGS_threads));
  absl::StatusOr<model_files::LoadedModel> m =
      model_files::LoadModelDir(absl::GetFlag(FLAGS_model), at::Device(at::kCPU));
  if (!m.ok()) return m.status();
  m->model->eval();
  if (amp == "int8") {
    if (absl::Status s = m->model->PrepareInt8Inference(); !s.ok()) return s;
  } else {
    m->model->PrepareInference(at::kFloat);
  }
  absl::StatusOr<corpus::RawCorpus> corpus = corpus::ReadCorpus(absl::GetFlag(FLAGS_data), {});
  if (!corpus.ok()) return corpus.status();
  std::vector<corpus::Example>& examples = corpus->examples;
  const int64_t limit = absl::GetFlag(FLAGS_limit);
  if (limit > 0 && static_cast<int64_t>(examples.size()) > limit) examples.resize(limit);
  absl::StatusOr<Batches> b = MakeBatches(*m, examples);
  if (!b.ok()) return b.status();
  const std::string& label = absl::GetFlag(FLAGS_label);
  std::printf(
      "{\"name\": \"%s_host\", \"texts\": %lld, \"tokens\": %lld, \"batches\": %zu, "
      "\"tokenize_s\": %.4f, \"collate_s\": %.4f, \"tokenize_texts_per_s\": %.1f}\n",
      label.c_str(), static_cast<long long>(b->texts), static_cast<long long>(b->tokens),
      b->batches.size(), b->tokenize_s, b->collate_s, b->texts / b->tokenize_s);
  if (absl::GetFlag(FLAGS_other_thread)) {
    at::randn({1 << 20});  // an OpenMP team on the main thread, as loading a model makes
    if (absl::GetFlag(FLAGS_release_main_team)) {
      std::printf("{\"name\": \"%s_release_main_team\", \"released\": %s}\n",
                  absl::GetFlag(FLAGS_label).c_str(),
                  padless::serve::internal::ReleaseCallerOpenMpThreads() ? "true" : "false");
    }
    std::thread t([&] { TimedPasses(*m->model, *b); });
    t.join();
  } else {
    TimedPasses(*m->model, *b);
  }
  if (absl::GetFlag(FLAGS_profile)) {
    OpProfile profile;
    profile.Start();
    const double s = Pass(*m->model, *b);
    profile.Stop();
    std::printf("{\"name\": \"%s_profiled\", \"amp\": \"%s\", \"seconds\": %.4f}\n", label.c_str(),
                amp.c_str(), s);
    PrintProfile(profile, s);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace padless::bench::serve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_model).empty() || absl::GetFlag(FLAGS_data).empty()) {
    std::fprintf(stderr, "padless_cpu_int8_probe: --model and --data are required\n");
    return 2;
  }
  if (absl::Status s = padless::bench::serve::Run(); !s.ok()) {
    std::fprintf(stderr, "padless_cpu_int8_probe: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
