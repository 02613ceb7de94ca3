// ProcessGroup on c10d: TCPStore rendezvous, a Gloo group for host values (and CPU tensors), NCCL
// for CUDA tensors. c10d reports failures as c10::Error (DistBackendError, timeouts); they become
// absl::Status here, naming the operation and the rank.
#include "padless/distributed/process_group.h"

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends.h"

namespace padless::distributed {

struct PendingReduce::Impl {
  c10::intrusive_ptr<c10d::Work> work;
  int rank = 0;
};

absl::Status PendingReduce::Wait() {
  if (impl_ == nullptr) return absl::OkStatus();
  try {
    impl_->work->wait();
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("rank ", impl_->rank, ": all-reduce ", kPeerFailed, ": ", e.what()));
  }
  return absl::OkStatus();
}

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> host;    // Gloo
  c10::intrusive_ptr<c10d::Backend> device;  // NCCL on CUDA; the Gloo group on the CPU
};

ProcessGroup::ProcessGroup(DistEnv env, c10::Device device, std::unique_ptr<Impl> impl)
    : env_(std::move(env)), device_(device), impl_(std::move(impl)) {
  backend_name_ = device_.is_cuda() ? "nccl" : "gloo";
}

ProcessGroup::~ProcessGroup() = default;

absl::StatusOr<std::shared_ptr<ProcessGroup>> ProcessGroup::Create(const DistEnv& env,
                                                                   c10::Device device,
                                                                   ProcessGroupOptions options) {
  auto impl = std::make_unique<Impl>();
  try {
    // NCCL works on the current device: make it this rank's.
    if (device.is_cuda()) c10::impl::getDeviceGuardImpl(device.type())->setDevice(device);
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(env.master_port);
    store_options.isServer = env.rank == 0;
    store_options.numWorkers = env.world_size;
    store_options.waitWorkers = true;
    store_options.timeout = options.timeout;
    impl->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
    auto host_store = c10::make_intrusive<c10d::PrefixStore>("padless/host", impl->store);
    impl->host = internal::MakeGlooBackend(host_store, env.rank, env.world_size, options.timeout);
    if (device.is_cuda()) {
      auto device_store = c10::make_intrusive<c10d::PrefixStore>("padless/device", impl->store);
      absl::StatusOr<c10::intrusive_ptr<c10d::Backend>> nccl =
          internal::MakeNcclBackend(device_store, env.rank, env.world_size, options.timeout);
      if (!nccl.ok()) return nccl.status();
      impl->device = *nccl;
    } else {
      impl->device = impl->host;
    }
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "rank ", env.rank, " of ", env.world_size, ": cannot join the job at ", env.master_addr,
        ":", env.master_port, " (MASTER_ADDR:MASTER_PORT): ", e.what()));
  }
  return std::shared_ptr<ProcessGroup>(new ProcessGroup(env, device, std::move(impl)));
}

absl::Status ProcessGroup::Failed(const std::string& what, const std::exception& e) const {
  return absl::UnavailableError(absl::StrCat("rank ", env_.rank, " of ", env_.world_size, ": ",
                                             what, " ", kPeerFailed, ": ", e.what()));
}

PendingReduce ProcessGroup::AllReduceSumAsync(at::Tensor tensor) {
  std::vector<at::Tensor> tensors{std::move(tensor)};
  PendingReduce pending;
  pending.impl_ = std::make_shared<PendingReduce::Impl>();
  pending.impl_->rank = env_.rank;
  pending.impl_->work = impl_->device->allreduce(tensors, c10d::AllreduceOptions{});
  return pending;
}

absl::Status ProcessGroup::AllReduceSum(at::Tensor tensor) {
  try {
    return AllReduceSumAsync(std::move(tensor)).Wait();
  } catch (const std::exception& e) {
    return Failed("all-reduce", e);
  }
}

absl::StatusOr<std::vector<int64_t>> ProcessGroup::AllReduceSumHost(std::vector<int64_t> values) {
  at::Tensor t = at::tensor(values, at::kLong);
  try {
    std::vector<at::Tensor> tensors{t};
    impl_->host->allreduce(tensors, c10d::AllreduceOptions{})->wait();
  } catch (const std::exception& e) {
    return Failed("host all-reduce", e);
  }
  const int64_t* data = t.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + values.size());
}

absl::StatusOr<std::vector<int64_t>> ProcessGroup::AllGatherHost(
    const std::vector<int64_t>& values) {
  // A sum in which each rank fills only its own slot: one collective that Gloo already runs for
  // AllReduceSumHost, and the bits of every value go through int64 unchanged.
  std::vector<int64_t> slots(values.size() * static_cast<size_t>(env_.world_size), 0);
  std::copy(values.begin(), values.end(),
            slots.begin() + static_cast<ptrdiff_t>(values.size() * env_.rank));
  return AllReduceSumHost(std::move(slots));
}

absl::Status ProcessGroup::BroadcastHostBytes(std::string& bytes, int root) {
  try {
    c10d::BroadcastOptions options;
    options.rootRank = root;
    std::vector<at::Tensor> size{at::full({1}, static_cast<int64_t>(bytes.size()), at::kLong)};
    impl_->host->broadcast(size, options)->wait();
    const int64_t n = size[0].item<int64_t>();
    if (n == 0) {
      bytes.clear();
      return absl::OkStatus();
    }
    std::vector<at::Tensor> data{at::empty({n}, at::kByte)};
    if (env_.rank == root) std::memcpy(data[0].data_ptr<uint8_t>(), bytes.data(), bytes.size());
    impl_->host->broadcast(data, options)->wait();
    bytes.assign(reinterpret_cast<const char*>(data[0].data_ptr<uint8_t>()),
                 static_cast<size_t>(n));
  } catch (const std::exception& e) {
    return Failed("host broadcast", e);
  }
  return absl::OkStatus();
}

absl::Status ProcessGroup::Broadcast(const std::vector<at::Tensor>& tensors, int root) {
  try {
    c10d::BroadcastOptions options;
    options.rootRank = root;
    // One tensor per call: Gloo's multi-tensor form means one tensor per local device.
    for (const at::Tensor& t : tensors) {
      std::vector<at::Tensor> one{t};
      impl_->device->broadcast(one, options)->wait();
    }
  } catch (const std::exception& e) {
    return Failed("broadcast", e);
  }
  return absl::OkStatus();
}

absl::Status ProcessGroup::Barrier() {
  try {
    impl_->host->barrier(c10d::BarrierOptions{})->wait();
  } catch (const std::exception& e) {
    return Failed("barrier", e);
  }
  return absl::OkStatus();
}

}  // namespace padless::distributed
