#include "padless/train/train_job.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"
#include "padless/base/read_file.h"
#include "padless/batching/strategy_registry.h"
#include "padless/corpus/batch_encoder.h"
#include "padless/corpus/corpus_split.h"
#include "padless/eval/sharded_evaluation.h"
#include "padless/model_files/hf_config.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/model_io.h"
#include "padless/models/encoder_config.h"
#include "node_inputs.h"
#include "token_cache.h"

namespace padless::train {
namespace {

namespace tok = padless::tokenize;

// The options' preset, or tiny when none is given (an init_from model then decides).
std::string PresetName(const TrainJobOptions& o) { return o.preset.empty() ? "tiny" : o.preset; }

// The options' sizes; a token budget still to be derived from the corpus stands in as max_len, so
// the options alone can be checked.
batching::StrategySizes SizesOf(const TrainJobOptions& o) {
  return batching::StrategySizes{o.max_len, o.batch_size,
                                 o.max_tokens > 0 ? o.max_tokens : o.max_len, o.train.seed()};
}

absl::StatusOr<batching::PlannerOptions> PlanOf(const TrainJobOptions& o) {
  return BatchingPlan(o.batching, SizesOf(o));
}

// The preset with everything but the data-dependent sizes (vocabulary, labels) filled in.
absl::StatusOr<models::EncoderConfig> BaseConfig(const TrainJobOptions& o) {
  absl::StatusOr<models::EncoderConfig> preset = models::EncoderConfig::Preset(PresetName(o));
  if (!preset.ok()) return preset.status();
  // Learned position tables grow to max_len (a new model reads what it is trained on); a
  // preset's own limit (8192 for ModernBERT) is never cut to a shorter max_len.
  const double dropout = o.dropout.value_or(kNewModelDropout);
  return preset->max_positions(std::max(preset->max_positions(), o.max_len))
      .dropout(dropout)
      .attention_dropout(dropout);
}

// An init_from model's config with the options' dropout, when they give one; else the model's own
// (ModernBERT's is 0, as transformers fine-tunes it).
models::EncoderConfig WithJobsDropout(models::EncoderConfig config, const TrainJobOptions& o) {
  if (!o.dropout) return config;
  return config.dropout(*o.dropout).attention_dropout(*o.dropout);
}

absl::Status ValidateTrainingSettings(const TrainConfig& t) {
  if (t.epochs() < 1) return absl::InvalidArgumentError("--epochs must be >= 1");
  if (t.grad_accum() < 1) return absl::InvalidArgumentError("--grad-accum must be >= 1");
  if (!std::isfinite(t.clip_norm()) || t.clip_norm() < 0) {
    return absl::InvalidArgumentError("--clip-norm must be a finite number >= 0 (0: off)");
  }
  if (t.max_nonfinite_steps() < 0) {
    return absl::InvalidArgumentError("--max-nonfinite-steps must be >= 0");
  }
  if (t.memory_budget_bytes() < 0) return absl::InvalidArgumentError("--memory-budget must be > 0");
  return absl::OkStatus();
}

// ---- Data

// Splits off a deterministic, shuffled share of `train` as the dev set.
corpus::RawCorpus HoldOut(corpus::RawCorpus& train, double fraction, uint64_t seed) {
  corpus::RawCorpus dev =
      corpus::SplitOff(train, static_cast<size_t>(fraction * train.examples.size()), seed);
  dev.source = train.source + " (held out)";
  return dev;
}

corpus::ReaderOptions TrainingReader(const TrainJobOptions& o) {
  corpus::ReaderOptions reader = o.reader;
  reader.require_label = true;
  return reader;
}

// The texts a new tokenizer is trained on: the data file less its held-out dev share. The one
// place the whole file is read into memory (SentencePiece trains on sentences in memory).
absl::StatusOr<corpus::RawCorpus> ReadTrainingTexts(const TrainJobOptions& o) {
  absl::StatusOr<corpus::RawCorpus> train = corpus::ReadCorpus(o.data, TrainingReader(o));
  if (!train.ok()) return train.status();
  if (o.dev.empty() && o.dev_fraction > 0) HoldOut(*train, o.dev_fraction, o.train.seed());
  return train;
}

// ---- Tokenizer

struct ResolvedTokenizer {
  tok::Tokenizer tokenizer;
  std::string path;  // the file it came from; empty when trained here
};

absl::StatusOr<ResolvedTokenizer> TrainTokenizer(const TrainJobOptions& o,
                                                 const corpus::RawCorpus& train) {
  std::vector<std::string> sentences;
  for (const corpus::Example& e : train.examples) {
    sentences.push_back(e.text);
    if (e.has_pair) sentences.push_back(e.text_pair);
  }
  tok::TrainOptions options;
  options.vocab_size = o.vocab_size;
  // A soft limit: a corpus too small for vocab_size pieces gets the vocabulary it supports
  // instead of SentencePiece's "Vocabulary size too high" (issue 13.4).
  options.hard_vocab_limit = false;
  options.num_threads = o.threads;
  absl::StatusOr<tok::Tokenizer> tokenizer = tok::Tokenizer::TrainFromSentences(sentences, options);
  if (!tokenizer.ok()) return tokenizer.status();
  if (!o.quiet) {
    const int pieces = tokenizer->vocab_size();
    absl::FPrintF(stderr, "tokenizer: trained %d pieces on %s%s\n", pieces, o.data,
                  pieces < o.vocab_size
                      ? absl::StrCat(" (--vocab-size ", o.vocab_size,
                                     " is more than this corpus supports; using ", pieces, ")")
                      : "");
  }
  return ResolvedTokenizer{*std::move(tokenizer), ""};
}

// Whether init_from is a Hugging Face model directory (detected by content, hf_checkpoint.h).
bool InitFromHuggingFace(const TrainJobOptions& o) {
  return !o.init_from.empty() && model_files::IsHuggingFaceModelDir(o.init_from);
}

// Whether directory `dir` holds a tokenizer file (one of tokenize::kTokenizerFileNames).
bool HoldsTokenizer(const std::string& dir) {
  for (const char* name : tok::kTokenizerFileNames) {
    if (base::IsRegularFile(base::JoinPath(dir, name))) return true;
  }
  return false;
}

// From an earlier run in `out`, from init_from (a padless or Hugging Face model directory: the
// tokenizer detects its own file), or trained on the training texts.
absl::StatusOr<ResolvedTokenizer> ResolveTokenizer(const TrainJobOptions& o) {
  const std::string dir = HoldsTokenizer(o.out) ? o.out : o.init_from;
  if (dir.empty()) {
    absl::StatusOr<corpus::RawCorpus> train = ReadTrainingTexts(o);
    if (!train.ok()) return train.status();
    return TrainTokenizer(o, *train);
  }
  absl::StatusOr<tok::Tokenizer> tokenizer = tok::Tokenizer::Load(dir);
  if (!tokenizer.ok()) return tokenizer.status();
  const std::string path = base::JoinPath(dir, tokenizer->file_name());
  if (!o.quiet) absl::FPrintF(stderr, "tokenizer: %s (%d pieces)\n", path, tokenizer->vocab_size());
  return ResolvedTokenizer{*std::move(tokenizer), path};
}

// ---- Model

// "12 layers, hidden 768, 12 heads, ffn 3072", and for a pruned model what is left of it.
std::string Shape(const models::EncoderConfig& c) {
  std::string shape = absl::StrFormat("%d layers, hidden %d, %d heads, ffn %d", c.layers(),
                                      c.hidden(), c.heads(), c.ffn());
  if (!c.pruned()) return shape;
  return absl::StrFormat("%s, pruned to %d of %d heads and %d of %d FFN neurons", shape,
                         c.total_heads(), c.layers() * c.heads(), c.total_ffn(),
                         c.layers() * c.ffn());
}

// A max_len beyond the init_from model's position limit, refused from its config.json alone,
// before the corpus is tokenized at that length: the model cannot read the tokens past its limit,
// and cutting max_len silently would train on other texts than those asked for.
absl::Status CheckMaxLenFitsInitFrom(const TrainJobOptions& o) {
  if (o.init_from.empty()) return absl::OkStatus();
  const std::string path = base::JoinPath(o.init_from, model_files::kConfigFile);
  absl::StatusOr<std::string> json = base::ReadFile(path);
  if (!json.ok()) return json.status();
  absl::StatusOr<models::EncoderConfig> config = models::EncoderConfig::FromJson(*json, path);
  if (InitFromHuggingFace(o)) {
    absl::StatusOr<model_files::HfConfig> hf = model_files::ParseHfConfig(*json, path);
    if (!hf.ok()) return hf.status();
    config = hf->encoder;
  }
  if (!config.ok()) return config.status();
  const int64_t limit = config->max_sequence_length();
  if (o.max_len <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--max-len ", o.max_len, " is longer than the --init-from model reads: ", path, " has ",
      limit, " positions (max_positions ", config->max_positions(), " less position_offset ",
      config->position_offset(), "); give --max-len ", limit, " or less"));
}

// Whether `t` is the init_from model's own tokenizer: read from that directory, or a copy of its
// file (the --out directory of a run from it, resumed).
bool IsInitFromsTokenizer(const TrainJobOptions& o, const ResolvedTokenizer& t) {
  const std::string own = base::JoinPath(o.init_from, t.tokenizer.file_name());
  if (t.path == own) return true;
  if (t.path.empty()) return false;  // trained here
  absl::StatusOr<std::string> resolved = base::ReadFile(t.path), original = base::ReadFile(own);
  return resolved.ok() && original.ok() && *resolved == *original;
}

// The init_from model's config, checked against the options' preset and the tokenizer.
absl::StatusOr<models::EncoderConfig> InitFromConfig(const TrainJobOptions& o,
                                             const ResolvedTokenizer& tokenizer) {
  const std::string path = o.init_from + "/" + model_files::kConfigFile;
  absl::StatusOr<std::string> json = base::ReadFile(path);
  if (!json.ok()) return json.status();
  absl::StatusOr<models::EncoderConfig> init = models::EncoderConfig::FromJson(*json, path);
  if (!init.ok()) return init.status();
  absl::StatusOr<models::EncoderConfig> preset = models::EncoderConfig::Preset(PresetName(o));
  if (!preset.ok()) return preset.status();
  if (!o.preset.empty() && Shape(*preset) != Shape(*init)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--preset ", o.preset, " (", Shape(*preset), ") does not match the --init-from model ",
        path, " (", Shape(*init), "); leave --preset out to continue from it"));
  }
  // The model's own tokenizer may hold fewer pieces than the model has rows, as a Hugging Face
  // import allows (ModernBERT rounds 50280 pieces up to 50368 rows), so that such a model
  // fine-tunes and prunes again from its own directory; any other must match.
  const int64_t vocab = tokenizer.tokenizer.vocab_size();
  if (vocab > init->vocab_size() ||
      (vocab < init->vocab_size() && !IsInitFromsTokenizer(o, tokenizer))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--init-from model ", path, " has a vocabulary of ", init->vocab_size(),
                     " pieces but the tokenizer ", tokenizer.path, " has ", vocab,
                     "; use an --out directory without a tokenizer of its own"));
  }
  return *init;
}

// The Hugging Face init_from model, with its own dropout unless the job gives one, and a head for
// `labels` (the checkpoint's own when it has one of that size, else a new one from the job's seed).
absl::StatusOr<models::EncoderClassifier> ImportForLabels(const TrainJobOptions& o,
                                                  const ResolvedTokenizer& tokenizer,
                                                  const corpus::LabelMap& labels) {
  at::manual_seed(o.train.seed());
  absl::StatusOr<model_files::ImportedModel> imported = model_files::ImportHuggingFace(o.init_from, labels.size());
  if (!imported.ok()) return imported.status();
  const models::EncoderConfig config = WithJobsDropout(imported->hf.encoder, o);
  if (tokenizer.tokenizer.vocab_size() > config.vocab_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--init-from ", o.init_from, ": the tokenizer has ", tokenizer.tokenizer.vocab_size(),
        " ids, the model's vocab_size is ", config.vocab_size()));
  }
  models::EncoderClassifier model(config);
  auto from = imported->model->named_parameters();
  at::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) p.value().copy_(from[p.key()]);
  if (!o.quiet) {
    absl::FPrintF(stderr, "init: Hugging Face %s (%s), %s head; dropout %g, attention %g%s\n",
                  o.init_from, Shape(config),
                  imported->head_loaded ? "its classification" : "a new classification",
                  config.dropout(), config.attention_dropout(), o.dropout ? "" : " (its own)");
  }
  return model;
}

// A new model of the preset, or the init_from model with a head for `labels`.
absl::StatusOr<models::EncoderClassifier> BuildModel(const TrainJobOptions& o,
                                             const ResolvedTokenizer& tokenizer,
                                             const corpus::LabelMap& labels) {
  if (InitFromHuggingFace(o)) return ImportForLabels(o, tokenizer, labels);
  absl::StatusOr<models::EncoderConfig> base = BaseConfig(o);
  if (!base.ok()) return base.status();
  models::EncoderConfig config =
      base->vocab_size(tokenizer.tokenizer.vocab_size()).num_labels(labels.size());
  if (absl::Status s = config.Validate(); !s.ok()) return s;
  at::manual_seed(o.train.seed());
  models::EncoderClassifier model(config);
  if (o.init_from.empty()) return model;
  absl::StatusOr<models::EncoderConfig> init = InitFromConfig(o, tokenizer);
  if (!init.ok()) return init.status();
  // The architecture and dropout come from the initial model (unless the job gives a dropout); only
  // the head follows the new labels.
  config = WithJobsDropout(init->num_labels(labels.size()), o);
  model = models::EncoderClassifier(config);
  absl::Status s = model_files::LoadWeights(*model, o.init_from + "/" + model_files::kWeightsFile,
                               /*skip_mismatched_head=*/true);
  if (!s.ok()) return s;
  return model;
}

// The options' TrainConfig with what the job decides: the learning rate and warmup (the
// origin's defaults unless given), where the log and checkpoints go, and progress off when quiet.
TrainConfig FillTrainConfig(const TrainJobOptions& o, int64_t epochs) {
  const OptimizationDefaults defaults = *DefaultOptimization(TrainingOrigin(o));
  const double lr = o.lr.value_or(defaults.lr);
  const double warmup = o.warmup_fraction.value_or(defaults.warmup_fraction);
  if (!o.quiet) {
    absl::FPrintF(stderr, "learning rate %g%s, warmup %g of the steps%s\n", lr,
                  o.lr ? "" : absl::StrCat(" (default for ", defaults.origin, ")"), warmup,
                  o.warmup_fraction ? "" : " (default)");
  }
  const bool writer = o.train.data_parallel().rank() == 0;  // data parallel: rank 0 logs
  return TrainConfig(o.train)
      .epochs(epochs)
      .lr(lr)
      .warmup_fraction(warmup)
      .checkpoint_dir(o.out + "/checkpoints")
      .log_csv(writer ? o.out + "/train_log.csv" : "")
      .progress(o.train.progress() && !o.quiet && writer);
}

// ---- Batch geometry

struct LengthStats {
  double mean = 0;
  int64_t longest = 0;
};

LengthStats StatsOf(const corpus::TokenizedCorpus& train, const corpus::TokenizedCorpus* dev) {
  const std::vector<int64_t> lengths = train.Lengths();
  LengthStats stats;
  stats.mean = static_cast<double>(std::accumulate(lengths.begin(), lengths.end(), int64_t{0})) /
               std::max<size_t>(1, lengths.size());
  stats.longest = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  if (dev != nullptr) {
    for (int64_t n : dev->Lengths()) stats.longest = std::max(stats.longest, n);
  }
  return stats;
}

// The planner options: the options' sizes, with the token budget derived from the encoded corpus
// when none is given (DefaultTokenBudget), and the geometry said in one line.
absl::StatusOr<batching::PlannerOptions> PlanForData(const TrainJobOptions& o,
                                                     const corpus::TokenizedCorpus& train,
                                                     const corpus::TokenizedCorpus* dev) {
  batching::StrategySizes sizes = SizesOf(o);
  std::string why = "--max-tokens";
  if (o.max_tokens == 0 && o.train.memory_budget_bytes() > 0) {
    why = "to be chosen by --memory-budget";
  } else if (o.max_tokens == 0) {
    const LengthStats stats = StatsOf(train, dev);
    sizes.max_len = std::max<int64_t>(3, std::min(o.max_len, stats.longest));
    sizes.max_tokens = DefaultTokenBudget(o.batch_size, stats.mean, sizes.max_len);
    why = absl::StrFormat("default: %d sequences x mean length %.1f, at most %d", o.batch_size,
                          stats.mean, std::max(kMaxDefaultTokensPerBatch, sizes.max_len));
  }
  absl::StatusOr<batching::PlannerOptions> plan = BatchingPlan(o.batching, sizes);
  if (!plan.ok()) return plan.status();
  if (!o.quiet) {
    absl::FPrintF(stderr, "batches: %s, %d tokens per batch (%s) or %d sequences, max_len %d\n",
                  o.batching, sizes.max_tokens, why, sizes.batch_size, sizes.max_len);
  }
  return plan;
}

// ---- The run

// Data parallel: rank 0 resolves the tokenizer and writes the model directory first; the other
// ranks wait for it at a barrier (WaitForRankZero), which rank 0 then joins (LetOtherRanksIn).
absl::Status WaitForRankZero(const distributed::DataParallel& dp) { return dp.group->Barrier(); }
absl::Status LetOtherRanksIn(const distributed::DataParallel& dp) {
  return dp.enabled() && dp.rank() == 0 ? dp.group->Barrier() : absl::OkStatus();
}

// The options' epochs, or DefaultEpochs of the plan's optimizer steps per epoch (said in a line).
absl::StatusOr<int64_t> EpochsOf(const TrainJobOptions& o, const batching::PlannerOptions& plan,
                                 const corpus::TokenizedCorpus& train) {
  if (o.epochs) return *o.epochs;
  absl::StatusOr<std::vector<batching::BatchSpec>> batches =
      batching::Planner(plan).Plan(train.Lengths(), 0);
  if (!batches.ok()) return batches.status();
  const int64_t grad_accum = std::max<int64_t>(1, o.train.grad_accum());
  const int64_t steps = (static_cast<int64_t>(batches->size()) + grad_accum - 1) / grad_accum;
  const int64_t epochs = DefaultEpochs(steps);
  if (!o.quiet) {
    absl::FPrintF(stderr,
                  "epochs: %d (default: at least %d, enough for %d optimizer steps, at most %d)\n",
                  epochs, kMinDefaultEpochs, kMinDefaultSteps, kMaxDefaultEpochs);
  }
  return epochs;
}

struct Encoded {
  corpus::TokenizedCorpus train;  // a mapping of the token cache (or a subset of it)
  std::optional<corpus::TokenizedCorpus> dev;
  uint64_t fingerprint = 0;  // the token cache's, which rank 0 shares with the others
};

// Rank 0 opens or builds the token cache; the other ranks, let in after it, take theirs from their
// node's first rank once all nodes agree on rank 0's fingerprint (node_inputs.h). `say` prints
// the cache line on this rank.
absl::StatusOr<OpenedTokenCache> OpenTokenCache(const TrainJobOptions& o,
                                                const tok::Tokenizer& tokenizer, bool say) {
  if (o.train.data_parallel().rank() != 0) return OpenTokenCacheOnNode(o, tokenizer, say);
  absl::StatusOr<uint64_t> fingerprint = TokenCacheFingerprint(o, tokenizer);
  if (!fingerprint.ok()) return fingerprint.status();
  return OpenOrBuildTokenCache(o, tokenizer, *fingerprint);
}

// Data parallel, the other ranks: rank 0's tokenizer, sent over the process group (rank 0's disk
// may not be theirs), or loaded from this node's disk as rank 0 did when it cannot travel.
absl::StatusOr<ResolvedTokenizer> TakeRankZerosTokenizer(const TrainJobOptions& o) {
  absl::StatusOr<std::optional<tok::Tokenizer>> sent =
      ShareRankZerosTokenizer(o.train.data_parallel(), nullptr);
  if (!sent.ok()) return sent.status();
  if (!sent->has_value()) return ResolveTokenizer(o);
  const std::string name = absl::StrCat("rank 0's ", (*sent)->file_name());
  return ResolvedTokenizer{**std::move(sent), name};
}

// The training set and the dev set: the cache less its held-out share, or the dev file encoded.
absl::StatusOr<Encoded> SplitData(const TrainJobOptions& o, const OpenedTokenCache& cache,
                                  const tok::Tokenizer& tokenizer, const corpus::LabelMap& labels) {
  const double fraction = o.dev.empty() ? o.dev_fraction : 0.0;
  CachedSplit split = HoldOutOfCache(cache.corpus, fraction, o.train.seed());
  Encoded out{std::move(split.train), std::move(split.dev), cache.fingerprint};
  if (o.dev.empty()) return out;
  absl::StatusOr<corpus::RawCorpus> raw = corpus::ReadCorpus(o.dev, TrainingReader(o));
  if (!raw.ok()) return raw.status();
  tok::EncodeOptions encode = o.encode;
  encode.max_length = o.max_len;
  absl::StatusOr<corpus::TokenizedCorpus> dev =
      EncodeWithLabels(tokenizer, *raw, labels, encode, o.threads);
  if (!dev.ok()) return dev.status();
  out.dev = *std::move(dev);
  return out;
}

void PrintStart(const TrainJobOptions& o, const models::EncoderClassifier& model, const Encoded& data,
                const c10::Device& device) {
  if (o.quiet) return;
  const models::EncoderConfig& config = model->config();
  absl::FPrintF(
      stderr, "training %s encoder (%d layers, hidden %d) on %s: %d examples%s, %s, amp %s\n",
      o.init_from.empty() ? PresetName(o) : o.init_from, config.layers(), config.hidden(),
      device.str(), data.train.size(), data.dev ? absl::StrCat(", dev ", data.dev->size()) : "",
      o.batching, models::AmpModeName(o.train.amp()));
}

// Trains `model`, saving the model directory before (so a loadable model exists from the start)
// and after, then evaluates the dev set.
absl::StatusOr<TrainJobResult> TrainAndSave(const TrainJobOptions& o, models::EncoderClassifier& model,
                                            const tok::Tokenizer& tokenizer,
                                            const corpus::LabelMap& labels, const Encoded& data,
                                            const batching::PlannerOptions& plan,
                                            const c10::Device& device) {
  absl::StatusOr<int64_t> epochs = EpochsOf(o, plan, data.train);
  if (!epochs.ok()) return epochs.status();
  const distributed::DataParallel& dp = o.train.data_parallel();
  if (dp.rank() == 0) {
    if (absl::Status s = model_files::SaveModelDir(o.out, model, tokenizer, labels); !s.ok()) return s;
  }
  if (absl::Status s = LetOtherRanksIn(dp); !s.ok()) return s;
  if (dp.enabled() && dp.rank() == 0) {  // what the others wait for (RunOnThisRank)
    if (absl::StatusOr<std::optional<tok::Tokenizer>> s = ShareRankZerosTokenizer(dp, &tokenizer);
        !s.ok()) {
      return s.status();
    }
    if (absl::Status s = AgreeOnTokenCacheAsRankZero(dp, data.fingerprint); !s.ok()) return s;
  }
  PrintStart(o, model, data, device);
  Trainer trainer(model, FillTrainConfig(o, *epochs).pad_id(tokenizer.special_ids().pad), plan,
                  device);
  absl::StatusOr<TrainResult> trained = trainer.Train(data.train, data.dev ? &*data.dev : nullptr);
  if (!trained.ok()) return trained.status();
  if (dp.rank() == 0) {
    if (absl::Status s = model_files::SaveModelDir(o.out, model, tokenizer, labels); !s.ok()) return s;
  }
  TrainJobResult result;
  result.model_dir = o.out;
  result.device = device;
  result.train_examples = data.train.size();
  result.dev_examples = data.dev ? data.dev->size() : 0;
  result.train = *std::move(trained);
  // The saved model is the best dev evaluation's, and so is its result; only a run resumed past
  // its best evaluation lacks it and evaluates again.
  result.dev = result.train.best_dev;
  if (data.dev && !result.dev) {
    absl::StatusOr<eval::EvalResult> eval = eval::EvaluateOnRanks(model, *data.dev, plan, device, o.train.amp(),
                                                      tokenizer.special_ids().pad, dp);
    if (!eval.ok()) return eval.status();
    result.dev = *std::move(eval);
  }
  return result;
}

// The job on this rank. `say_cache`: print the token cache line, which the other ranks print too
// (one line each), so a log shows who tokenized.
absl::StatusOr<TrainJobResult> RunOnThisRank(const TrainJobOptions& o, bool say_cache) {
  const distributed::DataParallel& dp = o.train.data_parallel();
  // Every rank checks (the same options, the same answer), so none waits on a rank that failed.
  if (absl::Status s = CheckMaxLenFitsInitFrom(o); !s.ok()) return s;
  // The other ranks take the tokenizer that rank 0 resolved (or trained), and a token cache of
  // the fingerprint of the one it opened or built.
  if (dp.rank() != 0) {
    if (absl::Status s = WaitForRankZero(dp); !s.ok()) return s;
  }
  const c10::Device device = o.device.value_or(DefaultTrainingDevice());
  absl::StatusOr<ResolvedTokenizer> tokenizer =
      dp.rank() == 0 ? ResolveTokenizer(o) : TakeRankZerosTokenizer(o);
  if (!tokenizer.ok()) return tokenizer.status();
  absl::StatusOr<OpenedTokenCache> cache = OpenTokenCache(o, tokenizer->tokenizer, say_cache);
  if (!cache.ok()) return cache.status();
  absl::StatusOr<corpus::LabelMap> labels =
      corpus::LabelMap::FromNames(cache->corpus.label_names());
  if (!labels.ok()) return labels.status();
  if (labels->size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(o.data, ": needs at least two distinct labels"));
  }
  absl::StatusOr<Encoded> data = SplitData(o, *cache, tokenizer->tokenizer, *labels);
  if (!data.ok()) return data.status();
  absl::StatusOr<batching::PlannerOptions> plan =
      PlanForData(o, data->train, data->dev ? &*data->dev : nullptr);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<models::EncoderClassifier> model = BuildModel(o, *tokenizer, *labels);
  if (!model.ok()) return model.status();
  return TrainAndSave(o, *model, tokenizer->tokenizer, *labels, *data, *plan, device);
}

}  // namespace

absl::StatusOr<batching::PlannerOptions> BatchingPlan(const std::string& name,
                                                      const batching::StrategySizes& sizes) {
  if (sizes.max_tokens < sizes.max_len) {
    return absl::InvalidArgumentError(absl::StrCat("--max-tokens (", sizes.max_tokens,
                                                   ") must be >= --max-len (", sizes.max_len, ")"));
  }
  absl::StatusOr<batching::PlannerOptions> plan = batching::LookupStrategy(name, sizes);
  if (!plan.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--batching: ", plan.status().message()));
  }
  return plan;
}

c10::Device DefaultTrainingDevice() {
  const bool cuda = at::globalContext().hasCUDA() && at::detail::getCUDAHooks().deviceCount() > 0;
  return cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
}

std::string TrainingOrigin(const TrainJobOptions& o) {
  return o.init_from.empty() ? PresetName(o) : kPretrainedOrigin;
}

absl::Status ValidateTrainJobOptions(const TrainJobOptions& o) {
  if (o.data.empty()) return absl::InvalidArgumentError("--data is required");
  if (o.out.empty()) return absl::InvalidArgumentError("--out is required");
  if (o.max_len < 3) {
    return absl::InvalidArgumentError(absl::StrCat("--max-len must be >= 3, got ", o.max_len));
  }
  if (!(o.dev_fraction >= 0.0 && o.dev_fraction < 1.0)) {
    return absl::InvalidArgumentError("--dev-fraction must be in [0, 1)");
  }
  if (o.vocab_size < 1) return absl::InvalidArgumentError("--vocab-size must be >= 1");
  if (o.batch_size < 1) return absl::InvalidArgumentError("--batch-size must be >= 1");
  if (o.epochs && *o.epochs < 1) return absl::InvalidArgumentError("--epochs must be >= 1");
  if (o.max_tokens < 0) return absl::InvalidArgumentError("--max-tokens must be >= 1");
  if (o.lr && !(*o.lr >= 0)) return absl::InvalidArgumentError("--lr must be >= 0");
  if (o.warmup_fraction && !(*o.warmup_fraction >= 0 && *o.warmup_fraction <= 1)) {
    return absl::InvalidArgumentError("--warmup must be in [0, 1]");
  }
  absl::StatusOr<models::EncoderConfig> base = BaseConfig(o);
  if (!base.ok()) return base.status();
  if (absl::Status s = base->num_labels(2).Validate(); !s.ok()) return s;
  if (absl::StatusOr<batching::PlannerOptions> plan = PlanOf(o); !plan.ok()) return plan.status();
  return ValidateTrainingSettings(o.train);
}

absl::StatusOr<TrainJobResult> RunTrainJob(const TrainJobOptions& o) {
  if (absl::Status s = ValidateTrainJobOptions(o); !s.ok()) return s;
  if (o.train.data_parallel().rank() == 0) return RunOnThisRank(o, !o.quiet);
  TrainJobOptions quiet = o;  // rank 0 speaks for the job
  quiet.quiet = true;
  return RunOnThisRank(quiet, !o.quiet);
}

absl::StatusOr<corpus::TokenizedCorpus> EncodeWithLabels(const tok::Tokenizer& tokenizer,
                                                         const corpus::RawCorpus& raw,
                                                         const corpus::LabelMap& labels,
                                                         const tok::EncodeOptions& encode,
                                                         int threads) {
  for (const corpus::Example& e : raw.examples) {
    if (!labels.Id(e.label).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(raw.source, ":", e.line, ": label '", e.label,
                                                     "' is not one of the model's labels (",
                                                     absl::StrJoin(labels.names(), ", "), ")"));
    }
  }
  corpus::BatchEncodeOptions options;
  options.encode = encode;
  options.num_threads = threads;
  return corpus::EncodeCorpus(tokenizer, raw, labels, options);
}

}  // namespace padless::train
