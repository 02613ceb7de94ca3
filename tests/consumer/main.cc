// Builds against an installed padless and exercises one type from each library that has no heavy
// runtime needs: a TokenizedCorpus round trip through the batching BatchSpec.
#include <cstdio>

#include "padless/batching/batch_spec.h"
#include "padless/corpus/tokenized_corpus.h"

int main() {
  padless::corpus::TokenizedCorpus corpus;
  const int32_t ids[] = {2, 10, 11, 3};
  corpus.Add(ids, {}, 1);
  padless::batching::BatchSpec spec;
  spec.rows.push_back({{0, 0, corpus.length(0)}});
  spec.length = 8;
  if (spec.real_tokens() != 4 || spec.token_slots() != 8) {
    std::printf("consumer: unexpected counts\n");
    return 1;
  }
  std::printf("consumer: ok (%lld real tokens of %lld slots)\n",
              static_cast<long long>(spec.real_tokens()),
              static_cast<long long>(spec.token_slots()));
  return 0;
}
