// The baseline of the tokenizer benchmark: SentencePiece's own Encode in a plain loop, with no
// padless code in between. Std types only (see spm_baseline.cc).
#ifndef PADLESS_BENCH_TOKENIZE_SPM_BASELINE_H_
#define PADLESS_BENCH_TOKENIZE_SPM_BASELINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace padless::bench {

class SpmBaseline {
 public:
  SpmBaseline();
  ~SpmBaseline();
  // Returns "" on success, else SentencePiece's error.
  std::string Load(const std::string& serialized_model);
  // Encodes every text, reusing one id vector as a careful caller would; returns the id count.
  int64_t EncodeAll(const std::vector<std::string>& texts) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace padless::bench

#endif  // PADLESS_BENCH_TOKENIZE_SPM_BASELINE_H_
