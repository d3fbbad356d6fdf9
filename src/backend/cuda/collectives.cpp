// CUDA kernels of the communication nodes. The compute stream records an event where the node's
// input is ready; the device's communication thread waits for it (bounded by the communicator's
// timeout), then calls the communicator: with the device buffers themselves when it takes GPU
// memory (NCCL), otherwise with pinned host copies made on the device's communication stream (the
// in-process and MPI communicators; logical GPUs of one chip, which NCCL refuses). Every call
// returns with its result in device memory, so the compute stream's later kernels may read it.
#include <cuda_runtime.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/comm_kernels.h"
#include "backend/cuda/check.h"
#include "backend/cuda/context.h"

namespace tandem::backend::cuda {

namespace {
using comm::CommQueue;
using comm::Communicator;
using comm::ReduceOp;
using comm::Wire;

// One communication node's device side: the readiness event and, for a host communicator, the
// pinned copies of its input and output ranges. Made when the plan is bound; freed with it.
class Staging {
 public:
  struct Range {
    void* device;
    std::size_t bytes;
  };
  Staging(const KernelInit& k, Communicator* comm, std::vector<Range> in, std::vector<Range> out)
      : ctx_(*static_cast<Context*>(k.context)), comm_(comm), in_(std::move(in)), out_(std::move(out)), label_(kernel_label(k)) {
    CUDA_CHECK(cudaSetDevice(ctx_.ordinal), label_);
    CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), label_);
    // The pointer lists a call takes are fixed here: a step allocates nothing.
    for (const Range& r : in_) in_device_.push_back(r.device);
    for (const Range& r : out_) out_device_.push_back(r.device);
    if (comm_->takes_device_memory()) return;
    for (const Range& r : in_) in_host_.push_back(pinned(r.bytes));
    // An output range that is also an input (an all-reduce in place) shares its host copy.
    for (const Range& r : out_) out_host_.push_back(host_of(r.device) ? host_of(r.device) : pinned(r.bytes));
  }
  ~Staging() {
    cudaSetDevice(ctx_.ordinal);
    cudaEventDestroy(ready_);
    for (void* p : pinned_) cudaFreeHost(p);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // On the compute thread: the input is ready once the stream has run what was issued so far.
  void mark_ready() const { CUDA_CHECK(cudaEventRecord(ready_, ctx_.stream), label_); }

  // On the communication thread: waits for the input, copies it to the host when the
  // communicator needs that, runs `call(input pointers, output pointers)`, and copies the output
  // back before returning.
  template <class Call>
  void run(Call&& call) const {
    CUDA_CHECK(cudaSetDevice(ctx_.ordinal), label_);
    wait_ready();
    if (comm_->takes_device_memory()) {
      call(in_device_, out_device_);
      return;
    }
    for (std::size_t i = 0; i < in_.size(); ++i)
      CUDA_CHECK(cudaMemcpyAsync(in_host_[i], in_[i].device, in_[i].bytes, cudaMemcpyDeviceToHost, ctx_.comm), label_);
    CUDA_CHECK(cudaStreamSynchronize(ctx_.comm), label_);
    call(in_host_, out_host_);
    for (std::size_t i = 0; i < out_.size(); ++i)
      CUDA_CHECK(cudaMemcpyAsync(out_[i].device, out_host_[i], out_[i].bytes, cudaMemcpyHostToDevice, ctx_.comm), label_);
    CUDA_CHECK(cudaStreamSynchronize(ctx_.comm), label_);
  }

 private:
  void* pinned(std::size_t bytes) {
    void* p = nullptr;
    CUDA_CHECK(cudaMallocHost(&p, bytes ? bytes : 1), label_);
    pinned_.push_back(p);
    return p;
  }
  // The host copy of the input at `device`; null when no input is there.
  void* host_of(void* device) const {
    for (std::size_t i = 0; i < in_.size(); ++i)
      if (in_[i].device == device) return in_host_[i];
    return nullptr;
  }
  // Polls instead of cudaEventSynchronize, which has no deadline: a stalled compute stream
  // becomes the communicator's timeout error, naming the kernel.
  void wait_ready() const {
    const auto deadline = std::chrono::steady_clock::now() + comm_->timeout();
    for (;;) {
      const cudaError_t e = cudaEventQuery(ready_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) throw_cuda_error(e, "cudaEventQuery", label_);
      if (std::chrono::steady_clock::now() > deadline)
        throw TimeoutError(label_ + ": the compute stream did not reach this node's input within " +
                           std::to_string(comm_->timeout().count()) + " ms");
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  const Context& ctx_;
  Communicator* comm_;
  std::vector<Range> in_, out_;
  std::string label_;
  cudaEvent_t ready_ = nullptr;
  std::vector<void*> in_device_, out_device_;  // the ranges' device addresses
  std::vector<void*> in_host_, out_host_, pinned_;
};

KernelFn make_all_reduce_start(const KernelInit& k) {
  std::size_t total = 0;
  const std::vector<BucketRange> ranges = bucket_ranges(k, &total);
  const DType dtype = k.in_types.at(0).dtype;
  const std::size_t elem = dtype_size(dtype);
  const ReduceOp op = communication_of(k).mean ? ReduceOp::Mean : ReduceOp::Sum;
  const Wire wire = wire_of(k);
  const auto [comm, rank] = peers_of(k);
  std::vector<Staging::Range> buffers;
  for (const BucketRange& r : ranges) buffers.push_back({r.start, r.count * elem});
  auto staging = std::make_shared<Staging>(k, comm, buffers, buffers);
  const std::string label = "all_reduce bucket " + std::to_string(communication_of(k).bucket) + " (" + std::to_string(total / 1024) + " KB)";
  const int slot = add_bucket_slot(
      k,
      [=] {
        staging->run([&](const std::vector<void*>& in, const std::vector<void*>&) {
          for (std::size_t i = 0; i < in.size(); ++i) comm->all_reduce(rank, in[i], ranges[i].count, dtype, op, wire);
        });
      },
      label);
  CommQueue* queue = comm_of(k).queue;
  return [=] {
    staging->mark_ready();
    queue->start(slot);
  };
}

// A node that runs to completion on the communication thread: the compute stream marks its input
// ready, then the compute thread waits for the communication thread.
KernelFn staged_on_queue(const KernelInit& k, const std::shared_ptr<Staging>& staging, std::function<void()> work, const std::string& label) {
  const KernelFn run = run_on_queue(k, std::move(work), label);
  return [=] {
    staging->mark_ready();
    run();
  };
}

KernelFn make_all_gather(const KernelInit& k) {
  const auto [comm, rank] = collective(k, "all_gather");
  const auto count = static_cast<std::size_t>(k.in_types[0].shape.num_elements());
  const DType dtype = k.in_types[0].dtype;
  auto staging = std::make_shared<Staging>(k, comm, std::vector<Staging::Range>{{k.in[0], k.in_types[0].bytes()}},
                                           std::vector<Staging::Range>{{k.out[0], k.out_type().bytes()}});
  return staged_on_queue(
      k, staging,
      [=] { staging->run([&](const std::vector<void*>& in, const std::vector<void*>& out) { comm->all_gather(rank, in[0], out[0], count, dtype); }); },
      "all_gather");
}

KernelFn make_reduce_scatter(const KernelInit& k) {
  const auto [comm, rank] = collective(k, "reduce_scatter");
  const auto count = static_cast<std::size_t>(k.out_type().shape.num_elements());
  const DType dtype = k.in_types[0].dtype;
  auto staging = std::make_shared<Staging>(k, comm, std::vector<Staging::Range>{{k.in[0], k.in_types[0].bytes()}},
                                           std::vector<Staging::Range>{{k.out[0], k.out_type().bytes()}});
  return staged_on_queue(
      k, staging,
      [=] {
        staging->run([&](const std::vector<void*>& in, const std::vector<void*>& out) {
          comm->reduce_scatter(rank, in[0], out[0], count, dtype, ReduceOp::Sum);
        });
      },
      "reduce_scatter");
}

// send's data is its input; recv's, its output.
KernelFn make_point_to_point(const KernelInit& k) {
  const bool sending = k.node.op == "send";
  const int peer = peer_of(k, sending ? "send" : "recv");
  Communicator* comm = comm_of(k).communicator;
  const int rank = comm_of(k).rank;
  const std::size_t bytes = sending ? k.in_types[0].bytes() : k.out_type().bytes();
  const int tag = communication_of(k).tag;
  const std::vector<Staging::Range> data{{sending ? k.in[0] : k.out[0], bytes}};
  auto staging = std::make_shared<Staging>(k, comm, sending ? data : std::vector<Staging::Range>{}, sending ? std::vector<Staging::Range>{} : data);
  if (sending)
    return staged_on_queue(
        k, staging, [=] { staging->run([&](const std::vector<void*>& in, const std::vector<void*>&) { comm->send(rank, peer, in[0], bytes, tag); }); },
        "send to rank " + std::to_string(peer));
  return staged_on_queue(
      k, staging, [=] { staging->run([&](const std::vector<void*>&, const std::vector<void*>& out) { comm->recv(rank, peer, out[0], bytes, tag); }); },
      "recv from rank " + std::to_string(peer));
}
}  // namespace

REGISTER_KERNEL("all_reduce_start", DeviceKind::Cuda, DType::F32, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_start", DeviceKind::Cuda, DType::F64, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cuda, DType::F32, make_all_reduce_wait);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cuda, DType::F64, make_all_reduce_wait);
// Gathers and transfers move bytes: any dtype (integer labels and ids travel too).
REGISTER_KERNEL("all_gather", DeviceKind::Cuda, DType::F32, make_all_gather);
REGISTER_KERNEL("all_gather", DeviceKind::Cuda, DType::F64, make_all_gather);
REGISTER_KERNEL("all_gather", DeviceKind::Cuda, DType::I32, make_all_gather);
REGISTER_KERNEL("all_gather", DeviceKind::Cuda, DType::I64, make_all_gather);
REGISTER_KERNEL("reduce_scatter", DeviceKind::Cuda, DType::F32, make_reduce_scatter);
REGISTER_KERNEL("reduce_scatter", DeviceKind::Cuda, DType::F64, make_reduce_scatter);
REGISTER_KERNEL("send", DeviceKind::Cuda, DType::F32, make_point_to_point);
REGISTER_KERNEL("send", DeviceKind::Cuda, DType::F64, make_point_to_point);
REGISTER_KERNEL("send", DeviceKind::Cuda, DType::I32, make_point_to_point);
REGISTER_KERNEL("send", DeviceKind::Cuda, DType::I64, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cuda, DType::F32, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cuda, DType::F64, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cuda, DType::I32, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cuda, DType::I64, make_point_to_point);

// 16-bit values (mixed precision's activations and their gradients between devices): moved as
// bytes, summed in float32 per element and rounded once per addition.
REGISTER_KERNEL("all_reduce_start", DeviceKind::Cuda, DType::BF16, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_start", DeviceKind::Cuda, DType::F16, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cuda, DType::BF16, make_all_reduce_wait);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cuda, DType::F16, make_all_reduce_wait);
REGISTER_KERNEL("all_gather", DeviceKind::Cuda, DType::BF16, make_all_gather);
REGISTER_KERNEL("all_gather", DeviceKind::Cuda, DType::F16, make_all_gather);
REGISTER_KERNEL("reduce_scatter", DeviceKind::Cuda, DType::BF16, make_reduce_scatter);
REGISTER_KERNEL("reduce_scatter", DeviceKind::Cuda, DType::F16, make_reduce_scatter);
REGISTER_KERNEL("send", DeviceKind::Cuda, DType::BF16, make_point_to_point);
REGISTER_KERNEL("send", DeviceKind::Cuda, DType::F16, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cuda, DType::BF16, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cuda, DType::F16, make_point_to_point);
}  // namespace tandem::backend::cuda
