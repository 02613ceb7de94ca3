// TrainJob: everything `padless train` does, as one library call. From a labeled file (and
// optionally a dev file, or a seeded share held out of the training file) it resolves a
// tokenizer, builds the label map, encodes, builds or continues a model, plans memory, trains,
// writes a model directory and evaluates on the dev set:
//
//   padless::train::TrainJobOptions job;
//   job.data = "train.tsv";
//   job.dev = "dev.tsv";
//   job.out = "out/model";
//   absl::StatusOr<padless::train::TrainJobResult> result = padless::train::RunTrainJob(job);
//
// The model directory (SaveModelDir) is written before training, so a loadable model exists from
// the start, and again at the end; DIR/train_log.csv and DIR/checkpoints/ hold the log and the
// checkpoints (TrainConfig.checkpoint_dir and .log_csv are set from `out`).
//
// Data: the training file is tokenized once into a memory-mapped cache (`token_cache`, see
// train/token_cache.h), streaming, so a file larger than memory can be trained on; with data
// parallelism rank 0 builds it and every rank maps it and reads only its own batches. The dev share
// of `dev_fraction` is a subset of the same mapping; a `dev` file is read and encoded in memory.
//
// Tokenizer: DIR/tokenizer.model when `out` already holds one, else the init_from model's, else a
// new SentencePiece model of at most vocab_size pieces trained on the training texts (fewer when
// the corpus cannot support that many; the job says so on stderr). Only this last case reads the
// whole training file into memory.
// init_from: the architecture comes from that model (a `preset` that differs is an error), its
// vocabulary must match the tokenizer's (its own tokenizer may have fewer pieces: ModernBERT rounds
// its vocabulary up), only the classification head follows the new labels, and the model keeps its
// own dropout unless `dropout` is given.
//
// Errors. ValidateTrainJobOptions finds every problem of the options alone (InvalidArgument,
// naming the option the way the padless CLI spells it, e.g. "--max-len must be >= 3"); RunTrainJob
// returns those before touching any file. Every other error of RunTrainJob comes from the data,
// the files or the run itself (a bad row, a label the init model lacks, a full disk, a budget too
// small), so a caller that must tell a usage error from a failure calls ValidateTrainJobOptions
// first. Progress and the chosen tokenizer are printed on stderr unless `quiet`.
#ifndef PADLESS_TRAIN_TRAIN_JOB_H_
#define PADLESS_TRAIN_TRAIN_JOB_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/batching/planner.h"
#include "padless/batching/strategy_registry.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/label_map.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/tokenizer.h"
#include "padless/train/trainer.h"
#include "padless/train/training_defaults.h"

namespace padless::train {

struct TrainJobOptions {
  // Data. `data` and `out` are required.
  std::string data;           // labeled training file (TSV, CSV or JSONL; see `reader`)
  std::string dev;            // labeled dev file; empty: dev_fraction decides
  double dev_fraction = 0.0;  // without `dev`: hold out this share of `data`, in [0, 1)
  std::string out;            // the model directory written
  // The tokenized training data, memory-mapped (train/token_cache.h): built once from `data`,
  // reused while the data, tokenizer and encoding options match. Empty: DIR/kTokenCacheFile.
  std::string token_cache;
  corpus::ReaderOptions reader;  // require_label is always on for training data
  // How texts become model input; encode.max_length is replaced by max_len.
  tokenize::EncodeOptions encode;
  int64_t max_len = 512;  // tokens per sequence, special tokens included; >= 3
  int threads = 0;        // tokenizer training and encoding (0: hardware concurrency)

  // Tokenizer trained when neither `out` nor `init_from` has one: an upper bound (see above).
  int vocab_size = 16000;

  // Model.
  std::string preset;     // tiny, small, base, modernbert-base; empty: tiny, or init_from's
  std::string init_from;  // a trained model directory to continue from
  // Dropout and attention dropout of the model trained; empty: an init_from model keeps its own
  // (a Hugging Face model's config.json, e.g. ModernBERT's 0, or a padless model's), a new model
  // gets kNewModelDropout.
  std::optional<double> dropout;

  // Batching: any name of padless/batching/strategy_registry.h.
  std::string batching = "packed";
  // Sequences per batch: of the fixed-size strategies, and the target of the default token budget.
  int64_t batch_size = kDefaultSequencesPerBatch;
  // Token slots per batch of the token-budget strategies, >= max_len. 0: DefaultTokenBudget
  // (training_defaults.h) of batch_size and the encoded corpus (its mean and longest length; the
  // plan's max_len is then the longest encoded sequence, train and dev, at most max_len); with a
  // memory budget (train.memory_budget_bytes()) the budget chooses it instead.
  int64_t max_tokens = 0;

  // Optimization, the model's runtime settings (train.runtime(): attention backend, fused layers,
  // activation memory, checkpoint policy), memory budget and seed. The job sets checkpoint_dir and
  // log_csv under `out`, turns progress off when `quiet`, and sets lr and warmup_fraction from the
  // two fields below.
  TrainConfig train;
  // Peak learning rate and warmup share; empty: DefaultOptimization (training_defaults.h) of the
  // model's origin: the preset when training from scratch, kPretrainedOrigin with init_from.
  std::optional<double> lr;
  std::optional<double> warmup_fraction;
  // Epochs; empty: DefaultEpochs (training_defaults.h) of the plan's optimizer steps per epoch.
  // Either way it replaces train.epochs().
  std::optional<int64_t> epochs;
  std::optional<c10::Device> device;  // empty: DefaultTrainingDevice()
  bool quiet = false;
};

// The dropout and attention dropout of a new model (no init_from) when the options give none.
inline constexpr double kNewModelDropout = 0.1;

// The token cache's file name in the model directory when TrainJobOptions::token_cache is empty.
inline constexpr char kTokenCacheFile[] = "train_tokens.cache";

struct TrainJobResult {
  std::string model_dir;
  c10::Device device = c10::Device(c10::kCPU);
  int64_t train_examples = 0;  // after the hold-out split
  int64_t dev_examples = 0;
  TrainResult train;
  std::optional<eval::EvalResult> dev;  // the saved model on the dev set, when there is one
};

// CUDA device 0 when one is available, else the CPU.
c10::Device DefaultTrainingDevice();

// The origin whose OptimizationDefaults a job without lr / warmup_fraction uses: its preset (tiny
// when none) from scratch, kPretrainedOrigin with init_from.
std::string TrainingOrigin(const TrainJobOptions& options);

// Problems of the options alone (see the header comment); checks nothing on disk.
absl::Status ValidateTrainJobOptions(const TrainJobOptions& options);

absl::StatusOr<TrainJobResult> RunTrainJob(const TrainJobOptions& options);

// The planner options of a batching strategy name (padless/batching/strategy_registry.h) at
// `sizes`: InvalidArgument naming --batching for an unknown name, or --max-tokens when it is
// below --max-len.
absl::StatusOr<batching::PlannerOptions> BatchingPlan(const std::string& name,
                                                      const batching::StrategySizes& sizes);

// Encodes `raw` with the ids of `labels`; a label outside the map is InvalidArgument naming the
// file, the line and the known labels. Used for training, dev and evaluation data alike.
absl::StatusOr<corpus::TokenizedCorpus> EncodeWithLabels(const tokenize::Tokenizer& tokenizer,
                                                         const corpus::RawCorpus& raw,
                                                         const corpus::LabelMap& labels,
                                                         const tokenize::EncodeOptions& encode,
                                                         int threads);

}  // namespace padless::train

#endif  // PADLESS_TRAIN_TRAIN_JOB_H_
