// The SentencePiece tokenizer backend in its two id layouts:
// - padless's own: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4 inside the model (what
//   `padless tokenize train` writes), with BERT-style templates;
// - fairseq's, as XLM-R uses it (sentencepiece.bpe.model with SentencePiece's default reserved ids
//   <unk>=0 <s>=1 </s>=2): <s>=0 <pad>=1 </s>=2 <unk>=3, every other piece at its SentencePiece id
//   + 1, and <mask> after the last piece, with RoBERTa-style templates. This is what Hugging
//   Face's XLMRobertaTokenizer does with the same file.
// The layout is read from the model's reserved ids. SentencePiece's default ids are also what any
// model trained without padless has, so the fairseq layout is only taken where the caller knows
// the model is XLM-R's (a model directory's sentencepiece.bpe.model); elsewhere such a model is
// refused rather than silently given an id offset.
#ifndef PADLESS_TOKENIZE_SENTENCEPIECE_MODEL_H_
#define PADLESS_TOKENIZE_SENTENCEPIECE_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "spm_backend.h"
#include "tokenizer_backend.h"

namespace padless::tokenize::internal {

class SentencePieceModel : public TokenizerBackend {
 public:
  // Chooses the layout from the model's reserved ids (fairseq's only when `xlmr`);
  // FailedPrecondition naming `origin` when they fit no allowed layout.
  static absl::StatusOr<std::unique_ptr<SentencePieceModel>> Create(std::unique_ptr<SpmBackend> spm,
                                                                    const std::string& origin,
                                                                    bool xlmr);

  std::string name() const override;
  const SpecialIds& special_ids() const override { return special_ids_; }
  TemplateStyle template_style() const override;
  int32_t vocab_size() const override;
  std::string IdToPiece(int32_t id) const override;
  int32_t PieceToId(absl::string_view piece) const override;
  absl::Status Encode(absl::string_view text, std::vector<int32_t>* ids) const override;
  // SentencePiece's own offsets, made Hugging Face's (sentencepiece_offsets.h).
  absl::Status EncodeWithOffsets(absl::string_view text, std::vector<int32_t>* ids,
                                 std::vector<ByteSpan>* spans) const override;
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const override;
  std::string Serialized() const override { return spm_->Serialized(); }
  // An XLM-R model keeps its Hugging Face name, which is what marks its layout when loaded again.
  std::string file_name() const override {
    return fairseq_ ? "sentencepiece.bpe.model" : "tokenizer.model";
  }
  absl::Status ExportHuggingFace(const std::string& dir) const override;

 private:
  SentencePieceModel(std::unique_ptr<SpmBackend> spm, bool fairseq);
  // Fairseq layout only: SentencePiece id <-> model id.
  int32_t FromSpm(int32_t spm_id) const;
  int32_t ToSpm(int32_t id) const;

  std::unique_ptr<SpmBackend> spm_;
  bool fairseq_;
  SpecialIds special_ids_;
};

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_SENTENCEPIECE_MODEL_H_
