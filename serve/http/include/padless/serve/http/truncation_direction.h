// TEI's `truncation_direction` (router/src/http/types.rs, TruncationDirection): which end of an
// input too long for the model is cut, spelled "Right" or "Left" (serde also takes "right" and
// "left"). Right, TEI's default, cuts the end and keeps the first tokens; Left keeps the last.
// Pairs are cut longest-first either way (TEI's LongestFirst strategy).
#ifndef PADLESS_SERVE_HTTP_TRUNCATION_DIRECTION_H_
#define PADLESS_SERVE_HTTP_TRUNCATION_DIRECTION_H_

namespace padless::serve::http {

enum class TruncationDirection { kRight, kLeft };

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_TRUNCATION_DIRECTION_H_
