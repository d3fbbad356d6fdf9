// The in-process communicator: ranks are threads of one process (virtual CPU devices) that read
// each other's buffers directly. All-reduce is a ring (reduce-scatter, then all-gather) over k
// chunks, like NCCL's and Horovod's: each rank moves 2(k−1)/k of the data, the bandwidth optimum,
// and every chunk is summed in a fixed rank order, so results are deterministic.
#pragma once

#include <condition_variable>
#include <deque>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/communicator.h"

namespace tandem::comm {

class InProcessCommunicator : public Communicator {
 public:
  explicit InProcessCommunicator(std::vector<std::string> device_names);
  int size() const override { return static_cast<int>(names_.size()); }
  std::string name() const override { return "in-process"; }

  void all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire = Wire::Native) override;
  void all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) override;
  void reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) override;
  void broadcast(int rank, void* data, std::size_t bytes, int root) override;
  std::shared_ptr<Communicator> subgroup(const std::vector<int64_t>& ranks) const override;
  void send(int rank, int peer, const void* data, std::size_t bytes, int tag = 0) override;
  void recv(int rank, int peer, void* data, std::size_t bytes, int tag = 0) override;
  void barrier(int rank) override;
  CommStats stats() const override;
  void abort(const std::string& reason) override;
  void reset() override;

 private:
  // Waits until every rank has reached the same point; throws naming who is missing on timeout.
  void sync(int rank, const char* what);
  template <class T>
  void ring_all_reduce(int rank, T* data, std::size_t count, ReduceOp op);
  void ring_all_reduce_bf16(int rank, float* data, std::size_t count, ReduceOp op);
  void check_rank(int rank, const char* what) const;
  void count_moved(int rank, std::size_t bytes);  // one rank's share of a collective's traffic

  std::vector<std::string> names_;
  std::vector<void*> slots_;                 // each rank's buffer in the current collective
  std::vector<std::vector<uint16_t>> wire_;  // each rank's bfloat16 staging buffer

  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<uint64_t> rank_generation_;    // to name the missing ranks in a timeout
  bool aborted_ = false;
  std::string abort_reason_;

  // Messages from one rank to another, in order. A send copies its data into a message and
  // returns, so two stages can each send before they receive (a pipeline's steady state); the
  // buffers are kept for reuse, so a step allocates only the first time.
  struct Mailbox {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::pair<int, std::vector<std::byte>>> messages;  // (tag, bytes)
    std::vector<std::vector<std::byte>> spare;
    bool aborted = false;
  };
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;  // [from * size + to]

  mutable std::mutex stats_mutex_;
  CommStats stats_;
};

}  // namespace tandem::comm
