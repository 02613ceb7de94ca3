#include "resume_state.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/batching/batch_spec.h"
#include "padless/distributed/data_parallel.h"
#include "padless/models/rng_state.h"

namespace padless::train::internal {
namespace {

// Data parallel: each rank continues its own random stream. A checkpoint without them (older
// versions) leaves the writer's, which the store restored, on every rank; a rank the writing job
// did not have (resumed with more ranks) starts a stream of its own, seeded by rank and step.
void RestoreRankRng(const ResumeContext& run, const TrainProgress& state) {
  const distributed::DataParallel& dp = run.config.data_parallel();
  const size_t rank = static_cast<size_t>(dp.rank());
  if (rank < state.rank_rng.size()) {
    models::internal::RestoreRng(state.rank_rng[rank], run.device);
  } else if (!state.rank_rng.empty()) {
    at::manual_seed(run.config.seed() + rank +
                    1000003ULL * static_cast<uint64_t>(state.global_step));
  }
}

// A checkpoint of a job of another world size. Within the epoch in progress the same share of its
// batches counts as done: the two sizes' plans group the examples differently, so until that
// epoch ends some examples are seen twice and some not at all; later epochs are whole. The
// learning-rate schedule continues at the same share of the run, on this job's schedule (its
// global batch is another size): the schedule's step (TrainingRun::ScheduleStep) is offset from
// the step count, so that checkpoint and log steps keep increasing. AdamW's and the scaler's
// states are the same on every rank and carry over as they are.
absl::Status ContinueAtThisWorldSize(const ResumeContext& run, TrainProgress& state) {
  const TrainConfig& config = run.config;
  const int64_t from = state.world_size, to = config.data_parallel().world_size();
  const int64_t accum = config.grad_accum();
  auto batches = [&](int64_t epoch, int64_t world) -> absl::StatusOr<int64_t> {
    absl::StatusOr<std::vector<batching::BatchSpec>> plan =
        run.planner.Plan(run.lengths, epoch, 0, world);
    if (!plan.ok()) return plan.status();
    return static_cast<int64_t>(plan->size());
  };
  absl::StatusOr<int64_t> there = batches(state.epoch, from), here = batches(state.epoch, to);
  if (!there.ok()) return there.status();
  if (!here.ok()) return here.status();
  const int64_t old_batch = state.next_batch;
  const int64_t batch = *there > 0 ? old_batch * *here / *there : 0;
  state.next_batch = batch - batch % accum;
  int64_t done = 0;  // steps of this job's schedule that the checkpoint's progress is worth
  if (config.max_steps() > 0) {
    const int64_t schedule_step = state.global_step + state.schedule_offset;
    done = std::llround(static_cast<double>(schedule_step) * from / to);
  } else {
    for (int64_t epoch = 0; epoch < state.epoch; ++epoch) {
      absl::StatusOr<int64_t> n = batches(epoch, to);
      if (!n.ok()) return n.status();
      done += (*n + accum - 1) / accum;
    }
    done += state.next_batch / accum;
  }
  state.schedule_offset = done - state.global_step;
  if (config.progress() && config.data_parallel().rank() == 0) {
    absl::FPrintF(stderr,
                  "resume: the checkpoint was written by a job of %d rank%s, this one has %d: "
                  "epoch %d continues at batch %d of %d (%d of %d there), the schedule at step "
                  "%d of %d\n",
                  from, from == 1 ? "" : "s", to, state.epoch, state.next_batch, *here, old_batch,
                  *there, done, run.total_steps);
  }
  return absl::OkStatus();
}

constexpr char kCheckpointsOnRankZerosNode[] =
    "checkpoints are written on rank 0's node only: before --resume, copy rank 0's "
    "checkpoints/ directory into every node's --out, or give all nodes one --out on a shared "
    "filesystem";

// Why rank `other` (of node `node`), which loaded `theirs`, cannot resume beside rank 0, which
// loaded `zeros` (a step; -1: no checkpoint), in the words of this rank, which loaded `mine`.
std::string Disagreement(const CheckpointStore& store, int64_t zeros, int64_t mine, size_t other,
                         int64_t node, int64_t theirs) {
  const std::string me = absl::StrCat("this node (node ", node, ")");
  const std::string them = absl::StrCat("node ", node, " (rank ", other, ")");
  if (zeros < 0) {
    return absl::StrCat("--resume: rank 0 has no checkpoint to resume from, but ",
                        mine != zeros ? me : them, " has ",
                        mine != zeros ? store.PathOf(mine) : absl::StrCat("step ", theirs), "; ",
                        kCheckpointsOnRankZerosNode);
  }
  if (mine != zeros) {
    return absl::StrCat("--resume: rank 0 resumes from the checkpoint of step ", zeros, ", but ",
                        me, " has no ", store.PathOf(zeros),
                        mine >= 0 ? absl::StrCat(" (its newest is of step ", mine, ")") : "", "; ",
                        kCheckpointsOnRankZerosNode);
  }
  return absl::StrCat("--resume: ", them, " has no checkpoint of step ", zeros,
                      ", which rank 0 resumes from (", store.PathOf(zeros), " on rank 0's node); ",
                      kCheckpointsOnRankZerosNode);
}

// Data parallel: every rank must resume from the checkpoint rank 0 resumes from. Only rank 0
// writes checkpoints, on its node's disk; without a shared filesystem the other nodes have none
// (or older ones) unless they were copied there, and a rank that started afresh, or from another
// step, beside rank 0 would train another model. One all-gather of the step each rank loaded (-1:
// none) and its node; every rank then gives the same verdict. It also keeps every rank from
// writing a checkpoint while another still reads one.
absl::Status AgreeOnCheckpoint(const distributed::DataParallel& dp, const CheckpointStore& store,
                               int64_t mine) {
  absl::StatusOr<std::vector<int64_t>> all = dp.group->AllGatherHost({mine, dp.node_rank()});
  if (!all.ok()) return all.status();
  const int64_t zeros = (*all)[0];
  if (mine != zeros) {  // this rank says what its own node lacks
    return absl::FailedPreconditionError(
        Disagreement(store, zeros, mine, dp.rank(), dp.node_rank(), mine));
  }
  for (size_t r = 1; 2 * r + 1 < all->size(); ++r) {
    const int64_t theirs = (*all)[2 * r];
    if (theirs == zeros) continue;
    return absl::FailedPreconditionError(
        Disagreement(store, zeros, mine, r, (*all)[2 * r + 1], theirs));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResumeFromCheckpoint(const ResumeContext& run, const CheckpointStore& store,
                                  models::EncoderClassifier& model, FusedAdamW& optimizer,
                                  GradScaler& scaler, TrainProgress& state) {
  absl::StatusOr<std::optional<TrainProgress>> resumed =
      store.Resume(model, optimizer, scaler, run.device);
  if (!resumed.ok()) return resumed.status();
  const distributed::DataParallel& dp = run.config.data_parallel();
  if (dp.enabled()) {
    const int64_t loaded = resumed->has_value() ? (*resumed)->global_step : -1;
    if (absl::Status s = AgreeOnCheckpoint(dp, store, loaded); !s.ok()) return s;
  }
  if (!resumed->has_value()) return absl::OkStatus();
  state = std::move(**resumed);
  RestoreRankRng(run, state);
  if (state.world_size == dp.world_size()) return absl::OkStatus();
  return ContinueAtThisWorldSize(run, state);
}

}  // namespace padless::train::internal
