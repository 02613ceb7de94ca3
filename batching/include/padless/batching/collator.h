// The collator: copies the tokens of one BatchSpec out of a TokenizedCorpus into the Batch tensors
// (padded [B,L] + mask, packed rows [R,L] with restarting positions and cu_seqlens, or flat varlen
// [T]) with plain pointer loops over contiguous, optionally pinned, CPU memory.
#ifndef PADLESS_BATCHING_COLLATOR_H_
#define PADLESS_BATCHING_COLLATOR_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/batching/batch.h"
#include "padless/batching/batch_spec.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/special_tokens.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::batching {

enum class PadSide { kRight, kLeft };

struct CollatorOptions {
  int64_t pad_id = tokenize::kPadId;
  // kPadded only: left padding puts each sequence at the end of its row (decoder-style models).
  // Packed rows always fill from the left.
  PadSide pad_side = PadSide::kRight;
  // Allocate the tensors in page-locked memory (ignored when CUDA is unavailable), so that
  // Batch::To(cuda, non_blocking=true) is a true asynchronous copy.
  bool pin_memory = false;
};

class Collator {
 public:
  explicit Collator(CollatorOptions options = {}) : options_(options) {}
  const CollatorOptions& options() const { return options_; }

  // Builds the tensors of `spec` (layout in batch.h). Fails with a status naming the batch row
  // and example when the spec does not fit the corpus (index or window out of range, a row longer
  // than spec.length). A spec without rows and of length 0 (the planner's empty batch) gives a
  // batch of 0 sequences.
  absl::StatusOr<Batch> Collate(const corpus::TokenizedCorpus& corpus, const BatchSpec& spec) const;

  // Encoded sequences as one kVarlen batch, each whole and in order (labels 0): the serving
  // engine's batches. Token types only when `with_types` (a model that uses them, with a pair in
  // the batch).
  absl::StatusOr<Batch> CollateVarlen(absl::Span<const tokenize::Encoding* const> sequences,
                                      bool with_types) const;

 private:
  CollatorOptions options_;
};

// The dense attention mask of a padded or packed batch: bool [R, 1, L, L] on the batch's device,
// true where query i may attend to key j, i.e. both tokens belong to the same sequence. A padding
// query attends to itself only, so that no softmax row is empty (no NaN); its output is ignored.
// Fails for kVarlen batches, which have no rows.
absl::StatusOr<at::Tensor> BlockDiagonalMask(const Batch& batch);

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_COLLATOR_H_
