// Saving, rotating and resuming a run's checkpoints (see checkpoint_store.h).
#include "checkpoint_store.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/models/rng_state.h"

namespace padless::train::internal {
namespace {

using base::IsRegularFile;
using base::JoinPath;
using base::ListDirectory;
using base::MakeDirectories;
using base::RemoveFile;

// "step-00000042.pt" -> 42; -1 for other names.
int64_t CheckpointStep(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() < 9 || name.substr(name.size() - 3) != ".pt") {
    return -1;
  }
  int64_t step = -1;
  if (!absl::SimpleAtoi(name.substr(5, name.size() - 8), &step)) return -1;
  return step;
}

// The checkpoints in `dir`, oldest first.
std::vector<std::pair<int64_t, std::string>> ListCheckpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const std::string& name : ListDirectory(dir)) {
    const int64_t step = CheckpointStep(name);
    if (step >= 0) out.emplace_back(step, JoinPath(dir, name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void WriteArchive(torch::serialize::OutputArchive& a, models::EncoderClassifier& model,
                  const FusedAdamW& optimizer, const GradScaler& scaler, const TrainProgress& state,
                  const c10::Device& device) {
  for (const auto& p : model->named_parameters())
    a.write("model." + p.key(), p.value().detach().cpu());
  for (const auto& [name, t] : optimizer.State()) a.write("optim." + name, t.cpu());
  for (size_t i = 0; i < state.best_params.size(); ++i)
    a.write(absl::StrCat("best.", i), state.best_params[i].cpu());
  a.write("scaler", scaler.state());
  if (model->runtime().fp8) a.write("fp8", model->runtime().fp8->state());
  a.write("meta", at::tensor(std::vector<int64_t>{state.epoch, state.next_batch, state.global_step,
                                                  state.evals_since_best, state.best_step,
                                                  static_cast<int64_t>(state.best_params.size())}));
  a.write("best_accuracy", at::full({}, state.best_accuracy, at::kDouble));
  a.write("world_size", at::full({}, state.world_size, at::kLong));
  a.write("schedule_offset", at::full({}, state.schedule_offset, at::kLong));
  const models::internal::RngState rng = models::internal::CaptureRng(device);
  a.write("rng.cpu", rng.cpu);
  if (rng.cuda.defined()) a.write("rng.cuda", rng.cuda);
  if (state.rank_rng.empty()) return;
  a.write("rng.ranks", at::full({}, static_cast<int64_t>(state.rank_rng.size()), at::kLong));
  for (size_t r = 0; r < state.rank_rng.size(); ++r) {
    a.write(absl::StrCat("rng.rank", r, ".cpu"), state.rank_rng[r].cpu);
    if (state.rank_rng[r].cuda.defined()) {
      a.write(absl::StrCat("rng.rank", r, ".cuda"), state.rank_rng[r].cuda);
    }
  }
}

absl::Status ReadModelAndOptimizer(torch::serialize::InputArchive& a, const std::string& path,
                                   models::EncoderClassifier& model, FusedAdamW& optimizer) {
  at::AutoGradMode no_grad(false);
  for (auto& p : model->named_parameters()) {
    at::Tensor t;
    if (!a.try_read("model." + p.key(), t) || t.sizes() != p.value().sizes()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": parameter '", p.key(), "' missing or of another shape"));
    }
    p.value().copy_(t);
  }
  std::vector<std::pair<std::string, at::Tensor>> state = optimizer.State();
  for (auto& [name, t] : state) {
    at::Tensor stored;
    if (!a.try_read("optim." + name, stored)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": optimizer state '", name, "' missing"));
    }
    t = stored;
  }
  if (!optimizer.LoadState(state)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": optimizer state does not match the model"));
  }
  return absl::OkStatus();
}

TrainProgress ReadProgress(torch::serialize::InputArchive& a, GradScaler& scaler,
                           const c10::Device& device) {
  at::Tensor scaler_state, meta, best_acc;
  a.read("scaler", scaler_state);
  a.read("meta", meta);
  a.read("best_accuracy", best_acc);
  scaler.load_state(scaler_state);
  TrainProgress state;
  state.epoch = meta[0].item<int64_t>();
  state.next_batch = meta[1].item<int64_t>();
  state.global_step = meta[2].item<int64_t>();
  state.evals_since_best = meta[3].item<int64_t>();
  state.best_step = meta[4].item<int64_t>();
  for (int64_t i = 0; i < meta[5].item<int64_t>(); ++i) {
    at::Tensor t;
    a.read(absl::StrCat("best.", i), t);
    state.best_params.push_back(t);  // stays on the host, as the trainer keeps it
  }
  state.best_accuracy = best_acc.item<double>();
  at::Tensor world_size;  // absent in checkpoints of single-process runs before data parallelism
  if (a.try_read("world_size", world_size)) state.world_size = world_size.item<int64_t>();
  at::Tensor offset;  // absent before resuming at another world size existed: 0
  if (a.try_read("schedule_offset", offset)) state.schedule_offset = offset.item<int64_t>();
  models::internal::RngState rng_state;
  a.read("rng.cpu", rng_state.cpu);
  a.try_read("rng.cuda", rng_state.cuda);
  models::internal::RestoreRng(rng_state, device);
  at::Tensor ranks;  // absent in checkpoints of single processes and of older versions
  if (a.try_read("rng.ranks", ranks)) {
    state.rank_rng.resize(ranks.item<int64_t>());
    for (size_t r = 0; r < state.rank_rng.size(); ++r) {
      a.read(absl::StrCat("rng.rank", r, ".cpu"), state.rank_rng[r].cpu);
      a.try_read(absl::StrCat("rng.rank", r, ".cuda"), state.rank_rng[r].cuda);
    }
  }
  return state;
}

}  // namespace

CheckpointStore::CheckpointStore(std::string dir, int64_t keep, bool progress)
    : dir_(std::move(dir)), keep_(keep), progress_(progress) {}

absl::Status CheckpointStore::Save(models::EncoderClassifier& model, const FusedAdamW& optimizer,
                                   const GradScaler& scaler, const TrainProgress& state,
                                   const c10::Device& device) const {
  if (dir_.empty()) return absl::OkStatus();
  absl::Status made = MakeDirectories(dir_);
  if (!made.ok()) return made;
  const std::string path = PathOf(state.global_step);
  absl::StatusOr<std::unique_ptr<base::AtomicFileWriter>> out =
      base::AtomicFileWriter::Open(path, /*is_checkpoint=*/true);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("cannot write checkpoint: ", out.status().message()));
  }
  try {
    torch::serialize::OutputArchive a;
    WriteArchive(a, model, optimizer, scaler, state, device);
    a.save_to((*out)->Sink());
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot write checkpoint: ", e.what_without_backtrace()));
  }
  // A failed write leaves the earlier checkpoints alone: nothing is rotated out.
  if (absl::Status s = (*out)->Commit(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("cannot write checkpoint: ", s.message()));
  }
  Rotate();
  return absl::OkStatus();
}

void CheckpointStore::Rotate() const {
  auto all = ListCheckpoints(dir_);
  for (size_t i = 0; i + std::max<int64_t>(keep_, 1) < all.size(); ++i) RemoveFile(all[i].second);
}

// A process killed while writing a checkpoint leaves its temporary file; it is never taken as a
// checkpoint (ListCheckpoints wants "step-N.pt"), only cleared away.
void CheckpointStore::RemoveTemporaryFiles() const {
  for (const std::string& name : ListDirectory(dir_)) {
    if (!base::IsTemporaryName(name)) continue;
    RemoveFile(JoinPath(dir_, name));
    if (progress_) {
      absl::FPrintF(stderr, "removed %s, left by an interrupted checkpoint write\n",
                    JoinPath(dir_, name));
    }
  }
}

std::string CheckpointStore::PathOf(int64_t step) const {
  return JoinPath(dir_, absl::StrFormat("step-%08d.pt", step));
}

absl::StatusOr<std::optional<TrainProgress>> CheckpointStore::Resume(
    models::EncoderClassifier& model, FusedAdamW& optimizer, GradScaler& scaler,
    const c10::Device& device) const {
  if (dir_.empty()) return std::nullopt;
  RemoveTemporaryFiles();
  auto all = ListCheckpoints(dir_);
  if (all.empty()) return std::nullopt;
  const std::string path = all.back().second;
  TrainProgress state;
  try {
    torch::serialize::InputArchive a;
    a.load_from(path, at::Device(at::kCPU));
    absl::Status loaded = ReadModelAndOptimizer(a, path, model, optimizer);
    if (!loaded.ok()) return loaded;
    state = ReadProgress(a, scaler, device);
    // FP8 scales of a run that trains in FP8; a bf16 checkpoint resumed in FP8 calibrates anew.
    at::Tensor fp8;
    if (model->runtime().fp8 && a.try_read("fp8", fp8)) model->runtime().fp8->load_state(fp8);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": corrupt checkpoint: ", e.what_without_backtrace()));
  }
  if (progress_) {
    absl::FPrintF(stderr, "resuming from %s (epoch %d, batch %d, step %d)\n", path, state.epoch,
                  state.next_batch, state.global_step);
  }
  return state;
}

}  // namespace padless::train::internal
