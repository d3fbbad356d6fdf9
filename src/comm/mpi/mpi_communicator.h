// The communicator between processes: one rank per MPI process. Collectives are rings over MPI's
// non-blocking point-to-point calls (reduce-scatter, then all-gather, like the in-process ring),
// so every chunk is summed in a fixed order and every worker ends with the same bits, whatever
// algorithm the MPI library would pick. Waiting is a poll with a deadline, which lets a waiting
// worker answer the others' "where are you?" and, on timeout, ask them the same: the error names
// the workers that did not answer.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/mailbox.h"

namespace tandem::comm {

// MPI's text for an error code.
std::string mpi_error(int code);

class MpiCommunicator final : public Communicator, public Mailbox {
 public:
  // Over the processes of `comm` (duplicated: its traffic never meets anyone else's).
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int size() const override { return size_; }
  std::string name() const override { return "MPI"; }
  void all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire = Wire::Native) override;
  void all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) override;
  void reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) override;
  void broadcast(int rank, void* data, std::size_t bytes, int root) override;
  void send(int rank, int peer, const void* data, std::size_t bytes, int tag = 0) override;
  void recv(int rank, int peer, void* data, std::size_t bytes, int tag = 0) override;
  void barrier(int rank) override;
  // MPI cannot take back a collective half done: after an abort (or a timeout, or a lost peer)
  // every call raises until the workers are restarted.
  void abort(const std::string& reason) override;
  void reset() override;
  CommStats stats() const override;
  std::shared_ptr<Communicator> subgroup(const std::vector<int64_t>& ranks) const override;
  // The devices' messages between workers (comm/mailbox.h; mpi_mailbox.cpp). Unlike the calls
  // above, a take waits without holding MPI, so the worker's other threads post and take meanwhile.
  void post(int worker, const MessageKey& key, const void* data, std::size_t bytes) override;
  void take(int worker, const MessageKey& key, void* data, std::size_t bytes) override;

  // True once a collective could not finish: the process must not wait for the others at exit.
  bool broken() const { return broken_; }

 private:
  struct Transfer;  // one posted send or receive, with its peer
  void begin(int rank, const char* what);
  // Posts the ring step's send to the next rank and receive from the previous one.
  void exchange(const void* out, std::size_t out_bytes, void* in, std::size_t in_bytes);
  void wait(std::vector<Transfer>& transfers);
  [[noreturn]] void timed_out(const std::vector<int>& peers);
  [[noreturn]] void fail(const std::string& message);
  void answer_probes();
  template <class T>
  void reduce_scatter_ring(T* data, const std::vector<std::size_t>& bounds);
  template <class T>
  void all_gather_ring(T* data, const std::vector<std::size_t>& bounds);
  void all_reduce_bf16(float* data, std::size_t count, ReduceOp op);
  std::string abort_reason() const;
  void usable(const char* what);  // raises once broken or aborted
  void collect_mail();  // arrived messages into mail_, finished posts out of posted_
  std::string worker(int r) const { return "worker " + std::to_string(r); }

  MPI_Comm data_ = MPI_COMM_NULL, p2p_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL, mail_comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::mutex mutex_;  // one call at a time: MPI is initialised for serialised use
  uint64_t sequence_ = 0;  // calls begun, compared with the peers' when one does not arrive
  const char* current_ = "";
  std::atomic<bool> aborted_{false};
  mutable std::mutex abort_mutex_;
  std::string abort_reason_;
  uint64_t probe_word_ = 0;
  std::atomic<bool> broken_{false};
  std::string broken_reason_;
  std::vector<std::byte> scratch_;
  std::vector<uint16_t> wire_out_, wire_in_;
  struct Reply {
    uint64_t words[2];
    MPI_Request request;
  };
  std::deque<Reply> replies_;  // answers to probes, kept until MPI has sent them
  struct Posted {
    std::vector<std::byte> bytes;  // the key, then the message: MPI reads it until the send completes
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::list<Posted> posted_;  // a list: a buffer MPI is reading never moves
  std::map<std::pair<int, MessageKey>, std::deque<std::vector<std::byte>>> mail_;  // by sender and key, oldest first
  mutable std::mutex stats_mutex_;
  CommStats stats_;
};

}  // namespace tandem::comm
