// Floats as JSON numbers, for the bodies of vectors (/embed, /embed_all, /v1/embeddings,
// /similarity, /rerank) that get big (32 inputs x 1024 values): written straight into the body
// without a JSON document, each as the shortest decimal that reads back as the same float
// (std::to_chars), as TEI's serde_json writes an f32 (Rust's ryu): 0.1f is "0.1", not the
// double's "0.10000000149011612". A value with neither a '.' nor an exponent gets ".0" (1.0f is
// "1.0", -0.0f "-0.0"), as serde writes it, so that JSON readers that tell integers from floats
// (Python's json) read a float.
#ifndef PADLESS_SERVE_HTTP_FLOAT_JSON_H_
#define PADLESS_SERVE_HTTP_FLOAT_JSON_H_

#include <cstddef>
#include <string>

namespace padless::serve::http {

// Appends `value` to *out. JSON has no NaN nor infinity: false, and *out unchanged, for those.
bool AppendJsonFloat(float value, std::string* out);

// Appends "[v0,v1,...]" (no spaces). False at the first NaN or infinity, *out unchanged.
bool AppendJsonFloatArray(const float* values, size_t size, std::string* out);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_FLOAT_JSON_H_
