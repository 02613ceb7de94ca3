// Reference encodings straight from SentencePiece, to check that padless's wrapper produces the
// very same ids. Std types only: this header is included next to Abseil (see spm_reference.cc).
#ifndef PADLESS_TESTS_TOKENIZE_SPM_REFERENCE_H_
#define PADLESS_TESTS_TOKENIZE_SPM_REFERENCE_H_

#include <string>
#include <vector>

namespace padless::tokenize::testing {

// Loads the serialized model into a fresh SentencePieceProcessor and encodes each text; returns
// false (with `error`) when SentencePiece reports a failure.
bool ReferenceEncode(const std::string& serialized_model, const std::vector<std::string>& texts,
                     std::vector<std::vector<int>>* ids, std::string* error);

// Trains a model with SentencePiece's default special ids (unk=0, bos=1, eos=2, no pad), i.e. a
// model padless must refuse. Returns the serialized model, or "" with `error`.
std::string TrainDefaultLayoutModel(const std::string& text_file, int vocab_size,
                                    std::string* error);

}  // namespace padless::tokenize::testing

#endif  // PADLESS_TESTS_TOKENIZE_SPM_REFERENCE_H_
