// Test helpers shared by the trainer, fault and soak tests: a small learnable synthetic corpus, a
// tiny encoder, quiet single-threaded training options, parameter snapshots, and a temporary
// directory removed with POSIX calls.
#ifndef PADLESS_TESTS_MODELS_TRAINER_FIXTURES_H_
#define PADLESS_TESTS_MODELS_TRAINER_FIXTURES_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "padless/batching/planner.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/models/encoder.h"
#include "padless/train/grad_scaler.h"
#include "padless/train/trainer.h"

namespace padless::train::testing {

// `n` examples of 4..20 tokens in [10, 50) between [CLS]=2 and [SEP]=3; label 1 iff token 7
// occurs (learnable by attention in a few epochs). Deterministic per seed.
corpus::TokenizedCorpus SyntheticCorpus(uint64_t seed, int64_t n);

// 2 layers, hidden 32, vocabulary 50, 2 labels.
models::EncoderConfig TinyConfig(double dropout);

// Padded: 8 sequences per batch. Packed: 2 rows of 64 slots (about 8 sequences) per batch.
batching::PlannerOptions Plan(batching::Sampler sampler);

// No progress line, no loader threads.
TrainConfig Quiet();

// Detached copies of every parameter, in named_parameters() order.
std::vector<at::Tensor> Params(models::EncoderClassifier& m);
double MaxDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b);
// Same shapes and bit-for-bit equal values (NaN never equals: a NaN parameter fails).
bool BitwiseEqual(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b);
bool AllFinite(const std::vector<at::Tensor>& tensors);

// A GradScaler's options with loss scaling off: the steps of these tests run fp32 or bf16.
GradScalerOptions NoLossScaling();

// A fresh directory, removed afterwards (POSIX calls: libtorch.so's exported std::filesystem
// symbols make std::filesystem::remove_all crash in binaries linked against it).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& str() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Names in `dir` that end with `suffix`, sorted.
std::vector<std::string> FilesEndingWith(const std::string& dir, const std::string& suffix);

}  // namespace padless::train::testing

#endif  // PADLESS_TESTS_MODELS_TRAINER_FIXTURES_H_
