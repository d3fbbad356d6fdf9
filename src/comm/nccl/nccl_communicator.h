// The communicator between the GPUs of one process: NCCL, one communicator per GPU made together
// (ncclCommInitAll) on first use, each rank's calls issued on that rank's own stream from its
// device's communication thread. Calls take device memory and return when the operation is
// complete on that rank; every wait is bounded by the timeout, after which the communicators are
// aborted (ncclCommAbort) and the call raises naming the operation and the rank.
//
// Point-to-point transfers are not NCCL's: ncclSend/ncclRecv match in issue order, while a
// pipeline's programs may reach their transfers in different orders (the tags of the interface).
// They go through pinned host memory and the in-process mailboxes instead.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/inprocess.h"

namespace tandem::comm {

class NcclCommunicator : public Communicator {
 public:
  // `devices`: "gpu:N" names of distinct physical GPUs, in rank order.
  explicit NcclCommunicator(std::vector<std::string> devices);
  ~NcclCommunicator() override;
  int size() const override { return static_cast<int>(devices_.size()); }
  std::string name() const override { return "NCCL"; }
  bool takes_device_memory() const override { return true; }

  void all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire = Wire::Native) override;
  void all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) override;
  void reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) override;
  void broadcast(int rank, void* data, std::size_t bytes, int root) override;
  void send(int rank, int peer, const void* data, std::size_t bytes, int tag = 0) override;
  void recv(int rank, int peer, void* data, std::size_t bytes, int tag = 0) override;
  void barrier(int rank) override;
  void abort(const std::string& reason) override;
  void reset() override;
  CommStats stats() const override;
  std::shared_ptr<Communicator> subgroup(const std::vector<int64_t>& ranks) const override;

 private:
  struct Rank;
  Rank& ready(int rank, const char* what);  // initialises every rank's communicator on first use
  // Waits for `rank`'s stream under the timeout; aborts everything when it runs out.
  void finish(int rank, const char* what);
  void destroy();
  Aborted abandoned(const std::string& where);  // the error of a call after abort()

  std::vector<std::string> devices_;
  std::vector<int> ordinals_;
  std::once_flag init_;
  std::mutex init_mutex_;
  std::string init_error_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;  // under init_mutex_
  InProcessCommunicator mailboxes_;  // send/recv over host memory
  std::atomic<std::size_t> bytes_moved_{0}, collectives_{0};
};

}  // namespace tandem::comm
