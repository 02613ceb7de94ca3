// One EngineRequest to the model inputs it becomes: a single [CLS] text [SEP] (or a pair), cut
// to max_len as the request or the engine says (head+tail by default; pairs: longest first), or
// refused when the request says not to cut; or, for long single texts under LongText::kWindows, one
// input per window.
#ifndef PADLESS_SERVE_REQUEST_ENCODER_H_
#define PADLESS_SERVE_REQUEST_ENCODER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/serve/inference_engine.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::serve::internal {

struct RequestEncoding {
  int64_t max_len = 512;
  LongText long_text = LongText::kHeadTail;
  int64_t window_stride = 128;
  // The cut of a single text whose request names none (EngineRequest::truncation).
  tokenize::Truncation truncation = tokenize::Truncation::kHeadTail;
};

// At least one sequence, each of at most max_len tokens. InvalidArgument for a text over max_len
// with request.truncate false (windows do not cut a single text, so they never refuse one).
absl::StatusOr<std::vector<tokenize::Encoding>> EncodeRequest(const tokenize::Tokenizer& tokenizer,
                                                              const EngineRequest& request,
                                                              const RequestEncoding& options);

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_REQUEST_ENCODER_H_
