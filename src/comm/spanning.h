// The devices of several workers as one set of ranks, for strategies that place work on the
// devices of more than one process (a pipeline's stages, a model split, a mesh): every worker has
// the same number L of devices, rank r is device r % L of worker r / L. Transfers and collectives
// between devices of one worker stay in the process (`local`); those between workers go through
// the workers' mailbox, so that any number of a worker's devices communicate with other workers
// at once. A collective is summed within each worker, then the workers' partial results are
// exchanged and added in worker order — the same bits on every worker — and handed back to the
// worker's devices in the group.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/mailbox.h"

namespace tandem::comm {

class SpanningCommunicator final : public Communicator {
 public:
  // Over `members` (ascending global ranks; empty: all of them), with `local` over this
  // worker's L devices.
  SpanningCommunicator(std::shared_ptr<Communicator> local, std::shared_ptr<Mailbox> mail, int worker, int workers,
                       std::vector<int64_t> members = {});
  int size() const override { return static_cast<int>(members_.size()); }
  std::string name() const override { return local_->name() + " within workers, MPI between them"; }
  void all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire = Wire::Native) override;
  void all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) override;
  void reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) override;
  void broadcast(int rank, void* data, std::size_t bytes, int root) override;
  void send(int rank, int peer, const void* data, std::size_t bytes, int tag = 0) override;
  void recv(int rank, int peer, void* data, std::size_t bytes, int tag = 0) override;
  void barrier(int rank) override;
  void abort(const std::string& reason) override;
  void reset() override;
  CommStats stats() const override { return local_->stats(); }
  std::shared_ptr<Communicator> subgroup(const std::vector<int64_t>& ranks) const override;

 private:
  int64_t global(int rank) const { return members_.at(static_cast<std::size_t>(rank)); }
  int worker_of(int64_t global) const { return static_cast<int>(global / devices_per_worker_); }
  int here(int rank, const char* what) const;  // the rank's place among this worker's members
  // Between the first members of each worker: every worker's block (block_bytes[w], this
  // worker's at `blocks[me]`) ends up in `blocks` on every worker.
  void exchange_blocks(const std::vector<std::byte*>& blocks, const std::vector<std::size_t>& block_bytes);
  MessageKey step_key(int from, int to) const { return {channel_, from, to, 0}; }

  std::shared_ptr<Communicator> local_;  // this worker's devices
  std::shared_ptr<Communicator> mine_;   // this worker's members, in rank order
  std::shared_ptr<Mailbox> mail_;
  int worker_, workers_, devices_per_worker_;
  std::vector<int64_t> members_;
  std::vector<int> workers_in_group_;  // ascending: the workers with members
  std::vector<int> first_member_;      // per entry of workers_in_group_: its first member's rank
  std::vector<int> member_count_;      // per entry of workers_in_group_
  uint64_t channel_;                   // the group's messages' channel: a hash of its members
};

}  // namespace tandem::comm
