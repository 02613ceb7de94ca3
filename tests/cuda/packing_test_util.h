// Helpers of the cuda/ op tests: random varlen batches (lengths including empty and full-length
// sequences, drawn with a fixed seed, and their cu_seqlens), poisoned free GPU memory, the relative
// error of a kernel's output, an FP8 tensor's bytes, the float special values, and the check that broken input throws a c10::Error saying what is
// wrong. In one header so that the test files define none of them twice (and can share a unity
// batch, PADLESS_UNITY).
#ifndef PADLESS_TESTS_CUDA_PACKING_TEST_UTIL_H_
#define PADLESS_TESTS_CUDA_PACKING_TEST_UTIL_H_

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace padless::cuda::testing {

// `batch` lengths in [0, max_len]; the first is max_len and, when batch > 2, one is 0, so that
// both edges are always exercised.
inline std::vector<int32_t> RandomLengths(int64_t batch, int32_t max_len, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, max_len);
  std::vector<int32_t> lengths(batch);
  for (auto& l : lengths) l = dist(rng);
  if (batch > 0) lengths[0] = max_len;
  if (batch > 2) lengths[batch / 2] = 0;
  return lengths;
}

// int32 [n+1] prefix sums on the CPU.
inline at::Tensor CuSeqlens(const std::vector<int32_t>& lengths) {
  at::Tensor cu = at::zeros({static_cast<int64_t>(lengths.size()) + 1}, at::kInt);
  int32_t* p = cu.data_ptr<int32_t>();
  for (size_t i = 0; i < lengths.size(); ++i) p[i + 1] = p[i] + lengths[i];
  return cu;
}

inline int64_t Total(const std::vector<int32_t>& lengths) {
  int64_t t = 0;
  for (int32_t l : lengths) t += l;
  return t;
}

// Fills the device's cached free memory with 0xFF bytes (NaN for floats, -1 for ints), so that an
// op whose output is allocated afterwards shows any element it forgot to write.
inline void PoisonFreeMemory(const c10::Device& device, int64_t bytes) {
  at::Tensor junk = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  junk.fill_(0xFF);
}

// What the kernel tests poison before an op allocates its outputs: more than the outputs of their
// largest shapes.
inline constexpr int64_t kPoisonBytes = int64_t{256} << 20;

// ||got - want|| / ||want|| in fp32 (got may be 16-bit); 0 for empty tensors. A NaN in got (a
// poisoned element the op did not write) makes it NaN, which fails every `<` bound.
inline double RelErr(const at::Tensor& got, const at::Tensor& want) {
  if (want.numel() == 0) return 0.0;
  const at::Tensor w = want.to(at::kFloat);
  return ((got.to(at::kFloat) - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// An FP8 (or any 1-byte) tensor's bytes, row-major, on the CPU: FP8 results are compared bit for bit.
inline std::vector<uint8_t> Bytes(const at::Tensor& fp8) {
  const at::Tensor b = fp8.contiguous().view(at::kByte).cpu().flatten();
  return std::vector<uint8_t>(b.data_ptr<uint8_t>(), b.data_ptr<uint8_t>() + b.numel());
}

// Runs f, which must throw c10::Error whose message contains `needle`.
template <typename F>
void ExpectC10Error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no c10::Error; expected one mentioning '" << needle << "'";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find(needle), std::string::npos)
        << e.what_without_backtrace();
  }
}

}  // namespace padless::cuda::testing

#endif  // PADLESS_TESTS_CUDA_PACKING_TEST_UTIL_H_
