// A small SentencePiece model trained on ../shared/data/botchan.txt, shared by the tokenizer tests.
// ctest runs every test in its own process, so the model is trained once and kept in the test
// temp directory (keyed by its options) instead of once per test.
#ifndef PADLESS_TESTS_TOKENIZE_TRAINED_MODEL_H_
#define PADLESS_TESTS_TOKENIZE_TRAINED_MODEL_H_

#include <string>

#include "padless/tokenize/tokenizer.h"

namespace padless::tokenize::testing {

inline constexpr int kBotchanVocab = 1000;

// Path of a shared data file, or "" when ../shared/data is absent (tests then GTEST_SKIP).
std::string SharedDataFile(const std::string& name);

// The botchan unigram model; nullptr when the data is absent. Trained at most once per process
// (and reused across processes); a training failure fails the calling test.
const Tokenizer* BotchanTokenizer();

}  // namespace padless::tokenize::testing

#endif  // PADLESS_TESTS_TOKENIZE_TRAINED_MODEL_H_
