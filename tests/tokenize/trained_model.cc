#include "trained_model.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace padless::tokenize::testing {

std::string SharedDataFile(const std::string& name) {
  const std::string path = absl::StrCat(PADLESS_SHARED_DATA, "/", name);
  return std::ifstream(path) ? path : "";
}

namespace {

std::unique_ptr<Tokenizer> LoadOrTrain() {
  const std::string input = SharedDataFile("botchan.txt");
  if (input.empty()) return nullptr;
  // The name carries the options, so a change of them never reuses an old file.
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/padless_botchan_unigram_", kBotchanVocab, "_v1.model");
  if (absl::StatusOr<Tokenizer> cached = Tokenizer::Load(path); cached.ok()) {
    return std::make_unique<Tokenizer>(*std::move(cached));
  }
  TrainOptions options;
  options.vocab_size = kBotchanVocab;
  options.num_threads = 2;
  absl::StatusOr<Tokenizer> trained = Tokenizer::TrainFromFiles({input}, options);
  if (!trained.ok()) {
    ADD_FAILURE() << trained.status();
    return nullptr;
  }
  // Publish atomically under a process-unique temporary name: parallel test processes may race.
  const std::string tmp = absl::StrCat(path, ".", getpid());
  if (trained->Save(tmp).ok()) std::rename(tmp.c_str(), path.c_str());
  return std::make_unique<Tokenizer>(*std::move(trained));
}

}  // namespace

const Tokenizer* BotchanTokenizer() {
  static const Tokenizer* const tokenizer = LoadOrTrain().release();
  return tokenizer;
}

}  // namespace padless::tokenize::testing
