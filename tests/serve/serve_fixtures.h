// Test helpers of tests/serve: a tiny trained tokenizer and encoder, saved as a model directory
// that the engine and TextClassifier load (4 KB of weights: every test runs in milliseconds).
#ifndef PADLESS_TESTS_SERVE_SERVE_FIXTURES_H_
#define PADLESS_TESTS_SERVE_SERVE_FIXTURES_H_

#include <cstdint>
#include <string>

#include "padless/models/encoder_config.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::serve::testing {

// A fresh, empty directory under the test's temp dir.
std::string ScratchDir(const std::string& name);

// A SentencePiece tokenizer of about 40 pieces over a small film-review vocabulary.
tokenize::Tokenizer SmallTokenizer();

// Hidden 32, 2 layers, 4 heads, 32 positions (so that texts over max_len are easy to write).
models::EncoderConfig SmallConfig(int64_t vocab, int64_t labels);

// Trains nothing: a seeded random SmallConfig model with labels neg/neutral/pos, saved into a new
// scratch directory; returns the directory.
std::string WriteSmallModelDir(const std::string& name, uint64_t seed = 3);

// `words` words of the tokenizer's vocabulary, varied by `seed`.
std::string Words(int words, int seed);

}  // namespace padless::serve::testing

#endif  // PADLESS_TESTS_SERVE_SERVE_FIXTURES_H_
