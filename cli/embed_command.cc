// padless embed: the embeddings of a corpus into a .npy file, for offline pipelines (search
// indexes, deduplication, clustering). The work is the InferenceEngine's (serve/), the same one
// `padless serve` answers /embed with; this file maps flags onto it, streams the corpus through it
// a few chunks ahead, and appends each finished vector to the file (base::NpyWriter, atomic: a
// failed run leaves no file behind).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "attention_flag.h"
#include "cli_util.h"
#include "common_flags.h"
#include "data_flags.h"
#include "device_flag.h"
#include "flag_spelling.h"
#include "input_texts.h"
#include "model_dir_flag.h"
#include "padless/base/npy_writer.h"
#include "padless/model_files/sentence_transformers.h"
#include "padless/serve/inference_engine.h"
#include "path_checks.h"
#include "subcommand.h"

ABSL_FLAG(bool, normalize, true,
          "embed: scale each vector to unit L2 norm, as TEI does by default (--no-normalize: the "
          "vectors as pooled and through any Dense modules, even where the model's pipeline ends "
          "with a Normalize module)");
ABSL_FLAG(int64_t, dimensions, 0,
          "embed: keep the first N values of each vector (Matryoshka models), then normalize; "
          "0: all");
ABSL_FLAG(std::string, prompt_name, "",
          "embed: put this prompt of the model's config_sentence_transformers.json before every "
          "text (empty: its default_prompt_name, if it has one)");
ABSL_FLAG(int64_t, batch, 1024,
          "embed: texts per engine submission; three are in the engine at once, so that "
          "tokenizing, batching and the device overlap");

namespace padless::cli {
namespace {

constexpr const char* kCmd = "embed";
// Submissions kept in the engine at once: while the oldest one's vectors are written, the next
// ones are tokenized and batched (TextClassifier::PredictChunks does the same).
constexpr size_t kChunksInFlight = 3;
constexpr const char* kPoolingNames = "cls, mean, max, mean_sqrt_len, weightedmean, last-token";

struct EmbedJob {
  std::string model_dir, data, out;
  serve::EngineOptions engine;
  corpus::ReaderOptions reader;
  bool normalize = true;
  int64_t dimensions = 0;  // 0: all
  std::string prompt_name;
  size_t batch = 1024;
};

// The flags, checked without touching the file system; every error is a usage error.
absl::StatusOr<EmbedJob> JobFromFlags() {
  EmbedJob job;
  job.model_dir = absl::GetFlag(FLAGS_model);
  if (job.model_dir.empty()) return UsageError(RequiredFlagMessage("model", "DIR"));
  job.out = absl::GetFlag(FLAGS_out);
  if (job.out.empty()) return UsageError(RequiredFlagMessage("out", "FILE.npy"));
  if (!absl::EndsWithIgnoreCase(job.out, ".npy")) {
    return UsageError(absl::StrCat(FlagAsWritten("out"), " ", job.out,
                                   ": embed writes NumPy .npy files; name it FILE.npy"));
  }
  job.data = absl::GetFlag(FLAGS_data);
  absl::StatusOr<c10::Device> device = DeviceFlag();
  if (!device.ok()) return UsageError(device.status().message());
  job.engine.device = *device;
  absl::StatusOr<InferencePrecision> precision = InferencePrecisionFlag();
  if (!precision.ok()) return UsageError(precision.status().message());
  job.engine.amp = precision->amp;
  job.engine.int8_weights = precision->int8_weights;
  absl::StatusOr<models::AttentionBackend> attention = AttentionFlag();
  if (!attention.ok()) return attention.status();
  job.engine.attention = *attention;
  if (absl::Status s = CheckSizeFlags(kMaxLen | kMaxTokens); !s.ok()) return s;
  job.engine.max_len = absl::GetFlag(FLAGS_max_len);
  job.engine.max_batch_tokens = absl::GetFlag(FLAGS_max_tokens).value_or(0);  // 0: by device
  if (const std::string pooling = absl::GetFlag(FLAGS_pooling); !pooling.empty()) {
    absl::StatusOr<model_files::PoolingMode> mode = model_files::ParsePoolingMode(pooling);
    if (!mode.ok()) {
      return UsageError(absl::StrCat(FlagAsWritten("pooling"), ": ", mode.status().message()));
    }
    job.engine.pooling = *mode;
  }
  absl::StatusOr<corpus::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/false);
  if (!reader.ok()) return reader.status();
  job.reader = *reader;
  job.normalize = absl::GetFlag(FLAGS_normalize);
  job.dimensions = absl::GetFlag(FLAGS_dimensions);
  if (job.dimensions < 0) {
    return UsageError(absl::StrCat(FlagAsWritten("dimensions"), " must be >= 0, got ",
                                   job.dimensions, " (0: all)"));
  }
  job.prompt_name = absl::GetFlag(FLAGS_prompt_name);
  const int64_t batch = absl::GetFlag(FLAGS_batch);
  if (batch < 1) {
    return UsageError(absl::StrCat(FlagAsWritten("batch"), " must be >= 1, got ", batch));
  }
  job.batch = static_cast<size_t>(batch);
  return job;
}

// The engine, which must serve the directory as an embedding model.
absl::StatusOr<std::unique_ptr<serve::InferenceEngine>> LoadEmbeddingEngine(const EmbedJob& job) {
  absl::StatusOr<std::unique_ptr<serve::InferenceEngine>> engine =
      serve::InferenceEngine::Load(job.model_dir, job.engine);
  if (!engine.ok()) {
    // A plain encoder without a trained head: the way out here is a pooling, not training.
    if (absl::IsFailedPrecondition(engine.status()) && !job.engine.pooling.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat(engine.status().message(), "; to embed with its encoder, pass --pooling (",
                       kPoolingNames, ")"));
    }
    return engine.status();
  }
  const serve::ModelKind kind = (*engine)->kind();
  if (kind != serve::ModelKind::kEmbedding || (*engine)->embedding_info() == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(job.model_dir, " is a ", serve::ModelKindName(kind),
                     "; pass --pooling to embed with its encoder (", kPoolingNames, ")"));
  }
  return engine;
}

// The text put before every input: --prompt-name's, else the model's default prompt, else none.
absl::StatusOr<std::string> ResolvePrompt(const EmbedJob& job, const serve::EmbeddingInfo& info) {
  const std::string name = job.prompt_name.empty() ? info.default_prompt_name : job.prompt_name;
  if (name.empty()) return std::string();
  auto it = info.prompts.find(name);
  if (it == info.prompts.end()) {
    std::vector<std::string> names;
    for (const auto& [known, text] : info.prompts) names.push_back(known);
    return absl::NotFoundError(absl::StrCat(
        FlagAsWritten("prompt_name"), " ", name, ": ", job.model_dir, " has ",
        names.empty() ? "no prompts" : absl::StrCat("the prompts ", absl::StrJoin(names, ", "))));
  }
  // sentence-transformers leaves the prompt's tokens out of the pooling when include_prompt is
  // false; the engine pools every token of its input, so that embedding would differ silently.
  absl::StatusOr<model_files::SentenceTransformerSpec> spec =
      model_files::ReadSentenceTransformerDir(job.model_dir);
  if (spec.ok() && !spec->include_prompt && !it->second.empty()) {
    return absl::UnimplementedError(
        absl::StrCat(job.model_dir, ": its pooling leaves the prompt '", name,
                     "' out (include_prompt false), which padless embed cannot do yet"));
  }
  return it->second;
}

// "1h02m", "4m05s", "12s": the ETA of the progress line.
std::string FormatEta(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

// The progress line on stderr: redrawn in place on a terminal; in a log file, a line at every
// tenth of the corpus. Nothing with --quiet.
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), start_(std::chrono::steady_clock::now()) {}

  void Update(size_t done) {
    if (quiet_ || total_ == 0) return;
    const size_t tenth = done * 10 / total_;
    // In a log, the final line (RunEmbed's) stands for 100%.
    if (!terminal_ && (tenth == last_tenth_ || done == total_)) return;
    last_tenth_ = tenth;
    const double elapsed = seconds();
    const double rate = elapsed > 0 ? done / elapsed : 0;
    const std::string eta = rate > 0 ? FormatEta((total_ - done) / rate) : "?";
    absl::FPrintF(stderr, "%sembedding %d/%d (%d%%)  %.0f texts/s  ETA %s%s", terminal_ ? "\r" : "",
                  done, total_, done * 100 / total_, rate, eta,
                  terminal_ && done < total_ ? "   " : "\n");
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  const size_t total_;
  const std::chrono::steady_clock::time_point start_;
  const bool quiet_ = absl::GetFlag(FLAGS_quiet);
  const bool terminal_ = isatty(fileno(stderr)) != 0;
  size_t last_tenth_ = 0;
};

struct EmbedTotals {
  int64_t tokens = 0;
  int64_t cols = 0;
};

// Writes one finished submission's vectors, in order, as rows of `out`.
absl::Status WriteChunk(size_t first, std::vector<absl::StatusOr<serve::EngineResult>> results,
                        const EmbedJob& job, base::NpyWriter& out, EmbedTotals& totals) {
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      const absl::Status& s = results[i].status();
      return absl::Status(s.code(), absl::StrCat("text ", first + i, ": ", s.message()));
    }
    std::vector<float>& vector = results[i]->embedding;
    if (absl::Status s = serve::FinishEmbedding(vector, job.normalize, job.dimensions); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("text ", first + i, ": ", s.message()));
    }
    if (absl::Status s = out.AppendRow(vector); !s.ok()) return s;
    totals.tokens += results[i]->tokens;
  }
  return absl::OkStatus();
}

struct PendingChunk {
  size_t first = 0;
  serve::RequestHandle handle;
};

// The requests of texts [first, first + n), moved out of `texts`, `prompt` before each.
std::vector<serve::EngineRequest> MakeRequests(std::vector<std::string>& texts, size_t first,
                                               size_t n, const std::string& prompt) {
  std::vector<serve::EngineRequest> requests(n);
  for (size_t i = 0; i < n; ++i) {
    requests[i].text =
        prompt.empty() ? std::move(texts[first + i]) : absl::StrCat(prompt, texts[first + i]);
  }
  return requests;
}

// Streams `texts` (consumed) through the engine, `prompt` before each, into `out`.
absl::Status EmbedTexts(serve::InferenceEngine& engine, const EmbedJob& job,
                        const std::string& prompt, std::vector<std::string>& texts,
                        base::NpyWriter& out, EmbedTotals& totals, Progress& progress) {
  // A chunk must fit the engine's queue even when it holds nothing else.
  const size_t chunk = std::min(
      job.batch, static_cast<size_t>(std::max<int64_t>(1, engine.options().max_queued_requests)));
  std::deque<PendingChunk> pending;          // cancelled on an early return (handles' destructors)
  std::vector<serve::EngineRequest> staged;  // the next chunk, kept while the queue is full
  size_t next = 0;
  while (next < texts.size() || !pending.empty()) {
    if (next < texts.size() && pending.size() < kChunksInFlight) {
      if (staged.empty()) {
        staged = MakeRequests(texts, next, std::min(chunk, texts.size() - next), prompt);
      }
      absl::StatusOr<serve::RequestHandle> handle = engine.Submit(staged);
      if (handle.ok()) {
        pending.push_back({next, std::move(*handle)});
        next += staged.size();
        staged.clear();
        continue;
      }
      if (!absl::IsResourceExhausted(handle.status())) return handle.status();
      if (pending.empty()) {  // the queue is full without this run's work: wait for room
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
    }
    PendingChunk done = std::move(pending.front());
    pending.pop_front();
    if (absl::Status s = WriteChunk(done.first, done.handle.Wait(), job, out, totals); !s.ok()) {
      return s;
    }
    progress.Update(static_cast<size_t>(out.rows_written()));
  }
  return absl::OkStatus();
}

int RunEmbed(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  absl::StatusOr<EmbedJob> job = JobFromFlags();
  if (!job.ok()) return ReportError(kCmd, job.status());
  if (absl::Status s = CheckPathFlags({ServableModelDirFlag(job->model_dir),
                                       {"data", job->data, PathUse::kInputTextFile},
                                       {"out", job->out, PathUse::kOutputFile}});
      !s.ok()) {
    return Fail(kCmd, s);
  }
  absl::StatusOr<std::unique_ptr<serve::InferenceEngine>> engine = LoadEmbeddingEngine(*job);
  if (!engine.ok()) return Fail(kCmd, engine.status());
  const serve::EmbeddingInfo& info = *(*engine)->embedding_info();
  if (job->dimensions > info.dimension) {
    return Fail(kCmd, absl::InvalidArgumentError(absl::StrCat(
                          FlagAsWritten("dimensions"), " ", job->dimensions, ": ", job->model_dir,
                          "'s embeddings have ", info.dimension, " values")));
  }
  absl::StatusOr<std::string> prompt = ResolvePrompt(*job, info);
  if (!prompt.ok()) return Fail(kCmd, prompt.status());
  absl::StatusOr<std::vector<std::string>> texts = ReadInputTexts(job->data, job->reader);
  if (!texts.ok()) return Fail(kCmd, texts.status());
  const std::string source = job->data.empty() ? "stdin" : job->data;
  if (texts->empty()) return Fail(kCmd, absl::InvalidArgumentError(source + ": no texts"));
  const size_t count = texts->size();
  const int64_t cols = job->dimensions > 0 ? job->dimensions : info.dimension;
  absl::StatusOr<std::unique_ptr<base::NpyWriter>> out =
      base::NpyWriter::Open(job->out, static_cast<int64_t>(count), cols);
  if (!out.ok()) return Fail(kCmd, out.status());
  Progress progress(count);
  EmbedTotals totals;
  absl::Status s = EmbedTexts(**engine, *job, *prompt, *texts, **out, totals, progress);
  if (s.ok()) s = (*out)->Commit();
  if (!s.ok()) return Fail(kCmd, s);
  const double seconds = progress.seconds();
  absl::FPrintF(stderr,
                "embedded %d texts (%d tokens) in %.2f s, %.1f texts/s: %s holds [%d, %d] "
                "float32\n",
                count, totals.tokens, seconds, seconds > 0 ? count / seconds : 0.0, job->out, count,
                cols);
  return kExitOk;
}

}  // namespace

const Subcommand kEmbedCommand = {
    "embed",
    "embed texts (--data FILE or stdin lines) into a .npy file with an embedding model",
    "usage: padless embed --model DIR [--data FILE] --out FILE.npy\n\nWrites one float32 row per "
    "input text, in input order, to FILE.npy (numpy.load,\ntorch.from_numpy(numpy.load(...))), "
    "through the engine `padless serve` uses.\nDIR: a sentence-transformers directory "
    "(modules.json: "
    "its pooling, Dense and\nNormalize modules, prompts), or any model directory with --pooling.\n"
    "Vectors are normalized to unit length unless --no-normalize (TEI's default).\nInput: as "
    "`padless predict`: lines of text on stdin without --data; with --data, a\nTSV, CSV or JSONL "
    "file (by its extension or --format) with or without a label column,\nor any other file as "
    "plain text, one text per line. Long texts keep their first\n--max-len tokens. Progress and a "
    "final line (texts, tokens, seconds, texts/s) go\nto stderr. A failed run leaves no FILE.npy.",
    {"model", "data", "out", "pooling", "normalize", "dimensions", "prompt_name", "batch",
     "max_len", "max_tokens", "amp", "device", "attention", "format", "text_field", "label_field",
     "quiet"},
    RunEmbed};

}  // namespace padless::cli
