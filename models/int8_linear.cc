#include "padless/models/int8_linear.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/quantized/PackedParams.h>
#include <ATen/native/quantized/cpu/QuantUtils.h>
#include <c10/util/Exception.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::models {

struct Int8Linear::Packed {
  c10::intrusive_ptr<LinearPackedParamsBase> params;
  int64_t out_features = 0;
  // Whether the packed type takes the input's quantization parameters from the caller (FBGEMM's
  // does; a packed type without that call leaves the range to apply_dynamic).
  bool takes_input_params = false;
};

namespace {

bool HasQuantizedEngine() { return !at::globalContext().supportedQEngines().empty(); }

// quantized::linear_prepack, the op quantize_dynamic's modules call, packs for the global context's
// quantized engine (x86 by default on x86 CPUs, FBGEMM's kernels for dynamic linears); padless
// leaves that process-wide choice to the application.
c10::intrusive_ptr<LinearPackedParamsBase> Prepack(const at::Tensor& qweight,
                                                    const std::optional<at::Tensor>& bias) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("quantized::linear_prepack", "")
          .typed<c10::intrusive_ptr<LinearPackedParamsBase>(at::Tensor,
                                                            std::optional<at::Tensor>)>();
  return op.call(qweight, bias);
}

}  // namespace

absl::StatusOr<Int8Linear> Int8Linear::Pack(const at::Tensor& weight, const at::Tensor& bias) {
  if (!HasQuantizedEngine()) {
    return absl::FailedPreconditionError("int8 weights: this LibTorch has no quantized engine");
  }
  if (!weight.defined() || weight.dim() != 2 || !weight.device().is_cpu() ||
      !at::isFloatingType(weight.scalar_type())) {
    return absl::InvalidArgumentError("int8 weights: the weight must be a 2-D floating CPU tensor");
  }
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != weight.size(0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("int8 weights: bias must be [", weight.size(0), "]"));
  }
  try {
    const at::NoGradGuard no_grad;
    const at::Tensor w = weight.to(at::kFloat).contiguous();
    // Symmetric per-channel scales: the row's amax maps to 127 (a zero row gets scale 1).
    at::Tensor amax = std::get<0>(w.abs().max(1));
    const at::Tensor scales =
        at::where(amax > 0, amax / 127.0, at::ones_like(amax)).to(at::kDouble);
    const at::Tensor qweight = at::quantize_per_channel(
        w, scales, at::zeros({w.size(0)}, at::kLong), /*axis=*/0, at::kQInt8);
    auto packed = std::make_shared<Packed>();
    packed->params = Prepack(qweight, bias.defined() ? std::optional<at::Tensor>(
                                                           bias.to(at::kFloat).contiguous())
                                                     : std::nullopt);
    packed->out_features = w.size(0);
    try {
      packed->params->apply_with_input_q_dq_qweight_dq_output_fp32(at::zeros({1, w.size(1)}), 1.0,
                                                                   0);
      packed->takes_input_params = true;
    } catch (const c10::Error&) {
    }
    return Int8Linear(std::move(packed));
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("int8 weights: packing failed: ", e.what_without_backtrace()));
  }
}

at::Tensor Int8Linear::Apply(const at::Tensor& x) const {
  TORCH_CHECK(x.dim() == 2 && x.device().is_cpu(), "Int8Linear: x must be a 2-D CPU tensor");
  const at::Tensor input = x.to(at::kFloat).contiguous();
  // apply_dynamic finds the input's range in one serial pass (fbgemm::FindMinMax) while the other
  // threads wait, 3% of the CPU int8 forward on 2 cores; at::aminmax finds it in parallel. The
  // input's quantization parameters are then chosen as apply_dynamic chooses them
  // (quant_utils::ChooseQuantizationParams, unsigned 8 bits, full range), and the GEMM that takes
  // them (the FBGEMM kernel apply_dynamic runs) gives the same output bit for bit.
  if (packed_->takes_input_params && input.numel() > 0) {
    const auto [lo, hi] = at::aminmax(input);
    const float min = lo.item<float>();
    const float max = hi.item<float>();
    if (min <= max) {  // not NaN
      const quant_utils::TensorQuantizationParams q = quant_utils::ChooseQuantizationParams(
          min, max, /*qmin=*/0, /*qmax=*/255, /*preserve_sparsity=*/false,
          /*force_scale_power_of_two=*/false, /*reduce_range=*/false);
      return packed_->params->apply_with_input_q_dq_qweight_dq_output_fp32(input, q.scale,
                                                                           q.zero_point);
    }
  }
  return packed_->params->apply_dynamic(input, /*reduce_range=*/false);
}

int64_t Int8Linear::out_features() const { return packed_->out_features; }

}  // namespace padless::models
