// Single-thread encode throughput of a Hugging Face tokenizer.json in padless (Tokenizer::Encode
// with [CLS]/[SEP], no truncation), the counterpart of wordpiece_vs_hf.py's Rust `tokenizers`
// measurement on the same texts. Prints one line:
//   padless texts=N tokens=T bytes=B seconds=S MB/s=X tokens/s=Y
// usage: wordpiece_bench TOKENIZER_JSON TEXTS_FILE [REPEATS]   (TEXTS_FILE: one text per line)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "padless/tokenize/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: wordpiece_bench TOKENIZER_JSON TEXTS_FILE [REPEATS]\n");
    return 2;
  }
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
  absl::StatusOr<padless::tokenize::Tokenizer> tokenizer =
      padless::tokenize::Tokenizer::Load(argv[1]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> texts;
  std::ifstream in(argv[2]);
  int64_t bytes = 0;
  for (std::string line; std::getline(in, line);) {
    bytes += static_cast<int64_t>(line.size());
    texts.push_back(std::move(line));
  }
  padless::tokenize::EncodeOptions options;
  options.max_length = 0;
  double best = 1e30;
  int64_t tokens = 0;
  for (int r = 0; r < repeats; ++r) {  // best of `repeats`, as the Python side does
    tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& text : texts) {
      absl::StatusOr<padless::tokenize::Encoding> e = tokenizer->Encode(text, options);
      if (!e.ok()) return 1;
      tokens += static_cast<int64_t>(e->ids.size());
    }
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf("padless texts=%zu tokens=%lld bytes=%lld seconds=%.4f MB/s=%.2f tokens/s=%.0f\n",
              texts.size(), static_cast<long long>(tokens), static_cast<long long>(bytes), best,
              static_cast<double>(bytes) / best / 1e6, static_cast<double>(tokens) / best);
  return 0;
}
