// Fuzzes batching::Planner with arbitrary length lists and options. Beyond "no crash" it checks
// the plan's contract: every piece of every example is planned exactly once over all ranks (at
// most once with drop_last), ranks take the same number of steps, batches respect their layout,
// max_len, the token budget and the sequence limits, and planning is deterministic (Plan() and
// resuming at start_step give the same batches as PlanEpoch()).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz_util.h"
#include "padless/batching/planner.h"

namespace padless::batching {
namespace {

using fuzz::FuzzInput;

using PieceKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;
PieceKey Key(const Placement& p) { return {p.example, p.start, p.length, p.tail, p.lead}; }

std::string Describe(const BatchSpec& b) {
  return absl::StrCat("layout ", static_cast<int>(b.layout), " rows ", b.rows.size(), " length ",
                      b.length, " real ", b.real_tokens(), " slots ", b.token_slots());
}

// The pieces of one over-long example: one truncation, or windows of [CLS] content [SEP] that
// tile the content [1, len - 1) without a gap. Returns how far the content is covered.
int64_t CheckOverLong(const Placement& p, bool first, int64_t covered, int64_t len,
                      const PlannerOptions& o) {
  if (o.over_long() == OverLong::kTruncate) {
    FUZZ_CHECK(first && p.start == 0 && p.lead == 0 && p.tail >= 1 && p.length == o.max_len(),
               absl::StrCat("truncation [", p.start, ", +", p.length, ") tail ", p.tail));
    return len - 1;
  }
  FUZZ_CHECK(p.lead == 1 && p.tail == 1, absl::StrCat("window lead ", p.lead, " tail ", p.tail));
  FUZZ_CHECK(first ? p.start == 1 : p.start <= covered,
             absl::StrCat("window at ", p.start, " leaves a gap after ", covered));
  return std::max(covered, p.start + p.length - 2);
}

void CheckPieces(absl::Span<const int64_t> lengths, const std::vector<Placement>& pieces,
                 const PlannerOptions& o) {
  size_t next = 0;
  for (size_t ex = 0; ex < lengths.size(); ++ex) {
    const int64_t len = lengths[ex];
    int64_t covered = 0;
    bool first = true;
    while (next < pieces.size() && pieces[next].example == static_cast<int64_t>(ex)) {
      const Placement& p = pieces[next++];
      FUZZ_CHECK(p.length >= 1 && p.length <= o.max_len(), absl::StrCat("piece length ", p.length));
      FUZZ_CHECK(p.FitsExample(len), absl::StrCat("piece [", p.start, ", +", p.length, ") tail ",
                                                   p.tail, " lead ", p.lead, " of ", len));
      if (len <= o.max_len()) {
        const Placement whole{p.example, 0, len, 0, 0};
        FUZZ_CHECK(first && p == whole, "a fitting example is cut");
        covered = len - 1;
      } else {
        covered = CheckOverLong(p, first, covered, len, o);
      }
      first = false;
    }
    FUZZ_CHECK(!first, absl::StrCat("example ", ex, " has no piece"));
    FUZZ_CHECK(covered == len - 1,
               absl::StrCat("example ", ex, " covered to ", covered, " of ", len));
  }
  FUZZ_CHECK(next == pieces.size(), "pieces out of example order");
}

void CheckBatch(const BatchSpec& b, const PlannerOptions& o) {
  if (b.rows.empty()) {  // an empty batch for a short rank (ShardReport::empty_batches)
    FUZZ_CHECK(b.length == 0, Describe(b));
    return;
  }
  for (const auto& row : b.rows) FUZZ_CHECK(!row.empty(), Describe(b));
  FUZZ_CHECK(b.longest_row() <= b.length, Describe(b));
  switch (b.layout) {
    case Layout::kPadded:
      FUZZ_CHECK(o.sampler() != Sampler::kPacked, Describe(b));
      for (const auto& row : b.rows) FUZZ_CHECK(row.size() == 1, Describe(b));
      FUZZ_CHECK(b.length <= o.max_len(), absl::StrCat(Describe(b), " max_len ", o.max_len()));
      break;
    case Layout::kPacked:
      FUZZ_CHECK(o.sampler() == Sampler::kPacked, Describe(b));
      FUZZ_CHECK(b.length <= o.max_len(), absl::StrCat(Describe(b), " max_len ", o.max_len()));
      if (o.max_sequences_per_row() > 0) {
        for (const auto& row : b.rows) {
          FUZZ_CHECK(static_cast<int64_t>(row.size()) <= o.max_sequences_per_row(), Describe(b));
        }
      }
      break;
    case Layout::kVarlen:
      FUZZ_CHECK(o.sampler() == Sampler::kPacked && b.rows.size() == 1, Describe(b));
      FUZZ_CHECK(b.length == b.real_tokens(), Describe(b));
      FUZZ_CHECK(b.token_slots() <= o.max_tokens(),
                 absl::StrCat(Describe(b), " budget ", o.max_tokens()));
      if (o.max_sentences() > 0) FUZZ_CHECK(b.num_sequences() <= o.max_sentences(), Describe(b));
      break;
  }
  const bool budgeted = o.sampler() == Sampler::kTokenBudget ||
                        (o.sampler() == Sampler::kBucketed && o.max_tokens() > 0) ||
                        (o.sampler() == Sampler::kPacked && o.max_tokens() > 0);
  if (budgeted) {
    FUZZ_CHECK(b.token_slots() <= o.max_tokens(),
               absl::StrCat(Describe(b), " budget ", o.max_tokens()));
    if (o.max_sentences() > 0 && b.layout == Layout::kPadded) {
      FUZZ_CHECK(b.num_sequences() <= o.max_sentences(), Describe(b));
    }
  } else {
    // batch_size caps sequences (padded samplers) or rows (packed rows without a budget).
    FUZZ_CHECK(static_cast<int64_t>(b.rows.size()) <= o.batch_size(),
               absl::StrCat(Describe(b), " batch_size ", o.batch_size()));
  }
}

PlannerOptions ReadOptions(FuzzInput& in, int64_t* epoch, int* world) {
  PlannerOptions o;
  o.sampler(static_cast<Sampler>(in.Pick(5)));
  o.seed(in.Bits(2));
  o.max_len(in.Range(3, 96));
  o.over_long(in.Bool() ? OverLong::kSplit : OverLong::kTruncate);
  o.truncation(static_cast<tokenize::Truncation>(in.Pick(3)));
  o.window_stride(in.Range(0, o.max_len() - 3));
  o.batch_size(in.Range(1, 40));
  // A budget below max_len is an option error for most samplers: keep it reachable but rare.
  // Up to 16 rows of max_len: every packing case, while the packers' per-call work (O(budget))
  // stays small.
  o.max_tokens(in.Pick(8) == 0 ? in.Range(0, o.max_len())
                               : in.Range(o.max_len(), 16 * o.max_len()));
  o.max_sentences(in.Range(0, 12));
  o.batch_size_multiple(in.Range(1, 9));
  o.drop_last(in.Pick(4) == 0);
  o.megabatch_factor(in.Range(1, 8));
  o.longest_first(in.Bool());
  o.pad_to(static_cast<PadTo>(in.Pick(4)));
  o.pad_multiple(in.Range(1, 16));
  o.bucket_scheme(static_cast<BucketScheme>(in.Pick(4)));
  o.num_buckets(static_cast<int>(in.Range(1, 12)));
  std::vector<int64_t> boundaries(in.Range(0, 6));
  for (int64_t& v : boundaries) v = in.Range(-2, 130);
  o.boundaries(boundaries);
  o.packed_layout(in.Pick(4) == 0 ? Layout::kVarlen : Layout::kPacked);
  o.pack_algorithm(static_cast<PackAlgorithm>(in.Pick(3)));
  o.max_sequences_per_row(in.Range(0, 6));
  o.pack_window(in.Range(0, 64));
  *epoch = in.Range(0, 3);
  *world = static_cast<int>(in.Range(1, 4));
  return o;
}

}  // namespace
}  // namespace padless::batching

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::batching;  // NOLINT: a fuzz entry point
  if (size == 0) return 0;
  padless::fuzz::FuzzInput in(data, size);
  int64_t epoch = 0;
  int world = 1;
  const PlannerOptions options = ReadOptions(in, &epoch, &world);
  // Lengths: one or two bytes each (the high bit of the first asks for a second), 1..~300 mostly,
  // with 0 kept possible because it is an input error the planner must report.
  // Speed (tiny shapes): at most kMaxExamples lengths and kMaxPieces pieces per input. Every branch
  // of the planner is reached with a few dozen examples, while hundreds of examples split into
  // windows of one token gave single inputs tens of thousands of pieces and many pack windows.
  constexpr size_t kMaxExamples = 48;
  constexpr size_t kMaxPieces = 512;
  std::vector<int64_t> lengths;
  while (in.remaining() > 0 && lengths.size() < kMaxExamples) {
    const uint8_t b = in.Byte();
    lengths.push_back((b & 0x80) ? ((b & 0x7F) << 8 | in.Byte()) % 400 : b);
  }
  const Planner planner(options);
  absl::StatusOr<std::vector<Placement>> pieces = planner.Pieces(lengths);
  if (pieces.ok() && pieces->size() > kMaxPieces) return 0;
  absl::StatusOr<EpochPlan> plan = planner.PlanEpoch(lengths, epoch, world);
  if (!pieces.ok()) {
    FUZZ_CHECK(!plan.ok(), "PlanEpoch succeeded where Pieces failed");
    FUZZ_CHECK(!pieces.status().message().empty(), "error without a message");
    return 0;
  }
  CheckPieces(lengths, *pieces, options);
  if (!plan.ok()) {
    FUZZ_CHECK(!plan.status().message().empty(), "error without a message");
    return 0;
  }
  FUZZ_CHECK(plan->ranks.size() == static_cast<size_t>(world), "rank count");
  // Pieces as sorted multisets (sorted vectors: far cheaper than maps per input).
  std::vector<PieceKey> planned;
  for (const auto& rank : plan->ranks) {
    FUZZ_CHECK(static_cast<int64_t>(rank.size()) == plan->report.steps,
               absl::StrCat(rank.size(), " steps on one rank, ", plan->report.steps, " reported"));
    for (const BatchSpec& b : rank) {
      CheckBatch(b, options);
      for (const auto& row : b.rows) {
        for (const Placement& p : row) planned.push_back(Key(p));
      }
    }
  }
  std::vector<PieceKey> expected;
  expected.reserve(pieces->size());
  for (const Placement& p : *pieces) expected.push_back(Key(p));
  std::sort(planned.begin(), planned.end());
  std::sort(expected.begin(), expected.end());
  // Every planned piece is an expected one, planned at most as often as it is expected.
  std::vector<PieceKey> extra;
  std::set_difference(planned.begin(), planned.end(), expected.begin(), expected.end(),
                      std::back_inserter(extra));
  FUZZ_CHECK(extra.empty(),
             absl::StrCat("example ", std::get<0>(extra.front()), " planned ",
                          std::count(planned.begin(), planned.end(), extra.front()), " times"));
  if (!options.drop_last()) {
    FUZZ_CHECK(planned == expected,
               absl::StrCat(planned.size(), " pieces planned of ", expected.size()));
  }
  // Deterministic, and Plan(rank, start_step) is PlanEpoch's rank from that step on.
  absl::StatusOr<EpochPlan> again = planner.PlanEpoch(lengths, epoch, world);
  FUZZ_CHECK(again.ok() && again->ranks == plan->ranks, "PlanEpoch is not deterministic");
  const int rank = static_cast<int>(data[0] % world);
  const int64_t steps = plan->report.steps;
  const int64_t start = steps == 0 ? 0 : static_cast<int64_t>(data[size - 1]) % (steps + 1);
  absl::StatusOr<std::vector<BatchSpec>> resumed = planner.Plan(lengths, epoch, rank, world, start);
  FUZZ_CHECK(resumed.ok(), std::string(resumed.status().message()));
  const std::vector<BatchSpec> tail(plan->ranks[rank].begin() + start, plan->ranks[rank].end());
  FUZZ_CHECK(*resumed == tail, absl::StrCat("resume at ", start, " differs"));
  FUZZ_CHECK(!planner.Plan(lengths, epoch, rank, world, steps + 1).ok(), "start_step past end");
  return 0;
}
