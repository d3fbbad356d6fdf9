#include "comm/nccl/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <thread>

#include "core/device_name.h"
#include "tandem/errors.h"

namespace tandem::comm {

struct NcclCommunicator::Rank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  std::vector<std::byte> host;  // staging for send and recv
};

namespace {
ncclDataType_t nccl_type(DType d, const char* what) {
  switch (d) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
  }
  throw ValueError(std::string(what) + ": no NCCL type for dtype " + dtype_name(d));
}

void check_nccl(ncclResult_t r, const char* call, const std::string& where) {
  if (r != ncclSuccess && r != ncclInProgress) throw Error(where + ": " + call + " failed: " + ncclGetErrorString(r));
}
void check_cuda(cudaError_t e, const char* call, const std::string& where) {
  if (e != cudaSuccess) throw Error(where + ": " + call + " failed: " + cudaGetErrorString(e));
}
}  // namespace

NcclCommunicator::NcclCommunicator(std::vector<std::string> devices) : devices_(std::move(devices)), mailboxes_(devices_) {
  for (const std::string& d : devices_) {
    const std::optional<core::DeviceName> n = core::read_device_name(d);
    if (!n || n->kind != "gpu" || n->logical >= 0) throw ValueError("NCCL communicator: '" + d + "' is not a whole GPU (\"gpu:N\")");
    for (int o : ordinals_)
      if (o == n->index) throw ValueError("NCCL communicator: GPU " + std::to_string(o) + " appears twice; NCCL needs one rank per GPU");
    ordinals_.push_back(n->index);
  }
}

NcclCommunicator::~NcclCommunicator() { destroy(); }

void NcclCommunicator::destroy() {
  for (auto& r : ranks_) {
    if (!r) continue;
    if (r->comm) ncclCommDestroy(r->comm);
    if (r->stream) cudaStreamDestroy(r->stream);
  }
  ranks_.clear();
}

NcclCommunicator::Rank& NcclCommunicator::ready(int rank, const char* what) {
  if (rank < 0 || rank >= size()) throw ValueError(std::string(what) + ": rank " + std::to_string(rank) + " outside [0, " + std::to_string(size()) + ")");
  if (aborted_) throw abandoned(std::string(what) + " on " + devices_[static_cast<std::size_t>(rank)]);
  std::lock_guard lock(init_mutex_);
  if (ranks_.empty() && init_error_.empty()) {
    // Initialisation switches this thread between the GPUs; the caller (a device's communication
    // thread, which has set its own GPU) gets its device back.
    int caller_device = 0;
    const bool restore = cudaGetDevice(&caller_device) == cudaSuccess;
    try {
      // send and recv wait in the mailboxes: under this communicator's timeout, not their default.
      mailboxes_.set_timeout(timeout_);
      std::vector<ncclComm_t> comms(devices_.size());
      check_nccl(ncclCommInitAll(comms.data(), size(), ordinals_.data()), "ncclCommInitAll", "NCCL over " + std::to_string(size()) + " GPUs");
      for (std::size_t i = 0; i < comms.size(); ++i) {
        auto r = std::make_unique<Rank>();
        r->comm = comms[i];
        check_cuda(cudaSetDevice(ordinals_[i]), "cudaSetDevice", devices_[i]);
        check_cuda(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", devices_[i]);
        ranks_.push_back(std::move(r));
      }
    } catch (const std::exception& e) {
      init_error_ = e.what();
    }
    if (restore) cudaSetDevice(caller_device);
  }
  if (!init_error_.empty()) throw Error(init_error_);
  // Every call issues on this rank's GPU, whichever device the calling thread was on.
  check_cuda(cudaSetDevice(ordinals_[static_cast<std::size_t>(rank)]), "cudaSetDevice", devices_[static_cast<std::size_t>(rank)]);
  return *ranks_[static_cast<std::size_t>(rank)];
}

void NcclCommunicator::finish(int rank, const char* what) {
  Rank& r = *ranks_[static_cast<std::size_t>(rank)];
  // Built only for an error: finish runs for every collective of every step.
  const auto where = [&] { return std::string(what) + " on " + devices_[static_cast<std::size_t>(rank)]; };
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    if (aborted_) throw abandoned(where());
    const cudaError_t e = cudaStreamQuery(r.stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) check_cuda(e, "cudaStreamQuery", where());
    ncclResult_t async = ncclSuccess;
    bool gone = false;
    {
      // abort(), run by another rank's timeout, frees the communicators under this lock: r.comm
      // may be gone (null) between the check above and this call.
      std::lock_guard lock(init_mutex_);
      gone = aborted_ || !r.comm;
      if (!gone && ncclCommGetAsyncError(r.comm, &async) != ncclSuccess) async = ncclInternalError;
    }
    if (gone) throw abandoned(where());
    if (async != ncclSuccess && async != ncclInProgress) throw Error(where() + " failed: " + ncclGetErrorString(async));
    if (std::chrono::steady_clock::now() > deadline) {
      const std::string why = where() + " timed out after " + std::to_string(timeout_.count()) + " ms: a peer GPU did not join";
      abort(why);
      throw TimeoutError(why);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void NcclCommunicator::all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire) {
  // NCCL reduces in the buffer's own type: the bfloat16 wire of the host communicators is a
  // bandwidth saving over slow links that NVLink does not need.
  Rank& r = ready(rank, "all_reduce");
  check_nccl(ncclAllReduce(data, data, count, nccl_type(dtype, "all_reduce"), op == ReduceOp::Mean ? ncclAvg : ncclSum, r.comm, r.stream),
             "ncclAllReduce", devices_[static_cast<std::size_t>(rank)]);
  finish(rank, "all_reduce");
  bytes_moved_ += 2 * count * dtype_size(dtype) * static_cast<std::size_t>(size() - 1) / static_cast<std::size_t>(size());
  ++collectives_;
}

void NcclCommunicator::all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) {
  Rank& r = ready(rank, "all_gather");
  check_nccl(ncclAllGather(in, out, count, nccl_type(dtype, "all_gather"), r.comm, r.stream), "ncclAllGather", devices_[static_cast<std::size_t>(rank)]);
  finish(rank, "all_gather");
  bytes_moved_ += count * dtype_size(dtype) * static_cast<std::size_t>(size() - 1);
  ++collectives_;
}

void NcclCommunicator::reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) {
  Rank& r = ready(rank, "reduce_scatter");
  check_nccl(ncclReduceScatter(in, out, count, nccl_type(dtype, "reduce_scatter"), op == ReduceOp::Mean ? ncclAvg : ncclSum, r.comm, r.stream),
             "ncclReduceScatter", devices_[static_cast<std::size_t>(rank)]);
  finish(rank, "reduce_scatter");
  bytes_moved_ += count * dtype_size(dtype) * static_cast<std::size_t>(size() - 1);
  ++collectives_;
}

void NcclCommunicator::broadcast(int rank, void* data, std::size_t bytes, int root) {
  Rank& r = ready(rank, "broadcast");
  check_nccl(ncclBroadcast(data, data, bytes, ncclChar, root, r.comm, r.stream), "ncclBroadcast", devices_[static_cast<std::size_t>(rank)]);
  finish(rank, "broadcast");
  ++collectives_;
}

// The copies run on the rank's own stream and are waited for: a cudaMemcpy from pageable memory
// to the device may return before the data has landed, and the compute stream (non-blocking) does
// not wait for the legacy stream cudaMemcpy uses, so a kernel after recv could read stale data.
void NcclCommunicator::send(int rank, int peer, const void* data, std::size_t bytes, int tag) {
  Rank& r = ready(rank, "send");
  const std::string& where = devices_[static_cast<std::size_t>(rank)];  // no string built per call
  r.host.resize(bytes);
  check_cuda(cudaMemcpyAsync(r.host.data(), data, bytes, cudaMemcpyDeviceToHost, r.stream), "cudaMemcpyAsync", where);
  check_cuda(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize", where);
  mailboxes_.send(rank, peer, r.host.data(), bytes, tag);
  bytes_moved_ += bytes;
}

void NcclCommunicator::recv(int rank, int peer, void* data, std::size_t bytes, int tag) {
  Rank& r = ready(rank, "recv");
  const std::string& where = devices_[static_cast<std::size_t>(rank)];
  r.host.resize(bytes);
  mailboxes_.recv(rank, peer, r.host.data(), bytes, tag);
  check_cuda(cudaMemcpyAsync(data, r.host.data(), bytes, cudaMemcpyHostToDevice, r.stream), "cudaMemcpyAsync", where);
  check_cuda(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize", where);
}

void NcclCommunicator::barrier(int rank) { mailboxes_.barrier(rank); }

void NcclCommunicator::abort(const std::string& reason) {
  {
    std::lock_guard lock(init_mutex_);
    if (aborted_) return;
    abort_reason_ = reason;
    aborted_ = true;
    // Unblocks the ranks whose collective waits for a peer that will not come.
    for (auto& r : ranks_)
      if (r && r->comm) ncclCommAbort(r->comm), r->comm = nullptr;
  }
  mailboxes_.abort(reason);
}

Aborted NcclCommunicator::abandoned(const std::string& where) {
  std::lock_guard lock(init_mutex_);
  return Aborted(where + " abandoned: " + abort_reason_);
}

void NcclCommunicator::reset() {
  std::lock_guard lock(init_mutex_);
  if (aborted_) {
    // Aborted communicators cannot be used again: the next call makes new ones.
    for (auto& r : ranks_)
      if (r && r->stream) cudaStreamDestroy(r->stream);
    ranks_.clear();
    init_error_.clear();
  }
  mailboxes_.reset();
  aborted_ = false;
}

CommStats NcclCommunicator::stats() const { return {bytes_moved_.load(), collectives_.load()}; }

std::shared_ptr<Communicator> NcclCommunicator::subgroup(const std::vector<int64_t>& ranks) const {
  std::vector<std::string> names;
  for (int64_t r : ranks) names.push_back(devices_.at(static_cast<std::size_t>(r)));
  auto group = std::make_shared<NcclCommunicator>(names);
  group->set_timeout(timeout_);
  return group;
}

}  // namespace tandem::comm
