#include "padless/batching/collator.h"

#include <ATen/Context.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eye.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::batching {
namespace {

struct Buffers {
  at::TensorOptions i64;
  at::TensorOptions i32;
  at::TensorOptions b8;
};

Buffers MakeOptions(bool pin) {
  // Pinned allocation needs a CUDA device; without one it would throw.
  const bool pinned = pin && at::globalContext().hasCUDA();
  const at::TensorOptions base = at::TensorOptions().device(at::kCPU).pinned_memory(pinned);
  return {base.dtype(at::kLong), base.dtype(at::kInt), base.dtype(at::kBool)};
}

absl::Status CheckSpec(const corpus::TokenizedCorpus& corpus, const BatchSpec& spec) {
  // No rows and length 0: the planner's empty batch, a data-parallel rank's share of a step that
  // has no data for it (planner.h). It collates to a batch of 0 sequences, which the training step
  // skips.
  if (spec.rows.empty() && spec.length == 0) return absl::OkStatus();
  if (spec.rows.empty()) return absl::InvalidArgumentError("collate: the batch has no rows");
  if (spec.layout == Layout::kVarlen && spec.rows.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("collate: a varlen batch has one row of pieces, got ", spec.rows.size()));
  }
  const int64_t n_examples = static_cast<int64_t>(corpus.size());
  for (size_t r = 0; r < spec.rows.size(); ++r) {
    const auto& row = spec.rows[r];
    if (row.empty())
      return absl::InvalidArgumentError(absl::StrCat("collate: row ", r, " is empty"));
    if (spec.layout == Layout::kPadded && row.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("collate: padded row ", r, " holds ", row.size(), " sequences, not 1"));
    }
    int64_t used = 0;
    for (const Placement& p : row) {
      if (p.example < 0 || p.example >= n_examples) {
        return absl::OutOfRangeError(absl::StrCat("collate: row ", r, ": example ", p.example,
                                                  " is outside the corpus of ", n_examples));
      }
      const int64_t len = corpus.length(static_cast<size_t>(p.example));
      if (!p.FitsExample(len)) {
        return absl::OutOfRangeError(absl::StrCat("collate: row ", r, ": piece (start ", p.start,
                                                  ", length ", p.length, ", tail ", p.tail,
                                                  ", lead ", p.lead, ") does not fit example ",
                                                  p.example, " of ", len, " tokens"));
      }
      // A mapped corpus's blocks are checksummed when first read (tokenized_corpus.h).
      if (absl::Status s = corpus.VerifyExample(static_cast<size_t>(p.example)); !s.ok()) {
        return s;
      }
      used += p.length;
    }
    if (spec.layout != Layout::kVarlen && used > spec.length) {
      return absl::InvalidArgumentError(absl::StrCat(
          "collate: row ", r, " holds ", used, " tokens, more than the row length ", spec.length));
    }
  }
  return absl::OkStatus();
}

// Writes the tokens (and, when present, type ids) of piece `p` at dst; returns its length.
inline void CopyPiece(const corpus::TokenizedCorpus& corpus, const Placement& p, int64_t* ids,
                      int64_t* types) {
  const int32_t* src = corpus.tokens(static_cast<size_t>(p.example)).data();
  const int64_t ex_len = corpus.length(static_cast<size_t>(p.example));
  const int8_t* t =
      types != nullptr ? corpus.type_ids(static_cast<size_t>(p.example)).data() : nullptr;
  for (int64_t i = 0; i < p.length; ++i) {
    const int64_t from = p.SourceIndex(i, ex_len);
    ids[i] = src[from];
    if (t != nullptr) types[i] = t[from];
  }
}

inline void Iota(int64_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = i;
}

inline void Fill(int64_t* dst, int64_t n, int64_t v) {
  for (int64_t i = 0; i < n; ++i) dst[i] = v;
}

Batch CollateRows(const corpus::TokenizedCorpus& corpus, const BatchSpec& spec,
                  const CollatorOptions& options) {
  const Buffers opt = MakeOptions(options.pin_memory);
  const bool varlen = spec.layout == Layout::kVarlen;
  const bool packed = spec.layout == Layout::kPacked;
  const bool left = spec.layout == Layout::kPadded && options.pad_side == PadSide::kLeft;
  const int64_t rows = static_cast<int64_t>(spec.rows.size());
  const int64_t n = spec.num_sequences();
  const int64_t real = spec.real_tokens();
  const int64_t width = varlen ? real : spec.length;
  const int64_t slots = varlen ? real : rows * width;

  Batch b;
  b.layout = spec.layout;
  b.num_sequences = n;
  b.real_tokens = real;
  b.padded_tokens = slots - real;
  const std::vector<int64_t> grid =
      varlen ? std::vector<int64_t>{real} : std::vector<int64_t>{rows, width};
  b.input_ids = at::empty(grid, opt.i64);
  b.position_ids = at::empty(grid, opt.i64);
  if (corpus.has_type_ids()) b.token_type_ids = at::empty(grid, opt.i64);
  if (!varlen) b.attention_mask = at::empty(grid, opt.b8);
  if (packed || varlen) b.segment_ids = at::empty(grid, opt.i64);
  if (!varlen) b.token_index = at::empty({real}, opt.i64);
  b.cu_seqlens = at::empty({n + 1}, opt.i32);
  b.sequence_location = at::empty({n, 2}, opt.i64);
  b.labels = at::empty({n}, opt.i64);
  b.example_ids = at::empty({n}, opt.i64);

  int64_t* ids = b.input_ids.data_ptr<int64_t>();
  int64_t* pos = b.position_ids.data_ptr<int64_t>();
  int64_t* types = b.token_type_ids.defined() ? b.token_type_ids.data_ptr<int64_t>() : nullptr;
  bool* mask = b.attention_mask.defined() ? b.attention_mask.data_ptr<bool>() : nullptr;
  int64_t* seg = b.segment_ids.defined() ? b.segment_ids.data_ptr<int64_t>() : nullptr;
  int64_t* tok_index = b.token_index.defined() ? b.token_index.data_ptr<int64_t>() : nullptr;
  int32_t* cu = b.cu_seqlens.data_ptr<int32_t>();
  int64_t* loc = b.sequence_location.data_ptr<int64_t>();
  int64_t* labels = b.labels.data_ptr<int64_t>();
  int64_t* examples = b.example_ids.data_ptr<int64_t>();

  int64_t seq = 0;
  int64_t cursor = 0;  // real tokens written so far (cu_seqlens, token_index)
  cu[0] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& row = spec.rows[r];
    int64_t used = 0;
    for (const Placement& p : row) used += p.length;
    const int64_t base = varlen ? 0 : r * width;
    // Padding of this row: [pad_begin, pad_begin + pad) relative to the row start.
    const int64_t pad = varlen ? 0 : width - used;
    int64_t col = left ? pad : 0;
    if (pad > 0) {
      const int64_t pad_begin = left ? 0 : used;
      Fill(ids + base + pad_begin, pad, options.pad_id);
      Fill(pos + base + pad_begin, pad, 0);
      if (types != nullptr) Fill(types + base + pad_begin, pad, 0);
      if (seg != nullptr) Fill(seg + base + pad_begin, pad, -1);
      std::memset(mask + base + pad_begin, 0, static_cast<size_t>(pad));
    }
    if (mask != nullptr) std::memset(mask + base + col, 1, static_cast<size_t>(used));
    for (const Placement& p : row) {
      const int64_t at = base + col;
      CopyPiece(corpus, p, ids + at, types == nullptr ? nullptr : types + at);
      Iota(pos + at, p.length);
      if (seg != nullptr) Fill(seg + at, p.length, seq);
      if (tok_index != nullptr) Iota(tok_index + cursor, p.length);
      if (tok_index != nullptr) {
        for (int64_t i = 0; i < p.length; ++i) tok_index[cursor + i] += at;
      }
      loc[2 * seq] = varlen ? 0 : r;
      loc[2 * seq + 1] = col;
      labels[seq] = corpus.label(static_cast<size_t>(p.example));
      examples[seq] = p.example;
      b.max_seqlen = std::max(b.max_seqlen, p.length);
      cursor += p.length;
      cu[seq + 1] = static_cast<int32_t>(cursor);
      col += p.length;
      ++seq;
    }
  }
  return b;
}

}  // namespace

absl::StatusOr<Batch> Collator::CollateVarlen(absl::Span<const tokenize::Encoding* const> sequences,
                                              bool with_types) const {
  corpus::TokenizedCorpus corpus;
  BatchSpec spec;
  spec.layout = Layout::kVarlen;
  spec.rows.emplace_back();
  for (const tokenize::Encoding* e : sequences) {
    const int64_t length = static_cast<int64_t>(e->ids.size());
    spec.rows[0].push_back({static_cast<int64_t>(spec.rows[0].size()), 0, length});
    spec.length += length;
    corpus.Add(e->ids, with_types ? absl::MakeConstSpan(e->type_ids) : absl::Span<const int8_t>(),
               /*label=*/0);
  }
  return Collate(corpus, spec);
}

absl::StatusOr<Batch> Collator::Collate(const corpus::TokenizedCorpus& corpus,
                                        const BatchSpec& spec) const {
  if (absl::Status s = CheckSpec(corpus, spec); !s.ok()) return s;
  if (spec.real_tokens() > INT32_MAX) {
    return absl::InvalidArgumentError("collate: more than 2^31 tokens do not fit int32 cu_seqlens");
  }
  try {
    return CollateRows(corpus, spec, options_);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("collate: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<at::Tensor> BlockDiagonalMask(const Batch& batch) {
  if (batch.layout == Layout::kVarlen) {
    return absl::InvalidArgumentError(
        "BlockDiagonalMask: a varlen batch has no rows; use cu_seqlens with a varlen kernel");
  }
  if (!batch.input_ids.defined() || batch.input_ids.dim() != 2) {
    return absl::InvalidArgumentError("BlockDiagonalMask: the batch has no [R, L] input_ids");
  }
  try {
    // Sequence id of every token, -1 on padding: padded rows hold one sequence each.
    const at::Tensor seg = batch.layout == Layout::kPacked
                               ? batch.segment_ids
                               : batch.attention_mask.to(at::kLong).sub(1);
    const int64_t len = seg.size(1);
    const at::Tensor same =
        seg.unsqueeze(2).eq(seg.unsqueeze(1)).logical_and(seg.unsqueeze(2).ge(0));
    const at::Tensor self = at::eye(len, at::TensorOptions().dtype(at::kBool).device(seg.device()));
    return same.logical_or(self.unsqueeze(0)).unsqueeze(1);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("BlockDiagonalMask: ", e.what_without_backtrace()));
  }
}

}  // namespace padless::batching
