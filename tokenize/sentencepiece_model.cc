#include "sentencepiece_model.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sentencepiece_offsets.h"

namespace padless::tokenize::internal {
namespace {

std::string_view Std(absl::string_view s) { return std::string_view(s.data(), s.size()); }

bool HasPadlessLayout(const SpmBackend& b) {
  return b.PieceSize() > kNumSpecialTokens && b.pad_id() == kPadId && b.unk_id() == kUnkId &&
         b.bos_id() == kClsId && b.eos_id() == kSepId && b.IdToPiece(kMaskId) == kMaskPiece &&
         b.IsControl(kMaskId);
}

// SentencePiece's defaults, which fairseq (and so XLM-R) builds its dictionary on.
bool HasFairseqLayout(const SpmBackend& b) {
  return b.PieceSize() > 3 && b.unk_id() == 0 && b.bos_id() == 1 && b.eos_id() == 2 &&
         b.pad_id() < 0;
}

// fairseq's dictionary order of the specials: <s> <pad> </s> <unk>.
constexpr std::array<const char*, 4> kFairseqSpecials = {"<s>", "<pad>", "</s>", "<unk>"};
constexpr char kFairseqMask[] = "<mask>";

}  // namespace

absl::StatusOr<std::unique_ptr<SentencePieceModel>> SentencePieceModel::Create(
    std::unique_ptr<SpmBackend> spm, const std::string& origin, bool xlmr) {
  const bool padless = HasPadlessLayout(*spm);
  if (!padless && !(xlmr && HasFairseqLayout(*spm))) {
    return absl::FailedPreconditionError(absl::StrCat(
        origin,
        ": SentencePiece model lacks padless's special token ids ([PAD]=0 [UNK]=1 [CLS]=2 "
        "[SEP]=3 [MASK]=4)",
        xlmr ? " and XLM-R's (<unk>=0 <s>=1 </s>=2, no pad)" : "", "; it has pad=", spm->pad_id(),
        " unk=", spm->unk_id(), " bos=", spm->bos_id(), " eos=", spm->eos_id(),
        ". Train it with `padless tokenize train`, or pass an XLM-R model's directory (with its "
        "sentencepiece.bpe.model)."));
  }
  return std::unique_ptr<SentencePieceModel>(new SentencePieceModel(std::move(spm), !padless));
}

SentencePieceModel::SentencePieceModel(std::unique_ptr<SpmBackend> spm, bool fairseq)
    : spm_(std::move(spm)), fairseq_(fairseq), special_ids_(kPadlessSpecialIds) {
  if (fairseq_) special_ids_ = SpecialIds{1, 3, 0, 2, spm_->PieceSize() + 1};
}

std::string SentencePieceModel::name() const {
  return fairseq_ ? "SentencePiece (XLM-R, fairseq ids)" : "SentencePiece (padless)";
}

TemplateStyle SentencePieceModel::template_style() const {
  return fairseq_ ? TemplateStyle::kRoberta : TemplateStyle::kBert;
}

int32_t SentencePieceModel::vocab_size() const {
  // fairseq adds <pad> (SentencePiece has none) and <mask>.
  return spm_->PieceSize() + (fairseq_ ? 2 : 0);
}

int32_t SentencePieceModel::FromSpm(int32_t spm_id) const {
  return spm_id == spm_->unk_id() ? special_ids_.unk : spm_id + 1;
}

int32_t SentencePieceModel::ToSpm(int32_t id) const {
  return id == special_ids_.unk ? spm_->unk_id() : id - 1;
}

std::string SentencePieceModel::IdToPiece(int32_t id) const {
  if (!fairseq_) return spm_->IdToPiece(id);
  if (id < static_cast<int32_t>(kFairseqSpecials.size())) return kFairseqSpecials[id];
  if (id == special_ids_.mask) return kFairseqMask;
  return spm_->IdToPiece(ToSpm(id));
}

int32_t SentencePieceModel::PieceToId(absl::string_view piece) const {
  if (!fairseq_) return spm_->PieceToId(Std(piece));
  for (int32_t i = 0; i < static_cast<int32_t>(kFairseqSpecials.size()); ++i) {
    if (piece == kFairseqSpecials[i]) return i;
  }
  if (piece == kFairseqMask) return special_ids_.mask;
  return FromSpm(spm_->PieceToId(Std(piece)));
}

absl::Status SentencePieceModel::Encode(absl::string_view text, std::vector<int32_t>* ids) const {
  static_assert(std::is_same_v<int, int32_t>, "SentencePiece ids are int");
  const std::string error = spm_->Encode(Std(text), ids);
  if (!error.empty()) return absl::InternalError(absl::StrCat("SentencePiece encode: ", error));
  if (fairseq_) {
    for (int32_t& id : *ids) id = FromSpm(id);
  }
  return absl::OkStatus();
}

absl::Status SentencePieceModel::EncodeWithOffsets(absl::string_view text,
                                                   std::vector<int32_t>* ids,
                                                   std::vector<ByteSpan>* spans) const {
  const std::string error = spm_->EncodeWithOffsets(Std(text), ids, spans);
  if (!error.empty()) return absl::InternalError(absl::StrCat("SentencePiece encode: ", error));
  AlignWithMetaspace(text, spans);
  if (fairseq_) {
    for (int32_t& id : *ids) id = FromSpm(id);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> SentencePieceModel::Decode(absl::Span<const int32_t> ids) const {
  std::vector<int> spm_ids(ids.begin(), ids.end());
  if (fairseq_) {
    for (int& id : spm_ids) id = ToSpm(id);
  }
  std::string text;
  const std::string error = spm_->Decode(spm_ids, &text);
  if (!error.empty()) return absl::InternalError(absl::StrCat("SentencePiece decode: ", error));
  return text;
}

absl::Status SentencePieceModel::ExportHuggingFace(const std::string& dir) const {
  return absl::UnimplementedError(absl::StrCat(
      "cannot export the ", name(), " tokenizer to Hugging Face files in ", dir,
      ": Hugging Face has no tokenizer that reproduces its special token layout and "
      "normalization exactly; only WordPiece tokenizers (tokenizer.json) can be exported"));
}

}  // namespace padless::tokenize::internal
