// MpiCommunicator's mailbox: every message between devices of different workers is one MPI
// message on a communicator of its own, the key in front of the bytes. Whichever thread polls
// first moves every arrived message into the mailbox, filed by sender and key; a thread waiting
// for its message holds MPI only while it polls, so the worker's other devices keep sending and
// receiving (MPI is initialised for serialised calls: one thread at a time, any thread).
#include <chrono>
#include <cstring>
#include <thread>

#include "comm/mpi/mpi_communicator.h"
#include "tandem/errors.h"

namespace tandem::comm {

namespace {
using Clock = std::chrono::steady_clock;
constexpr std::size_t kHeader = 4 * sizeof(int64_t);
constexpr std::size_t kLargest = (std::size_t{1} << 31) - 1 - kHeader;  // MPI counts are ints

void write_key(std::byte* at, const MessageKey& k) {
  const int64_t words[4] = {static_cast<int64_t>(k.channel), k.from, k.to, k.tag};
  std::memcpy(at, words, kHeader);
}

MessageKey read_key(const std::byte* at) {
  int64_t words[4];
  std::memcpy(words, at, kHeader);
  return {static_cast<uint64_t>(words[0]), words[1], words[2], words[3]};
}
}  // namespace

void MpiCommunicator::usable(const char* what) {
  if (broken_) throw Error(std::string(what) + " on " + worker(rank_) + ": the communication between workers was broken earlier (" + broken_reason_ +
                           "); restart all workers (BackupAndRestore continues the training)");
  if (aborted_) throw Aborted(std::string(what) + " on " + worker(rank_) + " abandoned: " + abort_reason());
}

void MpiCommunicator::collect_mail() {
  for (auto it = posted_.begin(); it != posted_.end();) {
    int flag = 0;
    if (int rc = MPI_Test(&it->request, &flag, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) fail("send on " + worker(rank_) + ": " + mpi_error(rc));
    it = flag ? posted_.erase(it) : std::next(it);
  }
  for (;;) {
    int flag = 0;
    MPI_Message message;
    MPI_Status status;
    if (int rc = MPI_Improbe(MPI_ANY_SOURCE, 0, mail_comm_, &flag, &message, &status); rc != MPI_SUCCESS)
      fail("recv on " + worker(rank_) + ": " + mpi_error(rc));
    if (!flag) return;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    std::vector<std::byte> bytes(static_cast<std::size_t>(count));
    if (int rc = MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
      fail("recv on " + worker(rank_) + " from " + worker(status.MPI_SOURCE) + ": " + mpi_error(rc));
    if (bytes.size() < kHeader) fail("recv on " + worker(rank_) + ": a message of " + std::to_string(count) + " bytes without its key");
    const MessageKey key = read_key(bytes.data());
    bytes.erase(bytes.begin(), bytes.begin() + kHeader);
    mail_[{status.MPI_SOURCE, key}].push_back(std::move(bytes));
  }
}

void MpiCommunicator::post(int to, const MessageKey& key, const void* data, std::size_t bytes) {
  if (to < 0 || to >= size_ || to == rank_) throw Error("internal: send to worker " + std::to_string(to) + " from " + worker(rank_));
  if (bytes > kLargest) throw ValueError("send: at most " + std::to_string(kLargest) + " bytes per message, got " + std::to_string(bytes));
  std::lock_guard lock(mutex_);
  usable("send");
  Posted& p = posted_.emplace_back();
  p.bytes.resize(kHeader + bytes);
  write_key(p.bytes.data(), key);
  if (bytes) std::memcpy(p.bytes.data() + kHeader, data, bytes);
  if (int rc = MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, to, 0, mail_comm_, &p.request); rc != MPI_SUCCESS)
    fail("send on " + worker(rank_) + " to " + worker(to) + ": " + mpi_error(rc));
  collect_mail();
}

void MpiCommunicator::take(int from, const MessageKey& key, void* data, std::size_t bytes) {
  if (from < 0 || from >= size_ || from == rank_) throw Error("internal: recv from worker " + std::to_string(from) + " on " + worker(rank_));
  const auto deadline = Clock::now() + timeout_;
  auto pause = std::chrono::microseconds(0);
  for (int polls = 0;; ++polls) {
    {
      std::lock_guard lock(mutex_);
      usable("recv");
      collect_mail();
      if (auto it = mail_.find({from, key}); it != mail_.end()) {
        const std::vector<std::byte> message = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) mail_.erase(it);
        if (message.size() != bytes)
          throw Error("internal: recv on " + worker(rank_) + ": " + std::to_string(message.size()) + " bytes from " + worker(from) + ", expected " +
                      std::to_string(bytes));
        if (bytes) std::memcpy(data, message.data(), bytes);
        std::lock_guard stats(stats_mutex_);
        stats_.bytes_moved += bytes;
        return;
      }
      answer_probes();
      if (Clock::now() > deadline) {
        current_ = "recv";
        timed_out({from});
      }
    }
    // As wait(): spin briefly, then sleep between polls, leaving the cores to the compute threads.
    if (polls > 200) pause = std::min(std::chrono::microseconds(200), pause + std::chrono::microseconds(10));
    if (pause.count()) std::this_thread::sleep_for(pause);
    else std::this_thread::yield();
  }
}

}  // namespace tandem::comm
