// GPU benchmark of the cuda/ kernels: each kernel's speed-up over its torch reference (index_select
// / index_copy_ / index_add_ chains) measured in the same run, and the fraction of the HBM
// bandwidth it reaches, against a device-to-device copy measured first as the ceiling.
// Timing: CUDA events around `kInner` back-to-back calls, median of `kReps` after warm-up.
// usage: cuda_kernels_bench [--quick] [csv_path]   (default csv: cuda_kernels_bench.csv)
#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "padless/cuda/kernels/kernel_support.h"
#include "padless/cuda/kernels/packed_masks.h"
#include "padless/cuda/kernels/segment_pool.h"
#include "padless/cuda/kernels/unpad.h"
#include "padless/base/atomic_file_writer.h"

namespace padless::cuda {
namespace {

int kReps = 30;
int kInner = 10;
constexpr int kWarmup = 3;

// Median milliseconds of one call of `fn`.
double TimeMs(const std::function<void()>& fn) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < kWarmup; ++i) fn();
  std::vector<double> samples;
  for (int r = 0; r < kReps; ++r) {
    cudaEventRecord(start, stream);
    for (int i = 0; i < kInner; ++i) fn();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    samples.push_back(ms / kInner);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

template <typename T>
T Must(absl::StatusOr<T> v) {
  if (!v.ok()) {
    std::fprintf(stderr, "cuda_kernels_bench: %s\n", std::string(v.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(v);
}

struct Shape {
  const char* name;
  int64_t batch, max_len, hidden;
  at::ScalarType dtype;
};

struct Row {
  std::string kernel, shape;
  double kernel_ms, reference_ms, bytes;
};

std::vector<int32_t> Lengths(const Shape& s, uint32_t seed) {
  // Uniform in [L/8, L]: about 44% padding, near the IMDB figure at L = 512.
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(std::max<int64_t>(1, s.max_len / 8), s.max_len);
  std::vector<int32_t> out(s.batch);
  for (auto& l : out) l = static_cast<int32_t>(dist(rng));
  return out;
}

void Bench(const Shape& s, std::vector<Row>& rows) {
  const c10::Device gpu(c10::kCUDA, 0);
  const std::vector<int32_t> lengths = Lengths(s, 7);
  std::vector<int32_t> prefix(lengths.size() + 1, 0);
  for (size_t i = 0; i < lengths.size(); ++i) prefix[i + 1] = prefix[i] + lengths[i];
  const int64_t total = prefix.back();
  const at::Tensor cu = at::tensor(prefix, at::kInt).to(gpu);
  const auto opts = at::TensorOptions().device(gpu).dtype(s.dtype);
  const double es = static_cast<double>(c10::elementSize(s.dtype));
  const double row = es * static_cast<double>(s.hidden);
  const double padded_rows = static_cast<double>(s.batch * s.max_len);

  const at::Tensor padded = at::randn({s.batch, s.max_len, s.hidden}, opts);
  const at::Tensor packed = Must(Unpad(padded, cu, total));
  auto add = [&](const char* kernel, double bytes, const std::function<void()>& fast,
                 const std::function<void()>& ref) {
    rows.push_back({kernel, s.name, TimeMs(fast), TimeMs(ref), bytes});
  };
  add(
      "unpad", 2.0 * total * row, [&] { Must(Unpad(padded, cu, total)); },
      [&] { Must(reference::Unpad(padded, cu, total)); });
  add(
      "pad", total * row + padded_rows * row, [&] { Must(Pad(packed, cu, s.max_len)); },
      [&] { Must(reference::Pad(packed, cu, s.max_len)); });
  add(
      "pool_mean", total * row + s.batch * row,
      [&] { Must(SegmentPool(packed, cu, PoolMode::kMean)); },
      [&] { Must(reference::SegmentPool(packed, cu, PoolMode::kMean)); });
  add(
      "pool_cls", 2.0 * s.batch * row, [&] { Must(SegmentPool(packed, cu, PoolMode::kCls)); },
      [&] { Must(reference::SegmentPool(packed, cu, PoolMode::kCls)); });
  add(
      "varlen_ids", 2.0 * 8 * total, [&] { Must(VarlenIdsFromCuSeqlens(cu, total)); },
      [&] { Must(reference::VarlenIdsFromCuSeqlens(cu, total)); });

  // Packed rows of the batch's own length: two sequences per row where they fit, else one.
  std::vector<int64_t> loc;
  int64_t r = -1, used = s.max_len;
  for (int32_t l : lengths) {
    if (used + l > s.max_len) {
      ++r;
      used = 0;
    }
    loc.push_back(r);
    loc.push_back(used);
    used += l;
  }
  const int64_t packed_rows = r + 1;
  const at::Tensor locations = at::tensor(loc, at::kLong).reshape({s.batch, 2}).to(gpu);
  const at::Tensor seg =
      Must(SegmentIdsFromCuSeqlens(cu, locations, packed_rows, s.max_len, total));
  add(
      "segment_ids", 8.0 * (packed_rows * s.max_len + total),
      [&] { Must(SegmentIdsFromCuSeqlens(cu, locations, packed_rows, s.max_len, total)); },
      [&] {
        Must(reference::SegmentIdsFromCuSeqlens(cu, locations, packed_rows, s.max_len, total));
      });
  add(
      "block_mask", static_cast<double>(packed_rows * s.max_len) * (s.max_len + 8),
      [&] { Must(BlockDiagonalMask(seg)); }, [&] { Must(reference::BlockDiagonalMask(seg)); });
}

double CopyBandwidth() {
  const int64_t bytes = int64_t{2} << 30;
  const auto opts = at::TensorOptions().device(c10::Device(c10::kCUDA, 0)).dtype(at::kByte);
  at::Tensor src = at::ones({bytes}, opts), dst = at::empty({bytes}, opts);
  const double ms = TimeMs([&] { dst.copy_(src); });
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3);
}

int Main(int argc, char** argv) {
  std::string csv_path = "cuda_kernels_bench.csv";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else {
      csv_path = a;
    }
  }
  if (!torch::cuda::is_available()) {
    std::printf("cuda_kernels_bench: no CUDA device; nothing to measure.\n");
    return 0;
  }
  if (!CudaKernelsBuilt()) {
    std::printf("cuda_kernels_bench: padless was built without its CUDA kernels.\n");
    return 0;
  }
  if (quick) kReps = 5;
  const double copy_bw = CopyBandwidth();
  std::printf("device-to-device copy: %.0f GB/s (read + write), the 100%% line below\n",
              copy_bw / 1e9);
  // The first fits in the 50 MB L2 (so HBM fractions over 100% are possible there); the others
  // are several times larger.
  std::vector<Shape> shapes = {{"b32_l512_h768_bf16", 32, 512, 768, at::kBFloat16},
                               {"b128_l1024_h1024_bf16", 128, 1024, 1024, at::kBFloat16},
                               {"b64_l2048_h768_fp32", 64, 2048, 768, at::kFloat}};
  if (quick) shapes.resize(1);
  std::vector<Row> rows;
  for (const Shape& s : shapes) Bench(s, rows);

  std::printf("\n%-12s %-24s %11s %11s %8s %9s %7s\n", "kernel", "shape", "kernel_us", "ref_us",
              "speedup", "GB/s", "HBM%");
  std::string csv = "kernel,shape,kernel_us,reference_us,speedup,bytes,kernel_gbps,hbm_fraction\n";
  for (const Row& r : rows) {
    const double gbps = r.bytes / (r.kernel_ms * 1e-3) / 1e9;
    const double frac = r.bytes / (r.kernel_ms * 1e-3) / copy_bw;
    std::printf("%-12s %-24s %11.1f %11.1f %7.2fx %9.0f %6.0f%%\n", r.kernel.c_str(),
                r.shape.c_str(), r.kernel_ms * 1e3, r.reference_ms * 1e3,
                r.reference_ms / r.kernel_ms, gbps, 100 * frac);
    csv += absl::StrFormat("%s,%s,%.2f,%.2f,%.3f,%.0f,%.1f,%.4f\n", r.kernel, r.shape,
                           r.kernel_ms * 1e3, r.reference_ms * 1e3, r.reference_ms / r.kernel_ms,
                           r.bytes, gbps, frac);
  }
  if (absl::Status s = base::WriteFileAtomically(csv_path, csv); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("\nCSV written to %s\n", csv_path.c_str());
  return 0;
}

}  // namespace
}  // namespace padless::cuda

int main(int argc, char** argv) { return padless::cuda::Main(argc, argv); }
