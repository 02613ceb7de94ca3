// Fuzzes the tokenizer's encode path on arbitrary bytes: single texts, pairs and overflow windows,
// with max_length, truncation strategy, head fraction and stride chosen from the input. The model
// is a small unigram one trained at start-up from data/tokenizer_train.txt with the production
// normalizer (NFKC), so that path is what gets fuzzed. Each output is checked against the pieces
// and the truncation plans: [CLS] kept-head kept-tail [SEP], pair layout and type ids, window
// coverage, length limits and ids inside the vocabulary.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz_util.h"
#include "padless/tokenize/special_tokens.h"
#include "padless/tokenize/tokenizer.h"
#include "padless/tokenize/truncation.h"

namespace padless::tokenize {
namespace {

const Tokenizer* tokenizer = nullptr;

std::vector<int32_t> Slice(const std::vector<int32_t>& v, int64_t begin, int64_t end) {
  return std::vector<int32_t>(v.begin() + begin, v.begin() + end);
}

std::vector<int32_t> Cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

double HeadFraction(fuzz::FuzzInput& in) {
  switch (in.Pick(8)) {
    case 0:
      return std::numeric_limits<double>::quiet_NaN();
    case 1:
      return std::numeric_limits<double>::infinity();
    case 2:
      return -std::numeric_limits<double>::infinity();
    default:
      return static_cast<double>(in.Range(-50, 150)) / 100.0;
  }
}

void CheckPieces(const std::vector<int32_t>& pieces) {
  for (int32_t id : pieces) {
    FUZZ_CHECK(id >= 0 && id < tokenizer->vocab_size(), absl::StrCat("id ", id));
    FUZZ_CHECK(id == kUnkId || !IsSpecialId(id), absl::StrCat("special id ", id, " from text"));
  }
}

void CheckDecodes(const std::vector<int32_t>& ids) {
  absl::StatusOr<std::string> text = tokenizer->Decode(ids);
  FUZZ_CHECK(text.ok(), std::string(text.status().message()));
}

void FuzzSingle(absl::string_view text, const EncodeOptions& o) {
  absl::StatusOr<std::vector<int32_t>> pieces = tokenizer->EncodePieces(text);
  FUZZ_CHECK(pieces.ok(), std::string(pieces.status().message()));
  CheckPieces(*pieces);
  absl::StatusOr<Encoding> e = tokenizer->Encode(text, o);
  if (o.max_length < 0 || (o.max_length > 0 && o.max_length < 2)) {
    FUZZ_CHECK(!e.ok(), absl::StrCat("max_length ", o.max_length, " accepted"));
    return;
  }
  FUZZ_CHECK(e.ok(), std::string(e.status().message()));
  const int64_t n = static_cast<int64_t>(pieces->size());
  const int64_t budget = o.max_length == 0 ? std::numeric_limits<int64_t>::max() : o.max_length - 2;
  const SingleKeep keep = PlanSingle(n, budget, o.truncation, o.head_fraction);
  FUZZ_CHECK(keep.head >= 0 && keep.tail >= 0 && keep.head + keep.tail == std::min(n, budget),
             absl::StrCat("keep ", keep.head, "+", keep.tail, " of ", n, " budget ", budget));
  const std::vector<int32_t> expect =
      Cat({{kClsId}, Slice(*pieces, 0, keep.head), Slice(*pieces, n - keep.tail, n), {kSepId}});
  FUZZ_CHECK(e->ids == expect, absl::StrCat("single encoding differs (", e->ids.size(), " vs ",
                                            expect.size(), " ids)"));
  FUZZ_CHECK(e->type_ids.empty(), "type ids on a single text");
  FUZZ_CHECK(o.max_length == 0 || static_cast<int64_t>(e->ids.size()) <= o.max_length,
             absl::StrCat(e->ids.size(), " ids for max_length ", o.max_length));
  CheckDecodes(e->ids);
}

void FuzzPair(absl::string_view a, absl::string_view b, const EncodeOptions& o) {
  absl::StatusOr<std::vector<int32_t>> pa = tokenizer->EncodePieces(a);
  absl::StatusOr<std::vector<int32_t>> pb = tokenizer->EncodePieces(b);
  FUZZ_CHECK(pa.ok() && pb.ok(), "EncodePieces failed");
  absl::StatusOr<Encoding> e = tokenizer->EncodePair(a, b, o);
  if (o.max_length < 0 || (o.max_length > 0 && o.max_length < 3)) {
    FUZZ_CHECK(!e.ok(), absl::StrCat("max_length ", o.max_length, " accepted for a pair"));
    return;
  }
  const int64_t na = static_cast<int64_t>(pa->size()), nb = static_cast<int64_t>(pb->size());
  const int64_t budget = o.max_length == 0 ? std::numeric_limits<int64_t>::max() : o.max_length - 3;
  absl::StatusOr<PairKeep> keep = PlanPair(na, nb, budget, o.pair_truncation);
  FUZZ_CHECK(keep.ok() == e.ok(),
             absl::StrCat("plan ", keep.status().message(), " vs encode ", e.status().message()));
  if (!e.ok()) return;
  FUZZ_CHECK(keep->first >= 0 && keep->first <= na && keep->second >= 0 && keep->second <= nb &&
                 keep->first + keep->second == std::min(na + nb, budget),
             absl::StrCat("pair keep ", keep->first, "+", keep->second, " of ", na, "+", nb,
                          " budget ", budget));
  const std::vector<int32_t> expect =
      Cat({{kClsId}, Slice(*pa, 0, keep->first), {kSepId}, Slice(*pb, 0, keep->second), {kSepId}});
  FUZZ_CHECK(e->ids == expect, "pair encoding differs");
  FUZZ_CHECK(e->type_ids.size() == e->ids.size(), "type ids length");
  for (size_t i = 0; i < e->type_ids.size(); ++i) {
    const int8_t want = static_cast<int64_t>(i) < keep->first + 2 ? 0 : 1;
    FUZZ_CHECK(e->type_ids[i] == want, absl::StrCat("type id at ", i));
  }
  FUZZ_CHECK(o.max_length == 0 || static_cast<int64_t>(e->ids.size()) <= o.max_length,
             absl::StrCat(e->ids.size(), " ids for max_length ", o.max_length));
  CheckDecodes(e->ids);
  // The allocation-free path appends exactly the same encoding, reusing its scratch.
  Tokenizer::Scratch scratch;
  std::vector<int32_t> ids = {7};
  std::vector<int8_t> type_ids = {5};
  for (int round = 0; round < 2; ++round) {
    ids.resize(1);
    type_ids.resize(1);
    FUZZ_CHECK(tokenizer->EncodeAppend(a, &b, o, &scratch, &ids, &type_ids).ok(), "EncodeAppend");
    FUZZ_CHECK(ids.size() == e->ids.size() + 1 &&
                   std::equal(e->ids.begin(), e->ids.end(), ids.begin() + 1),
               "EncodeAppend ids differ from EncodePair");
    FUZZ_CHECK(type_ids.size() == e->type_ids.size() + 1 &&
                   std::equal(e->type_ids.begin(), e->type_ids.end(), type_ids.begin() + 1),
               "EncodeAppend type ids differ from EncodePair");
  }
}

void FuzzWindows(absl::string_view text, int64_t max_length, int64_t stride) {
  absl::StatusOr<std::vector<Encoding>> windows =
      tokenizer->EncodeWindows(text, max_length, stride);
  const int64_t budget = max_length - 2;
  if (max_length < 3 || stride < 0 || stride >= budget) {
    FUZZ_CHECK(!windows.ok(), absl::StrCat("window ", max_length, "/", stride, " accepted"));
    return;
  }
  FUZZ_CHECK(windows.ok(), std::string(windows.status().message()));
  const std::vector<int32_t> pieces = *tokenizer->EncodePieces(text);
  const int64_t n = static_cast<int64_t>(pieces.size());
  const std::vector<int64_t> starts = WindowStarts(n, budget, stride);
  FUZZ_CHECK(windows->size() == starts.size() && !starts.empty() && starts[0] == 0,
             absl::StrCat(windows->size(), " windows, ", starts.size(), " starts"));
  for (size_t w = 0; w < starts.size(); ++w) {
    const int64_t end = std::min(n, starts[w] + budget);
    FUZZ_CHECK(starts[w] <= end, absl::StrCat("window ", w, " starts past the end"));
    FUZZ_CHECK(w == 0 || starts[w] - starts[w - 1] == budget - stride, "window step");
    const std::vector<int32_t> expect = Cat({{kClsId}, Slice(pieces, starts[w], end), {kSepId}});
    FUZZ_CHECK((*windows)[w].ids == expect, absl::StrCat("window ", w, " differs"));
    FUZZ_CHECK(static_cast<int64_t>((*windows)[w].ids.size()) <= max_length, "window too long");
  }
  FUZZ_CHECK(std::min(n, starts.back() + budget) == n, "the last window does not reach the end");
}

}  // namespace
}  // namespace padless::tokenize

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using namespace padless::tokenize;  // NOLINT: a fuzz entry point
  std::ifstream in(PADLESS_FUZZ_DATA_DIR "/tokenizer_train.txt");
  std::vector<std::string> sentences;
  for (std::string line; std::getline(in, line);) sentences.push_back(line);
  TrainOptions options;
  options.vocab_size = 300;
  options.num_threads = 1;  // deterministic model, so crashes reproduce
  absl::StatusOr<Tokenizer> trained = Tokenizer::TrainFromSentences(sentences, options);
  FUZZ_CHECK(trained.ok(), absl::StrCat(PADLESS_FUZZ_DATA_DIR "/tokenizer_train.txt: ",
                                        trained.status().message()));
  tokenizer = new Tokenizer(std::move(*trained));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::tokenize;  // NOLINT: a fuzz entry point
  padless::fuzz::FuzzInput in(data, size);
  const int mode = in.Pick(3);
  EncodeOptions o;
  o.max_length = in.Pick(16) == 0 ? in.Range(-3, 1) : in.Range(0, 48);
  o.truncation = static_cast<Truncation>(in.Pick(3));
  o.head_fraction = HeadFraction(in);
  o.pair_truncation = static_cast<PairTruncation>(in.Pick(3));
  const int64_t stride = in.Range(-1, 40);
  const size_t split = static_cast<size_t>(in.Range(0, 255));
  const absl::string_view text = in.Rest();
  switch (mode) {
    case 0:
      FuzzSingle(text, o);
      break;
    case 1:
      FuzzPair(text.substr(0, split), text.substr(std::min(split, text.size())), o);
      break;
    default:
      FuzzWindows(text, o.max_length, stride);
      break;
  }
  return 0;
}
