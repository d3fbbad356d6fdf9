// The ranks of several workers, each with the same number of devices: rank r is device r % L of
// worker r / L. A collective combines within the worker first (`local`, in-process), then between
// workers (`across`, one rank per worker, called by each worker's first device only), then hands
// the result to the worker's other devices — the hierarchy NCCL and Horovod use, so only one
// copy of every bucket crosses between processes.
#pragma once

#include <memory>

#include "comm/communicator.h"

namespace tandem::comm {

class TwoLevelCommunicator final : public Communicator {
 public:
  TwoLevelCommunicator(std::shared_ptr<Communicator> local, std::shared_ptr<Communicator> across, int worker);
  int size() const override { return local_->size() * across_->size(); }
  std::string name() const override { return local_->name() + " within workers, " + across_->name() + " between them"; }
  void all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire = Wire::Native) override;
  void all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) override;
  void reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) override;
  void broadcast(int rank, void* data, std::size_t bytes, int root) override;
  // Between devices of one worker only: no strategy sends between workers.
  void send(int rank, int peer, const void* data, std::size_t bytes, int tag = 0) override;
  void recv(int rank, int peer, void* data, std::size_t bytes, int tag = 0) override;
  void barrier(int rank) override;
  void abort(const std::string& reason) override;
  void reset() override;
  CommStats stats() const override;
  std::shared_ptr<Communicator> subgroup(const std::vector<int64_t>& ranks) const override;

 private:
  int local_rank(int rank, const char* what) const;  // raises for a rank of another worker
  int local_peer(int peer, const char* what) const;
  std::shared_ptr<Communicator> local_, across_;
  int worker_;
};

}  // namespace tandem::comm
