// The README's C++ quickstart, compiled and run by the install_consumer test against an installed
// padless: train a tokenizer, encode labeled texts, pack them into rows, and run the encoder on
// the packed batch (varlen semantics on the CPU, flash attention on a GPU).
#include <cstdio>
#include <string>
#include <vector>

#include "padless/batching/collator.h"
#include "padless/batching/planner.h"
#include "padless/corpus/batch_encoder.h"
#include "padless/models/encoder.h"
#include "padless/tokenize/tokenizer.h"

namespace pt = padless::tokenize;
namespace pc = padless::corpus;
namespace pb = padless::batching;
namespace pm = padless::models;

int main() {
  // 1. A tokenizer trained in memory (pt::Tokenizer::Load("m.model") loads a saved one).
  std::vector<std::string> texts;
  std::vector<int64_t> labels;
  for (int i = 0; i < 400; ++i) {
    texts.push_back(i % 2 ? "a truly wonderful , moving film number " + std::to_string(i)
                          : "a dull and tedious mess , scene " + std::to_string(i) + " drags on");
    labels.push_back(i % 2);
  }
  pt::TrainOptions train;
  train.vocab_size = 100;
  absl::StatusOr<pt::Tokenizer> tokenizer = pt::Tokenizer::TrainFromSentences(texts, train);
  if (!tokenizer.ok()) return std::printf("%s\n", tokenizer.status().ToString().c_str()), 1;

  // 2. Encode in parallel into a TokenizedCorpus ([CLS] text [SEP], truncated to max_length).
  pc::BatchEncodeOptions encode;
  encode.encode.max_length = 64;
  absl::StatusOr<pc::TokenizedCorpus> corpus =
      pc::EncodeTexts(*tokenizer, texts, /*pairs=*/{}, labels, encode);
  if (!corpus.ok()) return std::printf("%s\n", corpus.status().ToString().c_str()), 1;

  // 3. Plan an epoch of packed rows (256 tokens each, 4 rows per batch) and collate one batch.
  pb::Planner planner(
      pb::PlannerOptions().sampler(pb::Sampler::kPacked).max_len(256).batch_size(4));
  absl::StatusOr<std::vector<pb::BatchSpec>> plan = planner.Plan(corpus->Lengths(), /*epoch=*/0);
  if (!plan.ok()) return std::printf("%s\n", plan.status().ToString().c_str()), 1;
  absl::StatusOr<pb::Batch> batch = pb::Collator().Collate(*corpus, plan->front());
  if (!batch.ok()) return std::printf("%s\n", batch.status().ToString().c_str()), 1;

  // 4. The encoder picks its attention backend from the batch layout; one logit row per sequence.
  pm::EncoderClassifier model(pm::EncoderConfig::Tiny().vocab_size(tokenizer->vocab_size()));
  at::Tensor logits = model->forward(*batch);
  std::printf("quickstart: %lld batches, %lld sequences packed in %lld rows, logits [%lld, %lld]\n",
              static_cast<long long>(plan->size()), static_cast<long long>(batch->num_sequences),
              static_cast<long long>(batch->input_ids.size(0)),
              static_cast<long long>(logits.size(0)), static_cast<long long>(logits.size(1)));
  return logits.size(0) == batch->num_sequences ? 0 : 1;
}
