// Writes the embedding and reranker test models (embedding_fixtures.h) under a directory and
// prints it: make_embedding_goldens.py computes sentence-transformers' outputs on exactly the
// directories the C++ tests load.
//   padless_write_embedding_model_dirs OUT_DIR
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "embedding_fixtures.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  const absl::Status s = padless::serve::testing::WriteEmbeddingModelDirs(root);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("%s\n", root.c_str());
  return 0;
}
