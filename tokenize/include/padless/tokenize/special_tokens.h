// The fixed ids and pieces of padless's special tokens. Every model trained by padless has them at
// these ids; Tokenizer::Load rejects a padless SentencePiece model with another layout. Imported
// tokenizers (WordPiece, XLM-R) have their own ids: code that pads or builds model inputs asks
// Tokenizer::special_ids() rather than using these constants.
#ifndef PADLESS_TOKENIZE_SPECIAL_TOKENS_H_
#define PADLESS_TOKENIZE_SPECIAL_TOKENS_H_

#include <cstdint>

namespace padless::tokenize {

inline constexpr int32_t kPadId = 0;   // [PAD]: padding; never produced by encoding text.
inline constexpr int32_t kUnkId = 1;   // [UNK]: characters outside the vocabulary.
inline constexpr int32_t kClsId = 2;   // [CLS]: SentencePiece's bos; opens every sequence.
inline constexpr int32_t kSepId = 3;   // [SEP]: SentencePiece's eos; closes each segment.
inline constexpr int32_t kMaskId = 4;  // [MASK]: a control symbol; never produced from text.
// Ids below this are special; ordinary pieces (and user-defined symbols) start here.
inline constexpr int32_t kNumSpecialTokens = 5;

inline constexpr char kPadPiece[] = "[PAD]";
inline constexpr char kUnkPiece[] = "[UNK]";
inline constexpr char kClsPiece[] = "[CLS]";
inline constexpr char kSepPiece[] = "[SEP]";
inline constexpr char kMaskPiece[] = "[MASK]";

inline constexpr bool IsSpecialId(int32_t id) { return id >= 0 && id < kNumSpecialTokens; }

// The special ids of one tokenizer: padless's fixed layout above, or what an imported tokenizer's
// files declare (e.g. BERT's [PAD]=0 [UNK]=100 [CLS]=101 [SEP]=102 [MASK]=103). For RoBERTa-style
// tokenizers cls is <s> and sep is </s>. mask is -1 when the tokenizer has none.
struct SpecialIds {
  int32_t pad, unk, cls, sep, mask;
};
inline constexpr SpecialIds kPadlessSpecialIds{kPadId, kUnkId, kClsId, kSepId, kMaskId};

}  // namespace padless::tokenize

#endif  // PADLESS_TOKENIZE_SPECIAL_TOKENS_H_
