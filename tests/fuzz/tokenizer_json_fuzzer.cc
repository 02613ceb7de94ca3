// Fuzzes the Hugging Face tokenizer.json reader (Tokenizer::FromSerialized on JSON text): any
// input must give a status, never a crash. A file that loads must have its special ids inside
// the vocabulary, and encoding fixed texts plus the input itself must give ids inside the
// vocabulary framed by [CLS] ... [SEP], which Decode accepts.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fuzz_util.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::tokenize {
namespace {

void CheckEncoding(const Tokenizer& t, const std::string& text) {
  EncodeOptions options;
  options.max_length = 0;
  absl::StatusOr<Encoding> e = t.Encode(text, options);
  FUZZ_CHECK(e.ok(), e.status().ToString());
  const SpecialIds& s = t.special_ids();
  FUZZ_CHECK(e->ids.size() >= 2 && e->ids.front() == s.cls && e->ids.back() == s.sep,
             absl::StrJoin(e->ids, " "));
  for (int32_t id : e->ids) {
    FUZZ_CHECK(id >= 0 && id < t.vocab_size(), absl::StrCat("id ", id, " of ", t.vocab_size()));
  }
  FUZZ_CHECK(t.Decode(e->ids).ok(), text);
}

}  // namespace
}  // namespace padless::tokenize

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::tokenize;
  const std::string json(reinterpret_cast<const char*>(data), size);
  // Only JSON: other bytes go to SentencePiece's protobuf parser, which is not ours to fuzz.
  const absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(json);
  if (trimmed.empty() || trimmed.front() != '{') return 0;
  absl::StatusOr<Tokenizer> t = Tokenizer::FromSerialized(json);
  if (!t.ok()) {
    FUZZ_CHECK(!t.status().message().empty(), "an error without a message");
    return 0;
  }
  const SpecialIds& s = t->special_ids();
  for (int32_t id : {s.pad, s.unk, s.cls, s.sep}) {
    FUZZ_CHECK(id >= 0 && id < t->vocab_size(), absl::StrCat("special id ", id));
  }
  for (const std::string text :
       {"", "Hello, unaffable world! Café 中文 [MASK]", "\x01\xff\xfe ok"}) {
    CheckEncoding(*t, text);
  }
  CheckEncoding(*t, json.substr(0, 2000));
  return 0;
}
