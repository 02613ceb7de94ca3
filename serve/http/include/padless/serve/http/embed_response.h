// The bodies of a successful POST /embed and POST /embed_all, as Hugging Face
// text-embeddings-inference (TEI) writes them (router/src/http/types.rs, EmbedResponse and
// EmbedAllResponse): always a list with one entry per input, for a single input too:
//   /embed      [[0.1, -0.2, ...], ...]              one vector per input
//   /embed_all  [[[0.1, ...], [0.3, ...]], ...]      per input, one vector per token
// Floats are written as float_json.h writes them (shortest round-trip form).
#ifndef PADLESS_SERVE_HTTP_EMBED_RESPONSE_H_
#define PADLESS_SERVE_HTTP_EMBED_RESPONSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace padless::serve::http {

// Internal (the server answers it as TEI's Backend error, 424) when a value is NaN or infinite:
// JSON cannot carry it, and a vector with one means inference went wrong.
absl::StatusOr<std::string> EmbedResponseJson(const std::vector<std::vector<float>>& embeddings);

// `token_embeddings[i]` is input i's [tokens, width] matrix, row-major (EngineResult's
// token_embeddings). Internal for NaN or infinity, a width below 1, or a matrix whose size is not
// a multiple of `width`.
absl::StatusOr<std::string> EmbedAllResponseJson(
    const std::vector<std::vector<float>>& token_embeddings, int64_t width);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_EMBED_RESPONSE_H_
