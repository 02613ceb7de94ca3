#include "serve_fixtures.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "padless/corpus/label_map.h"
#include "padless/model_files/model_io.h"

namespace padless::serve::testing {
namespace {

constexpr const char* kWords[] = {"good",   "bad",    "film", "plot", "great",
                                  "awful",  "actors", "the",  "a",    "story",
                                  "boring", "funny",  "and",  "was",  "very"};

}  // namespace

std::string ScratchDir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/padless_serve_" + name + "_" + std::to_string(::getpid());
  EXPECT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  return dir;
}

tokenize::Tokenizer SmallTokenizer() {
  std::vector<std::string> sentences;
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (int k = 0; k < 8; ++k) s += std::string(kWords[(i * 7 + k * 3) % 15]) + " ";
    sentences.push_back(s);
  }
  tokenize::TrainOptions options;
  options.vocab_size = 40;
  absl::StatusOr<tokenize::Tokenizer> t =
      tokenize::Tokenizer::TrainFromSentences(sentences, options);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

models::EncoderConfig SmallConfig(int64_t vocab, int64_t labels) {
  return models::EncoderConfig()
      .vocab_size(vocab)
      .hidden(32)
      .layers(2)
      .heads(4)
      .ffn(64)
      .max_positions(32)
      .num_labels(labels);
}

std::string WriteSmallModelDir(const std::string& name, uint64_t seed) {
  const std::string dir = ScratchDir(name);
  tokenize::Tokenizer tokenizer = SmallTokenizer();
  at::manual_seed(seed);
  models::EncoderClassifier model(SmallConfig(tokenizer.vocab_size(), 3));
  const corpus::LabelMap labels = *corpus::LabelMap::FromNames({"neg", "neutral", "pos"});
  const absl::Status s = model_files::SaveModelDir(dir, model, tokenizer, labels);
  EXPECT_TRUE(s.ok()) << s;
  return dir;
}

std::string Words(int words, int seed) {
  std::string out;
  for (int k = 0; k < words; ++k) {
    if (k > 0) out += " ";
    out += kWords[(seed * 5 + k * 7 + k / 3) % 15];
  }
  return out;
}

}  // namespace padless::serve::testing
