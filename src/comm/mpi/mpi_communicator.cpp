#include "comm/mpi/mpi_communicator.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <thread>

#include "comm/bf16.h"
#include "tandem/errors.h"

namespace tandem::comm {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int kProbe = 1, kReply = 2;  // tags of the control traffic
// The largest piece one MPI call moves: counts are ints.
constexpr std::size_t kPiece = std::size_t{1} << 30;

int mod(int a, int k) { return ((a % k) + k) % k; }
std::size_t chunk_begin(std::size_t count, int k, int c) { return count * static_cast<std::size_t>(c) / static_cast<std::size_t>(k); }

MPI_Comm duplicate(MPI_Comm comm) {
  MPI_Comm copy;
  MPI_Comm_dup(comm, &copy);
  // Errors come back as codes, so that a lost peer is an exception naming it, not an abort.
  MPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN);
  return copy;
}

template <class T>
void scale(T* data, std::size_t count, int k) {
  for (std::size_t i = 0; i < count; ++i) data[i] /= static_cast<T>(k);
}
}  // namespace

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

struct MpiCommunicator::Transfer {
  MPI_Request request = MPI_REQUEST_NULL;
  int peer = 0;
  bool receive = false;
};

MpiCommunicator::MpiCommunicator(MPI_Comm comm)
    : data_(duplicate(comm)), p2p_(duplicate(comm)), control_(duplicate(comm)), mail_comm_(duplicate(comm)) {
  MPI_Comm_rank(data_, &rank_);
  MPI_Comm_size(data_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || broken_) return;  // a broken communicator's requests may still be posted
  for (Reply& r : replies_) MPI_Wait(&r.request, MPI_STATUS_IGNORE);
  for (Posted& p : posted_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
  for (MPI_Comm* c : {&data_, &p2p_, &control_, &mail_comm_}) MPI_Comm_free(c);
}

void MpiCommunicator::begin(int rank, const char* what) {
  if (rank != rank_) throw Error(std::string("internal: ") + what + " for worker " + std::to_string(rank) + " called on worker " + std::to_string(rank_));
  if (broken_) throw Error(std::string(what) + " on " + worker(rank_) + ": the communication between workers was broken earlier (" + broken_reason_ +
                           "); restart all workers (BackupAndRestore continues the training)");
  if (aborted_) throw Aborted(std::string(what) + " on " + worker(rank_) + " abandoned: " + abort_reason());
  current_ = what;
  ++sequence_;
}

void MpiCommunicator::fail(const std::string& message) {
  broken_reason_ = message;
  broken_ = true;
  throw Error(message);
}

void MpiCommunicator::exchange(const void* out, std::size_t out_bytes, void* in, std::size_t in_bytes) {
  const int next = mod(rank_ + 1, size_), prev = mod(rank_ - 1, size_);
  std::vector<Transfer> transfers;
  for (std::size_t at = 0; at < in_bytes; at += kPiece) {
    Transfer t{MPI_REQUEST_NULL, prev, true};
    const int n = static_cast<int>(std::min(kPiece, in_bytes - at));
    if (int rc = MPI_Irecv(static_cast<std::byte*>(in) + at, n, MPI_BYTE, prev, 0, data_, &t.request); rc != MPI_SUCCESS)
      fail(std::string(current_) + " on " + worker(rank_) + ": cannot receive from " + worker(prev) + ": " + mpi_error(rc));
    transfers.push_back(t);
  }
  for (std::size_t at = 0; at < out_bytes; at += kPiece) {
    Transfer t{MPI_REQUEST_NULL, next, false};
    const int n = static_cast<int>(std::min(kPiece, out_bytes - at));
    if (int rc = MPI_Isend(static_cast<const std::byte*>(out) + at, n, MPI_BYTE, next, 0, data_, &t.request); rc != MPI_SUCCESS)
      fail(std::string(current_) + " on " + worker(rank_) + ": cannot send to " + worker(next) + ": " + mpi_error(rc));
    transfers.push_back(t);
  }
  wait(transfers);
  std::lock_guard lock(stats_mutex_);
  stats_.bytes_moved += in_bytes;
}

void MpiCommunicator::wait(std::vector<Transfer>& transfers) {
  const auto deadline = Clock::now() + timeout_;
  // Spin briefly (a ring step on a fast link is microseconds), then sleep between polls so that
  // a waiting worker does not take a core from the compute threads beside it.
  auto pause = std::chrono::microseconds(0);
  for (int polls = 0;; ++polls) {
    bool done = true;
    for (Transfer& t : transfers) {
      if (t.request == MPI_REQUEST_NULL) continue;
      int flag = 0;
      MPI_Status status;
      if (int rc = MPI_Test(&t.request, &flag, &status); rc != MPI_SUCCESS)
        fail(std::string(current_) + " on " + worker(rank_) + " lost " + worker(t.peer) + ": " + mpi_error(rc));
      if (!flag) done = false;
    }
    if (done) return;
    if (aborted_) {
      broken_reason_ = "abandoned: " + abort_reason();
      broken_ = true;
      throw Aborted(std::string(current_) + " on " + worker(rank_) + " " + broken_reason_);
    }
    answer_probes();
    if (Clock::now() > deadline) {
      std::vector<int> peers;
      for (const Transfer& t : transfers)
        if (t.request != MPI_REQUEST_NULL && t.receive) peers.push_back(t.peer);
      timed_out(peers);
    }
    if (polls > 200) pause = std::min(std::chrono::microseconds(200), pause + std::chrono::microseconds(10));
    if (pause.count()) std::this_thread::sleep_for(pause);
  }
}

// Another worker timed out and asks where this one is: the number of the call it is in.
void MpiCommunicator::answer_probes() {
  while (!replies_.empty()) {
    int flag = 0;
    MPI_Test(&replies_.front().request, &flag, MPI_STATUS_IGNORE);
    if (!flag) break;
    replies_.pop_front();
  }
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kProbe, control_, &flag, &status) != MPI_SUCCESS || !flag) return;
    uint64_t theirs = 0;
    MPI_Recv(&theirs, 1, MPI_UINT64_T, status.MPI_SOURCE, kProbe, control_, MPI_STATUS_IGNORE);
    Reply& r = replies_.emplace_back();
    r.words[0] = sequence_;
    r.words[1] = 0;
    MPI_Isend(r.words, 2, MPI_UINT64_T, status.MPI_SOURCE, kReply, control_, &r.request);
  }
}

void MpiCommunicator::timed_out(const std::vector<int>& peers) {
  // Ask every other worker which call it is in; those that stay silent are gone or stopped.
  // Workers waiting in a call answer at once, since their waits poll for these questions.
  const auto window = std::clamp(timeout_ / 4, std::chrono::milliseconds(1000), std::chrono::milliseconds(10000));
  probe_word_ = sequence_;  // a member: the sends below are never waited for
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request request;
    if (MPI_Isend(&probe_word_, 1, MPI_UINT64_T, r, kProbe, control_, &request) == MPI_SUCCESS) MPI_Request_free(&request);
  }
  std::map<int, uint64_t> answers;
  for (const auto until = Clock::now() + window; Clock::now() < until && static_cast<int>(answers.size()) < size_ - 1;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kReply, control_, &flag, &status) == MPI_SUCCESS && flag) {
      uint64_t words[2];
      MPI_Recv(words, 2, MPI_UINT64_T, status.MPI_SOURCE, kReply, control_, MPI_STATUS_IGNORE);
      answers[status.MPI_SOURCE] = words[0];
      continue;
    }
    answer_probes();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::string waited, silent, elsewhere;
  for (int p : peers) waited += (waited.empty() ? "" : ", ") + worker(p);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const auto it = answers.find(r);
    if (it == answers.end()) silent += (silent.empty() ? "" : ", ") + worker(r);
    else if (it->second != sequence_)
      elsewhere.append(" ").append(worker(r)).append(" is in call #").append(std::to_string(it->second)).append(" (this worker in #")
          .append(std::to_string(sequence_)).append("): the workers are not running the same program.");
  }
  std::string message = std::string(current_) + " on " + worker(rank_) + " timed out after " + std::to_string(timeout_.count()) + " ms waiting for " +
                        (waited.empty() ? "its peers" : waited) + ".";
  if (!silent.empty()) message += " No answer from " + silent + ": the process is gone or stopped.";
  message += elsewhere;
  broken_reason_ = message;
  broken_ = true;
  throw TimeoutError(message + " The job cannot continue: restart all workers (BackupAndRestore continues the training).");
}

// After step s of k − 1, rank r holds the sum over ranks r − s − 1 … r of chunk (r − s − 2):
// at the end, rank r owns chunk r, summed in the same order on every run.
template <class T>
void MpiCommunicator::reduce_scatter_ring(T* data, const std::vector<std::size_t>& bounds) {
  for (int s = 0; s < size_ - 1; ++s) {
    const int out = mod(rank_ - s - 1, size_), in = mod(rank_ - s - 2, size_);
    const std::size_t n_in = bounds[static_cast<std::size_t>(in) + 1] - bounds[static_cast<std::size_t>(in)];
    if (scratch_.size() < n_in * sizeof(T)) scratch_.resize(n_in * sizeof(T));
    T* from = reinterpret_cast<T*>(scratch_.data());
    exchange(data + bounds[static_cast<std::size_t>(out)], (bounds[static_cast<std::size_t>(out) + 1] - bounds[static_cast<std::size_t>(out)]) * sizeof(T), from,
             n_in * sizeof(T));
    T* to = data + bounds[static_cast<std::size_t>(in)];
    for (std::size_t i = 0; i < n_in; ++i) to[i] += from[i];
  }
}

// Rank r starts owning chunk r; after k − 1 steps everyone has every chunk.
template <class T>
void MpiCommunicator::all_gather_ring(T* data, const std::vector<std::size_t>& bounds) {
  for (int s = 0; s < size_ - 1; ++s) {
    const int out = mod(rank_ - s, size_), in = mod(rank_ - s - 1, size_);
    const auto u = static_cast<std::size_t>(out), v = static_cast<std::size_t>(in);
    exchange(data + bounds[u], (bounds[u + 1] - bounds[u]) * sizeof(T), data + bounds[v], (bounds[v + 1] - bounds[v]) * sizeof(T));
  }
}

void MpiCommunicator::all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire) {
  std::lock_guard lock(mutex_);
  begin(rank, "all_reduce");
  if (dtype != DType::F32 && dtype != DType::F64) throw ValueError(std::string("all_reduce: expected float32 or float64 data, got ") + dtype_name(dtype));
  if (size_ > 1 && wire == Wire::BFloat16 && dtype == DType::F32) return all_reduce_bf16(static_cast<float*>(data), count, op);
  std::vector<std::size_t> bounds;
  for (int c = 0; c <= size_; ++c) bounds.push_back(chunk_begin(count, size_, c));
  auto ring = [&](auto* d) {
    reduce_scatter_ring(d, bounds);
    all_gather_ring(d, bounds);
    if (op == ReduceOp::Mean) scale(d, count, size_);
  };
  if (dtype == DType::F32) ring(static_cast<float*>(data));
  else ring(static_cast<double*>(data));
  std::lock_guard stats(stats_mutex_);
  ++stats_.collectives;
}

// The same ring with bfloat16 on the wire: each partial sum is rounded before it travels and
// added in float32 after; the owner rounds its finished chunk too, so all end with the same bits.
void MpiCommunicator::all_reduce_bf16(float* data, std::size_t count, ReduceOp op) {
  std::vector<std::size_t> b;
  for (int c = 0; c <= size_; ++c) b.push_back(chunk_begin(count, size_, c));
  if (wire_out_.size() < count) wire_out_.resize(count), wire_in_.resize(count);
  for (int s = 0; s < size_ - 1; ++s) {
    const auto out = static_cast<std::size_t>(mod(rank_ - s - 1, size_)), in = static_cast<std::size_t>(mod(rank_ - s - 2, size_));
    for (std::size_t i = b[out]; i < b[out + 1]; ++i) wire_out_[i] = to_bf16(data[i]);
    exchange(wire_out_.data() + b[out], (b[out + 1] - b[out]) * 2, wire_in_.data() + b[in], (b[in + 1] - b[in]) * 2);
    for (std::size_t i = b[in]; i < b[in + 1]; ++i) data[i] += from_bf16(wire_in_[i]);
  }
  const auto mine = static_cast<std::size_t>(rank_);
  for (std::size_t i = b[mine]; i < b[mine + 1]; ++i) wire_out_[i] = to_bf16(data[i]);
  all_gather_ring(wire_out_.data(), b);
  const float k = op == ReduceOp::Mean ? static_cast<float>(size_) : 1.0f;
  for (std::size_t i = 0; i < count; ++i) data[i] = from_bf16(wire_out_[i]) / k;
  std::lock_guard stats(stats_mutex_);
  ++stats_.collectives;
}

void MpiCommunicator::all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) {
  std::lock_guard lock(mutex_);
  begin(rank, "all_gather");
  const std::size_t bytes = count * dtype_size(dtype);
  std::byte* o = static_cast<std::byte*>(out);
  std::memmove(o + bytes * static_cast<std::size_t>(rank_), in, bytes);
  std::vector<std::size_t> bounds;
  for (int c = 0; c <= size_; ++c) bounds.push_back(bytes * static_cast<std::size_t>(c));
  all_gather_ring(o, bounds);
}

void MpiCommunicator::reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) {
  std::lock_guard lock(mutex_);
  begin(rank, "reduce_scatter");
  if (dtype != DType::F32 && dtype != DType::F64) throw ValueError(std::string("reduce_scatter: expected float32 or float64 data, got ") + dtype_name(dtype));
  std::vector<std::size_t> bounds;
  for (int c = 0; c <= size_; ++c) bounds.push_back(count * static_cast<std::size_t>(c));
  auto ring = [&](auto* o) {
    using T = std::remove_pointer_t<decltype(o)>;
    std::vector<T> all(static_cast<const T*>(in), static_cast<const T*>(in) + count * static_cast<std::size_t>(size_));
    reduce_scatter_ring(all.data(), bounds);
    std::copy_n(all.data() + bounds[static_cast<std::size_t>(rank_)], count, o);
    if (op == ReduceOp::Mean) scale(o, count, size_);
  };
  if (dtype == DType::F32) ring(static_cast<float*>(out));
  else ring(static_cast<double*>(out));
}

void MpiCommunicator::broadcast(int rank, void* data, std::size_t bytes, int root) {
  std::lock_guard lock(mutex_);
  begin(rank, "broadcast");
  if (root < 0 || root >= size_) throw ValueError("broadcast: root " + std::to_string(root) + " outside [0, " + std::to_string(size_) + ")");
  std::vector<Transfer> transfers;
  for (std::size_t at = 0; at < bytes; at += kPiece) {
    Transfer t{MPI_REQUEST_NULL, root, rank_ != root};
    const int n = static_cast<int>(std::min(kPiece, bytes - at));
    if (int rc = MPI_Ibcast(static_cast<std::byte*>(data) + at, n, MPI_BYTE, root, data_, &t.request); rc != MPI_SUCCESS)
      fail("broadcast on " + worker(rank_) + ": " + mpi_error(rc));
    transfers.push_back(t);
  }
  wait(transfers);
}

void MpiCommunicator::send(int rank, int peer, const void* data, std::size_t bytes, int tag) {
  std::lock_guard lock(mutex_);
  begin(rank, "send");
  if (peer < 0 || peer >= size_ || peer == rank_) throw ValueError("send: peer " + std::to_string(peer) + " is not another worker");
  if (bytes > kPiece) throw ValueError("send: at most " + std::to_string(kPiece) + " bytes per message, got " + std::to_string(bytes));
  std::vector<Transfer> transfers(1, Transfer{MPI_REQUEST_NULL, peer, false});
  if (int rc = MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, p2p_, &transfers[0].request); rc != MPI_SUCCESS)
    fail("send on " + worker(rank_) + " to " + worker(peer) + ": " + mpi_error(rc));
  wait(transfers);
}

void MpiCommunicator::recv(int rank, int peer, void* data, std::size_t bytes, int tag) {
  std::lock_guard lock(mutex_);
  begin(rank, "recv");
  if (peer < 0 || peer >= size_ || peer == rank_) throw ValueError("recv: peer " + std::to_string(peer) + " is not another worker");
  if (bytes > kPiece) throw ValueError("recv: at most " + std::to_string(kPiece) + " bytes per message, got " + std::to_string(bytes));
  std::vector<Transfer> transfers(1, Transfer{MPI_REQUEST_NULL, peer, true});
  if (int rc = MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, p2p_, &transfers[0].request); rc != MPI_SUCCESS)
    fail("recv on " + worker(rank_) + " from " + worker(peer) + ": " + mpi_error(rc));
  wait(transfers);
  std::lock_guard stats(stats_mutex_);
  stats_.bytes_moved += bytes;
}

void MpiCommunicator::barrier(int rank) {
  std::lock_guard lock(mutex_);
  begin(rank, "barrier");
  std::vector<Transfer> transfers(1, Transfer{MPI_REQUEST_NULL, mod(rank_ - 1, size_), true});
  if (int rc = MPI_Ibarrier(data_, &transfers[0].request); rc != MPI_SUCCESS) fail("barrier on " + worker(rank_) + ": " + mpi_error(rc));
  wait(transfers);
}

void MpiCommunicator::abort(const std::string& reason) {
  std::lock_guard lock(abort_mutex_);
  if (!aborted_) abort_reason_ = reason;
  aborted_ = true;
}

std::string MpiCommunicator::abort_reason() const {
  std::lock_guard lock(abort_mutex_);
  return abort_reason_;
}

void MpiCommunicator::reset() { aborted_ = false; }

CommStats MpiCommunicator::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

std::shared_ptr<Communicator> MpiCommunicator::subgroup(const std::vector<int64_t>& ranks) const {
  MPI_Group all, some;
  MPI_Comm_group(data_, &all);
  std::vector<int> members(ranks.begin(), ranks.end());
  MPI_Group_incl(all, static_cast<int>(members.size()), members.data(), &some);
  MPI_Comm comm;
  MPI_Comm_create_group(data_, some, 0, &comm);
  MPI_Group_free(&some);
  MPI_Group_free(&all);
  if (comm == MPI_COMM_NULL) throw Error("subgroup: worker " + std::to_string(rank_) + " is not among the ranks of the group");
  auto group = std::make_shared<MpiCommunicator>(comm);
  MPI_Comm_free(&comm);
  group->set_timeout(timeout_);
  return group;
}

}  // namespace tandem::comm
