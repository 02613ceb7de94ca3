#include "padless/models/fp8_scaling.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

#include "absl/strings/str_cat.h"

#ifdef PADLESS_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace padless::models {

namespace {
constexpr int64_t kSlotFloats = 4;
}  // namespace

cuda::Fp8Format Fp8FormatOf(Fp8Operand operand) {
  return operand == Fp8Operand::kGrad ? cuda::Fp8Format::kE5M2 : cuda::Fp8Format::kE4M3;
}

absl::Status CheckFp8Device(const c10::Device& device) {
  if (!device.is_cuda()) return absl::OkStatus();
#ifdef PADLESS_TORCH_HAS_CUDA
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(
      device.has_index() ? device.index() : at::cuda::current_device());
  if (p->major * 10 + p->minor >= 89) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "amp fp8: ", p->name, " (compute capability ", p->major, ".", p->minor,
      ") has no FP8 tensor cores; they need 8.9 or newer (Ada, Hopper, Blackwell): use bf16"));
#else
  return absl::OkStatus();
#endif
}

Fp8Scaling::Fp8Scaling(int64_t gemms, c10::Device device, Fp8ScalingOptions options)
    : gemms_(gemms), options_(options) {
  TORCH_CHECK(gemms >= 1, "Fp8Scaling: needs at least one GEMM, got ", gemms);
  TORCH_CHECK(options.history >= 1, "Fp8Scaling: history must be >= 1, got ", options.history);
  TORCH_CHECK(options.margin >= 0 && options.margin < 64,
              "Fp8Scaling: margin must be in [0, 64), got ", options.margin);
  const int64_t slots = gemms * kFp8OperandsPerGemm;
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  // One 16-byte row per slot: cuBLASLt wants every pointer of an FP8 GEMM 16-byte aligned, the
  // scale pointers included. The slots are column 0.
  scale_ = at::ones({slots, kSlotFloats}, f32).select(1, 0);
  scale_inv_ = at::ones({slots, kSlotFloats}, f32).select(1, 0);
  amax_ = at::zeros({slots, kSlotFloats}, f32).select(1, 0);
  history_ = at::zeros({options.history, slots}, f32);
  at::Tensor max = at::empty({kFp8OperandsPerGemm});
  for (int64_t o = 0; o < kFp8OperandsPerGemm; ++o) {
    max[o] =
        cuda::Fp8Max(Fp8FormatOf(static_cast<Fp8Operand>(o))) / std::ldexp(1.0, options.margin);
  }
  fp8_max_ = max.repeat({gemms}).to(device);
  for (int64_t slot = 0; slot < slots; ++slot) {
    scale_views_.push_back(scale_.select(0, slot));
    scale_inv_views_.push_back(scale_inv_.select(0, slot));
    amax_views_.push_back(amax_.select(0, slot));
  }
}

int64_t Fp8Scaling::Slot(int64_t gemm, Fp8Operand operand) const {
  TORCH_CHECK(gemm >= 0 && gemm < gemms_, "Fp8Scaling: GEMM ", gemm, " out of [0, ", gemms_, ")");
  return gemm * kFp8OperandsPerGemm + static_cast<int64_t>(operand);
}

const at::Tensor& Fp8Scaling::scale(int64_t gemm, Fp8Operand operand) const {
  return scale_views_[Slot(gemm, operand)];
}

const at::Tensor& Fp8Scaling::scale_inv(int64_t gemm, Fp8Operand operand) const {
  return scale_inv_views_[Slot(gemm, operand)];
}

const at::Tensor& Fp8Scaling::amax(int64_t gemm, Fp8Operand operand) const {
  return amax_views_[Slot(gemm, operand)];
}

void Fp8Scaling::Calibrate(int64_t gemm, Fp8Operand operand, const at::Tensor& amax_now) {
  const int64_t slot = Slot(gemm, operand);
  const at::NoGradGuard no_grad;
  const at::Tensor m = amax_now.reshape({}).to(at::kFloat);
  // A tensor of zeros (or inf/NaN) gives no scale; the slot keeps its own.
  const at::Tensor usable = at::isfinite(m).logical_and(m > 0);
  at::Tensor s = scale_.select(0, slot);
  s.copy_(at::where(usable, fp8_max_.select(0, slot) / m, s));
  UpdateInverses();
}

void Fp8Scaling::UpdateInverses() { scale_inv_.copy_(at::reciprocal(scale_)); }

void Fp8Scaling::Advance() {
  const at::NoGradGuard no_grad;
  history_.select(0, position_).copy_(at::where(at::isfinite(amax_), amax_, at::zeros_like(amax_)));
  position_ = (position_ + 1) % options_.history;
  amax_.zero_();
  const at::Tensor m = std::get<0>(history_.max(0));
  scale_.copy_(at::where(m > 0, fp8_max_ / m, scale_));
  UpdateInverses();
  calibrating_ = false;
}

int64_t Fp8Scaling::GemmsInHistory() const {
  const at::Tensor inputs = history_.view({history_.size(0), gemms_, kFp8OperandsPerGemm})
                                .select(2, static_cast<int64_t>(Fp8Operand::kInput));
  return (inputs > 0).any(0).sum().item<int64_t>();
}

at::Tensor Fp8Scaling::state() const {
  at::Tensor meta = at::zeros({scale_.size(0)});
  meta[0] = static_cast<double>(position_);
  meta[1] = calibrating_ ? 1.0 : 0.0;
  return at::cat({scale_.cpu().unsqueeze(0), meta.unsqueeze(0), history_.cpu()});
}

void Fp8Scaling::load_state(const at::Tensor& state) {
  TORCH_CHECK(state.dim() == 2 && state.size(0) == 2 + history_.size(0) &&
                  state.size(1) == scale_.size(0) && state.scalar_type() == at::kFloat,
              "Fp8Scaling: a state of shape ", state.sizes(), " and dtype ", state.scalar_type(),
              " does not fit ", gemms_, " GEMMs with ", history_.size(0), " steps of history");
  const at::Tensor s = state.cpu();
  TORCH_CHECK(at::isfinite(s[0]).logical_and(s[0] > 0).all().item<bool>(),
              "Fp8Scaling: a state with scales that are not finite and positive");
  const int64_t position = static_cast<int64_t>(s[1][0].item<float>());
  TORCH_CHECK(position >= 0 && position < history_.size(0), "Fp8Scaling: history position ",
              position, " out of range");
  const at::NoGradGuard no_grad;
  scale_.copy_(s[0]);
  UpdateInverses();
  history_.copy_(s.narrow(0, 2, history_.size(0)));
  amax_.zero_();
  position_ = position;
  calibrating_ = s[1][1].item<float>() != 0.0f;
}

}  // namespace padless::models
