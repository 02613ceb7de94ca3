// Int8Linear: a linear layer with int8 weights for inference on the CPU, as PyTorch's dynamic
// quantization runs it (torch.ao.quantization.quantize_dynamic): the weight [N, K] quantized once
// to int8 with one scale per output channel (symmetric), packed for FBGEMM with its bias; each call
// quantizes the fp32 input to uint8 with one scale for the whole input (computed from that input:
// "dynamic"), multiplies in int8 with int32 accumulation, and returns fp32 with the bias added.
// The input's single scale means a row's result depends slightly on the other rows it is
// multiplied with (a batch's outlier coarsens the rest); the engine states that bound.
//
// PIMPL: FBGEMM's packed weight (LinearPackedParamsBase) stays out of this header.
#ifndef PADLESS_MODELS_INT8_LINEAR_H_
#define PADLESS_MODELS_INT8_LINEAR_H_

#include <ATen/core/Tensor.h>

#include <memory>

#include "absl/status/statusor.h"

namespace padless::models {

class Int8Linear {
 public:
  // weight [N, K] and bias [N] (or undefined), floating, on the CPU, packed for the process's
  // quantized engine (x86 / FBGEMM on x86 CPUs). FailedPrecondition when this LibTorch has none;
  // InvalidArgument for bad shapes or devices.
  static absl::StatusOr<Int8Linear> Pack(const at::Tensor& weight, const at::Tensor& bias);

  // x [T, K] (any floating dtype; computed in fp32): [T, N] fp32 = x @ W^T + bias.
  at::Tensor Apply(const at::Tensor& x) const;

  int64_t out_features() const;

 private:
  struct Packed;
  explicit Int8Linear(std::shared_ptr<const Packed> packed) : packed_(std::move(packed)) {}
  std::shared_ptr<const Packed> packed_;
};

}  // namespace padless::models

#endif  // PADLESS_MODELS_INT8_LINEAR_H_
