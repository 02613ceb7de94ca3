#include "padless/prune/prune_job.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/directory.h"
#include "padless/base/text_output.h"
#include "padless/corpus/corpus_split.h"
#include "padless/eval/evaluation.h"
#include "padless/model_files/model_io.h"
#include "padless/prune/importance_report.h"
#include "padless/prune/prune_plan.h"
#include "padless/prune/structured_prune.h"
#include "padless/prune/unit_importance.h"
#include "padless/train/train_job.h"

namespace padless::prune {

namespace {

namespace tok = padless::tokenize;

// What every round shares: the device, the data encoded once with the model's tokenizer, the plan.
struct Workspace {
  c10::Device device = c10::Device(c10::kCPU);
  models::AmpMode score_amp = models::AmpMode::kOff;
  batching::PlannerOptions plan;
  corpus::TokenizedCorpus train;
  corpus::TokenizedCorpus dev;
  int64_t max_len = 0;
};

std::string RoundDir(const PruneJobOptions& o, int64_t round) {
  if (round == o.rounds) return o.out;
  return absl::StrCat(o.out, "/rounds/round-", round);
}

std::string RoundFile(const PruneJobOptions& o, int64_t round, const char* suffix) {
  return absl::StrCat(o.out, "/rounds/round-", round, suffix);
}

// `limit` examples of `raw` drawn with `seed`, in file order (all of them when limit is 0 or at
// least the corpus size).
void Sample(corpus::RawCorpus* raw, int64_t limit, uint64_t seed) {
  if (limit <= 0 || static_cast<int64_t>(raw->examples.size()) <= limit) return;
  raw->examples = corpus::SplitOff(*raw, static_cast<size_t>(limit), seed).examples;
}

// `path` encoded with the model's tokenizer and labels; at most `limit` examples (0: all). With
// `fine_tuned_on`, its label set must be the model's: fine-tuning maps labels from the training
// file, and another order would scramble the head.
absl::StatusOr<corpus::TokenizedCorpus> Encode(const PruneJobOptions& o, const std::string& path,
                                               const model_files::LoadedModel& m, int64_t max_len,
                                               int64_t limit, bool fine_tuned_on) {
  absl::StatusOr<corpus::RawCorpus> raw = corpus::ReadCorpus(path, o.reader);
  if (!raw.ok()) return raw.status();
  if (raw->examples.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no examples"));
  if (fine_tuned_on) {
    const std::vector<std::string> labels = corpus::LabelMap::FromCorpus(*raw).names();
    if (labels != m.labels.names()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": its labels (", absl::StrJoin(labels, ", "),
                       ") are not the model's (", absl::StrJoin(m.labels.names(), ", "), ")"));
    }
  }
  Sample(&*raw, limit, o.seed);
  tok::EncodeOptions encode;
  encode.max_length = max_len;
  return train::EncodeWithLabels(m.tokenizer, *raw, m.labels, encode, o.threads);
}

absl::StatusOr<Workspace> Prepare(const PruneJobOptions& o, const model_files::LoadedModel& m) {
  Workspace w;
  w.device = o.device.value_or(train::DefaultTrainingDevice());
  w.score_amp = o.amp == models::AmpMode::kFp8 ? models::AmpMode::kBf16 : o.amp;
  w.max_len = std::min(o.max_len, m.config.max_sequence_length());
  const int64_t tokens = o.max_tokens > 0 ? o.max_tokens : (w.device.is_cuda() ? 16384 : 4096);
  absl::StatusOr<batching::PlannerOptions> plan = train::BatchingPlan(
      "varlen", batching::StrategySizes{w.max_len, 32, std::max(tokens, w.max_len), o.seed});
  if (!plan.ok()) return plan.status();
  w.plan = *plan;
  absl::StatusOr<corpus::TokenizedCorpus> train = Encode(o, o.data, m, w.max_len, o.score_examples,
                                                         /*fine_tuned_on=*/true);
  if (!train.ok()) return train.status();
  absl::StatusOr<corpus::TokenizedCorpus> dev =
      Encode(o, o.dev, m, w.max_len, 0, /*fine_tuned_on=*/false);
  if (!dev.ok()) return dev.status();
  w.train = std::move(*train);
  w.dev = std::move(*dev);
  return w;
}

absl::StatusOr<double> DevAccuracy(models::EncoderClassifier& model, const Workspace& w,
                                   const model_files::LoadedModel& m) {
  absl::StatusOr<eval::EvalResult> eval =
      eval::Evaluate(model, w.dev, w.plan, w.device, w.score_amp, m.tokenizer.special_ids().pad);
  if (!eval.ok()) return eval.status();
  return eval->metrics.accuracy;
}

PruneRound Describe(int64_t round, models::EncoderClassifier& model, const std::string& dir) {
  PruneRound r;
  r.round = round;
  r.heads_left = model->config().total_heads();
  r.ffn_left = model->config().total_ffn();
  r.parameters = ParameterCount(model);
  r.dir = dir;
  return r;
}

// Fine-tunes the model in `from` into `to`; returns its dev accuracy.
absl::StatusOr<double> FineTune(const PruneJobOptions& o, const Workspace& w,
                                const std::string& from, const std::string& to) {
  train::TrainJobOptions t;
  t.data = o.data;
  t.dev = o.dev;
  t.out = to;
  t.init_from = from;
  t.reader = o.reader;
  t.max_len = w.max_len;
  t.threads = o.threads;
  t.lr = o.lr;
  t.device = w.device;
  t.quiet = o.quiet;
  t.epochs = o.steps > 0 ? int64_t{1000} : int64_t{1};  // max_steps stops a --steps run
  t.train.max_steps(o.steps).amp(o.amp).seed(o.seed);
  absl::StatusOr<train::TrainJobResult> result = train::RunTrainJob(t);
  if (!result.ok()) return result.status();
  if (!result->dev.has_value()) return absl::InternalError("fine-tuning gave no dev result");
  return result->dev->metrics.accuracy;
}

// Round `k`: score, prune, save, evaluate, fine-tune. `m` is the model the round starts from.
absl::StatusOr<PruneRound> RunRound(const PruneJobOptions& o, const Workspace& w,
                                    model_files::LoadedModel& m, int64_t k) {
  const int64_t pad = m.tokenizer.special_ids().pad;
  absl::StatusOr<UnitImportance> importance =
      ScoreUnitImportance(m.model, w.train, w.plan, w.device, w.score_amp, pad);
  if (!importance.ok()) return importance.status();
  if (absl::Status s =
          WriteImportanceReport(RoundFile(o, k, "-importance.csv"),
                                RoundFile(o, k, "-importance.svg"), m.config, *importance);
      !s.ok()) {
    return s;
  }
  const double share = static_cast<double>(k) / static_cast<double>(o.rounds);
  absl::StatusOr<PrunePlan> plan =
      PlanPruning(m.config, *importance, PruneTargets{o.heads * share, o.ffn * share});
  if (!plan.ok()) return plan.status();
  absl::StatusOr<models::EncoderClassifier> pruned = PruneModel(m.model, *plan);
  if (!pruned.ok()) return pruned.status();
  const std::string pruned_dir = o.fine_tune ? RoundFile(o, k, "-pruned") : RoundDir(o, k);
  if (absl::Status s = model_files::SaveModelDir(pruned_dir, *pruned, m.tokenizer, m.labels); !s.ok()) {
    return s;
  }
  PruneRound r = Describe(k, *pruned, RoundDir(o, k));
  absl::StatusOr<double> accuracy = DevAccuracy(*pruned, w, m);
  if (!accuracy.ok()) return accuracy.status();
  r.dev_accuracy_pruned = *accuracy;
  if (o.fine_tune) {
    absl::StatusOr<double> tuned = FineTune(o, w, pruned_dir, RoundDir(o, k));
    if (!tuned.ok()) return tuned.status();
    r.dev_accuracy_tuned = *tuned;
  }
  return r;
}

void PrintRound(const PruneRound& r) {
  absl::FPrintF(stderr, "prune: round %d: %d heads, %d FFN neurons, %d parameters; dev %.4f%s\n",
                r.round, r.heads_left, r.ffn_left, r.parameters, r.dev_accuracy_pruned,
                r.dev_accuracy_tuned ? absl::StrFormat(", fine-tuned %.4f", *r.dev_accuracy_tuned)
                                     : std::string());
}

}  // namespace

absl::Status ValidatePruneJobOptions(const PruneJobOptions& o) {
  for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--model", &o.model},
                                    {"--data", &o.data},
                                    {"--dev", &o.dev},
                                    {"--out", &o.out}}) {
    if (value->empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " is required"));
  }
  if (o.out == o.model) {
    return absl::InvalidArgumentError(
        "--out must differ from --model: the model is read each round");
  }
  for (const auto& [flag, share] :
       {std::pair<const char*, double>{"--heads", o.heads}, {"--ffn", o.ffn}}) {
    if (!(share >= 0.0 && share < 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " must be in [0, 1) (the share removed), got ", share));
    }
  }
  if (o.rounds < 1) return absl::InvalidArgumentError("--rounds must be >= 1");
  if (o.steps < 0) return absl::InvalidArgumentError("--steps must be >= 0");
  if (o.score_examples < 0) return absl::InvalidArgumentError("--score-examples must be >= 0");
  if (o.max_len < 3) return absl::InvalidArgumentError("--max-len must be >= 3");
  if (o.max_tokens < 0) return absl::InvalidArgumentError("--max-tokens must be >= 0");
  if (o.lr.has_value() && !(*o.lr > 0.0)) return absl::InvalidArgumentError("--lr must be > 0");
  return absl::OkStatus();
}

absl::StatusOr<PruneJobResult> RunPruneJob(const PruneJobOptions& o) {
  if (absl::Status s = ValidatePruneJobOptions(o); !s.ok()) return s;
  const c10::Device device = o.device.value_or(train::DefaultTrainingDevice());
  absl::StatusOr<model_files::LoadedModel> m = model_files::LoadModelDir(o.model, device);
  if (!m.ok()) return m.status();
  absl::StatusOr<Workspace> w = Prepare(o, *m);
  if (!w.ok()) return w.status();
  if (absl::Status s = base::MakeDirectories(o.out + "/rounds"); !s.ok()) return s;
  PruneJobResult result;
  result.rounds.push_back(Describe(0, m->model, o.model));
  absl::StatusOr<double> accuracy = DevAccuracy(m->model, *w, *m);
  if (!accuracy.ok()) return accuracy.status();
  result.rounds[0].dev_accuracy_pruned = *accuracy;
  if (!o.quiet) PrintRound(result.rounds[0]);
  for (int64_t k = 1; k <= o.rounds; ++k) {
    if (k > 1) {
      m = model_files::LoadModelDir(RoundDir(o, k - 1), device);
      if (!m.ok()) return m.status();
    }
    absl::StatusOr<PruneRound> round = RunRound(o, *w, *m, k);
    if (!round.ok()) return round.status();
    if (!o.quiet) PrintRound(*round);
    result.rounds.push_back(*round);
    if (absl::Status s =
            base::WriteFileAtomically(o.out + "/prune_report.csv", PruneReportCsv(result));
        !s.ok()) {
      return s;
    }
  }
  return result;
}

std::string PruneReportCsv(const PruneJobResult& result) {
  std::string csv =
      "round,heads_left,ffn_left,parameters,dev_accuracy_pruned,dev_accuracy_tuned,dir\n";
  for (const PruneRound& r : result.rounds) {
    absl::StrAppendFormat(
        &csv, "%d,%d,%d,%d,%.6f,%s,%s\n", r.round, r.heads_left, r.ffn_left, r.parameters,
        r.dev_accuracy_pruned,
        r.dev_accuracy_tuned ? absl::StrFormat("%.6f", *r.dev_accuracy_tuned) : std::string(),
        base::CsvField(r.dir));
  }
  return csv;
}

}  // namespace padless::prune
