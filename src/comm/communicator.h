// Collective and point-to-point communication between the ranks (devices) of one strategy.
// Every call blocks its rank until the operation is complete on that rank, and raises a clear
// tandem::Error instead of hanging when a peer does not arrive within the timeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tandem/errors.h"
#include "tandem/tensor.h"

namespace tandem::comm {

enum class ReduceOp { Sum, Mean };

// Raised in every rank still waiting when another rank failed and the step was abandoned.
class Aborted : public Error {
 public:
  using Error::Error;
};
// What travels between ranks for a reduction: the buffer's own type, or bfloat16 (half the
// bytes of float32; every addition is still done in float32).
enum class Wire { Native, BFloat16 };

struct CommStats {
  std::size_t bytes_moved = 0;  // bytes read from peers, summed over ranks
  std::size_t collectives = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
  // Whether the calls take GPU memory (NCCL) rather than host memory. A GPU's communication
  // kernels hand a host communicator pinned host copies of their buffers.
  virtual bool takes_device_memory() const { return false; }

  // In place: data becomes the sum (or mean) over ranks. dtype F32 or F64.
  virtual void all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire = Wire::Native) = 0;
  // out (size()·count elements) = every rank's `in` (count elements), in rank order.
  virtual void all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) = 0;
  // out (count elements) = this rank's share of the reduction of `in` (size()·count elements).
  virtual void reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) = 0;
  virtual void broadcast(int rank, void* data, std::size_t bytes, int root) = 0;
  // send returns once `data` may be reused; it does not wait for the receiver, so two ranks may
  // both send before they receive. recv takes the oldest message from `peer` with its `tag`:
  // two programs may reach their transfers in different orders, the tags keep them apart.
  virtual void send(int rank, int peer, const void* data, std::size_t bytes, int tag = 0) = 0;
  virtual void recv(int rank, int peer, void* data, std::size_t bytes, int tag = 0) = 0;
  virtual void barrier(int rank) = 0;

  // After a rank failed: every waiting and later call throws Aborted until reset(). reset() may
  // only be called when no rank is inside a call.
  virtual void abort(const std::string& reason) = 0;
  virtual void reset() = 0;

  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  virtual CommStats stats() const = 0;
  // A communicator over `ranks` (ascending) of this one, for collectives within that group; made
  // once per group and shared by its members.
  virtual std::shared_ptr<Communicator> subgroup(const std::vector<int64_t>& ranks) const = 0;

 protected:
  std::chrono::milliseconds timeout_{std::chrono::seconds(60)};
};

}  // namespace tandem::comm
