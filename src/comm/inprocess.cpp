#include "comm/inprocess.h"

#include <Eigen/Core>


#include <algorithm>

#include <cstring>

#include "comm/bf16.h"
#include "tandem/errors.h"

namespace tandem::comm {

namespace {
std::size_t chunk_begin(std::size_t count, int k, int c) { return count * static_cast<std::size_t>(c) / static_cast<std::size_t>(k); }
int mod(int a, int k) { return ((a % k) + k) % k; }
}  // namespace

InProcessCommunicator::InProcessCommunicator(std::vector<std::string> names)
    : names_(std::move(names)), slots_(names_.size()), wire_(names_.size()), rank_generation_(names_.size(), 0) {
  if (names_.empty()) throw ValueError("communicator: needs at least one device");
  for (std::size_t i = 0; i < names_.size() * names_.size(); ++i) mailboxes_.push_back(std::make_unique<Mailbox>());
}

void InProcessCommunicator::check_rank(int rank, const char* what) const {
  if (rank < 0 || rank >= size())
    throw ValueError(std::string(what) + ": rank " + std::to_string(rank) + " outside [0, " + std::to_string(size()) + ")");
}

void InProcessCommunicator::sync(int rank, const char* what) {
  std::unique_lock lock(mutex_);
  auto aborted = [&] {
    return Aborted(std::string(what) + " on " + names_[static_cast<std::size_t>(rank)] + " abandoned: " + abort_reason_);
  };
  if (aborted_) throw aborted();
  const uint64_t gen = generation_;
  rank_generation_[static_cast<std::size_t>(rank)] = gen + 1;
  if (++arrived_ == size()) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  const bool done = cv_.wait_for(lock, timeout_, [&] { return generation_ != gen || aborted_; });
  if (aborted_) throw aborted();
  if (!done) {
    std::string missing;
    for (int r = 0; r < size(); ++r)
      if (rank_generation_[static_cast<std::size_t>(r)] != gen + 1) missing += (missing.empty() ? "" : ", ") + names_[static_cast<std::size_t>(r)];
    throw Error(std::string(what) + " on " + names_[static_cast<std::size_t>(rank)] + " timed out after " +
                std::to_string(timeout_.count()) + " ms waiting for " + missing);
  }
}

template <class T>
void InProcessCommunicator::ring_all_reduce(int rank, T* data, std::size_t count, ReduceOp op) {
  const int k = size();
  const int prev = mod(rank - 1, k);
  slots_[static_cast<std::size_t>(rank)] = data;
  sync(rank, "all_reduce");
  const T* from = static_cast<const T*>(slots_[static_cast<std::size_t>(prev)]);
  std::size_t moved = 0;
  for (int s = 0; s < k - 1; ++s) {  // reduce-scatter: add the predecessor's partial sum of one chunk
    const int c = mod(rank - 1 - s, k);
    const std::size_t b = chunk_begin(count, k, c), e = chunk_begin(count, k, c + 1);
    for (std::size_t i = b; i < e; ++i) data[i] += from[i];
    moved += (e - b) * sizeof(T);
    sync(rank, "all_reduce");
  }
  for (int s = 0; s < k - 1; ++s) {  // all-gather: copy the finished chunk the predecessor holds
    const int c = mod(rank - s, k);
    const std::size_t b = chunk_begin(count, k, c), e = chunk_begin(count, k, c + 1);
    std::memcpy(data + b, from + b, (e - b) * sizeof(T));
    moved += (e - b) * sizeof(T);
    sync(rank, "all_reduce");
  }
  if (op == ReduceOp::Mean)
    for (std::size_t i = 0; i < count; ++i) data[i] /= static_cast<T>(k);
  std::lock_guard lock(stats_mutex_);
  stats_.bytes_moved += moved;
  if (rank == 0) ++stats_.collectives;
}

void InProcessCommunicator::ring_all_reduce_bf16(int rank, float* data, std::size_t count, ReduceOp op) {
  // The same ring, but what a rank reads from its predecessor is bfloat16: partial sums are
  // rounded to bfloat16 before they "travel" and added in float32 after.
  const int k = size();
  const int prev = mod(rank - 1, k);
  std::vector<uint16_t>& mine = wire_[static_cast<std::size_t>(rank)];
  if (mine.size() < count) mine.resize(count);  // grows once to the largest bucket
  for (std::size_t i = 0; i < count; ++i) mine[i] = to_bf16(data[i]);
  sync(rank, "all_reduce");
  const uint16_t* from = wire_[static_cast<std::size_t>(prev)].data();
  std::size_t moved = 0;
  for (int s = 0; s < k - 1; ++s) {
    const int c = mod(rank - 1 - s, k);
    const std::size_t b = chunk_begin(count, k, c), e = chunk_begin(count, k, c + 1);
    for (std::size_t i = b; i < e; ++i) mine[i] = to_bf16(data[i] += from_bf16(from[i]));
    moved += (e - b) * 2;
    sync(rank, "all_reduce");
  }
  for (int s = 0; s < k - 1; ++s) {
    const int c = mod(rank - s, k);
    const std::size_t b = chunk_begin(count, k, c), e = chunk_begin(count, k, c + 1);
    std::memcpy(mine.data() + b, from + b, (e - b) * 2);
    moved += (e - b) * 2;
    sync(rank, "all_reduce");
  }
  // Every rank ends with the same bfloat16-rounded sums.
  const float scale = op == ReduceOp::Mean ? 1.0f / static_cast<float>(k) : 1.0f;
  for (std::size_t i = 0; i < count; ++i) data[i] = from_bf16(mine[i]) * scale;
  sync(rank, "all_reduce");  // nobody may overwrite its staging buffer while a successor reads it
  std::lock_guard lock(stats_mutex_);
  stats_.bytes_moved += moved;
  if (rank == 0) ++stats_.collectives;
}

void InProcessCommunicator::all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire) {
  check_rank(rank, "all_reduce");
  if (size() == 1) return;
  if (wire == Wire::BFloat16 && dtype == DType::F32) return ring_all_reduce_bf16(rank, static_cast<float*>(data), count, op);
  if (dtype == DType::F32) return ring_all_reduce(rank, static_cast<float*>(data), count, op);
  if (dtype == DType::F64) return ring_all_reduce(rank, static_cast<double*>(data), count, op);
  if (dtype == DType::BF16) return ring_all_reduce(rank, static_cast<Eigen::bfloat16*>(data), count, op);
  if (dtype == DType::F16) return ring_all_reduce(rank, static_cast<Eigen::half*>(data), count, op);
  throw ValueError(std::string("all_reduce: expected float data, got ") + dtype_name(dtype));
}

void InProcessCommunicator::all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) {
  check_rank(rank, "all_gather");
  const std::size_t bytes = count * dtype_size(dtype);
  slots_[static_cast<std::size_t>(rank)] = const_cast<void*>(in);
  sync(rank, "all_gather");
  for (int r = 0; r < size(); ++r)
    std::memcpy(static_cast<std::byte*>(out) + bytes * static_cast<std::size_t>(r), slots_[static_cast<std::size_t>(r)], bytes);
  sync(rank, "all_gather");
  count_moved(rank, bytes * static_cast<std::size_t>(size() - 1));  // every other rank's block
}

void InProcessCommunicator::reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) {
  check_rank(rank, "reduce_scatter");
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::BF16 && dtype != DType::F16)
    throw ValueError(std::string("reduce_scatter: expected float data, got ") + dtype_name(dtype));
  slots_[static_cast<std::size_t>(rank)] = const_cast<void*>(in);
  sync(rank, "reduce_scatter");
  auto reduce = [&](auto* o) {
    using T = std::remove_pointer_t<decltype(o)>;
    using Sum = std::conditional_t<std::is_same_v<T, double>, double, float>;  // 16-bit values summed in float32, rounded once
    const std::size_t base = count * static_cast<std::size_t>(rank);
    for (std::size_t i = 0; i < count; ++i) {
      Sum s = 0;
      for (int r = 0; r < size(); ++r) s += static_cast<Sum>(static_cast<const T*>(slots_[static_cast<std::size_t>(r)])[base + i]);
      o[i] = static_cast<T>(op == ReduceOp::Mean ? s / static_cast<Sum>(size()) : s);
    }
  };
  if (dtype == DType::F32) reduce(static_cast<float*>(out));
  else if (dtype == DType::F64) reduce(static_cast<double*>(out));
  else if (dtype == DType::BF16) reduce(static_cast<Eigen::bfloat16*>(out));
  else reduce(static_cast<Eigen::half*>(out));
  sync(rank, "reduce_scatter");
  count_moved(rank, count * dtype_size(dtype) * static_cast<std::size_t>(size() - 1));  // its block from every other rank
}

void InProcessCommunicator::count_moved(int rank, std::size_t bytes) {
  std::lock_guard lock(stats_mutex_);
  stats_.bytes_moved += bytes;
  if (rank == 0) ++stats_.collectives;
}

void InProcessCommunicator::broadcast(int rank, void* data, std::size_t bytes, int root) {
  check_rank(rank, "broadcast");
  check_rank(root, "broadcast root");
  slots_[static_cast<std::size_t>(rank)] = data;
  sync(rank, "broadcast");
  if (rank != root) std::memcpy(data, slots_[static_cast<std::size_t>(root)], bytes);
  sync(rank, "broadcast");
}

void InProcessCommunicator::send(int rank, int peer, const void* data, std::size_t bytes, int tag) {
  check_rank(rank, "send");
  check_rank(peer, "send peer");
  Mailbox& box = *mailboxes_[static_cast<std::size_t>(rank * size() + peer)];
  std::lock_guard lock(box.mutex);
  if (box.aborted) throw Aborted("send from " + names_[static_cast<std::size_t>(rank)] + " abandoned: a device failed");
  std::vector<std::byte> message;
  if (!box.spare.empty()) {
    message = std::move(box.spare.back());
    box.spare.pop_back();
  }
  message.resize(bytes);
  std::memcpy(message.data(), data, bytes);
  box.messages.emplace_back(tag, std::move(message));
  box.cv.notify_all();
}

void InProcessCommunicator::recv(int rank, int peer, void* data, std::size_t bytes, int tag) {
  check_rank(rank, "recv");
  check_rank(peer, "recv peer");
  Mailbox& box = *mailboxes_[static_cast<std::size_t>(peer * size() + rank)];
  std::unique_lock lock(box.mutex);
  auto found = box.messages.end();
  auto arrived = [&] {
    found = std::find_if(box.messages.begin(), box.messages.end(), [&](const auto& m) { return m.first == tag; });
    return found != box.messages.end() || box.aborted;
  };
  if (!box.cv.wait_for(lock, timeout_, arrived))
    throw Error("recv on " + names_[static_cast<std::size_t>(rank)] + " from " + names_[static_cast<std::size_t>(peer)] +
                " (tag " + std::to_string(tag) + ") timed out after " + std::to_string(timeout_.count()) + " ms");
  if (box.aborted) throw Aborted("recv on " + names_[static_cast<std::size_t>(rank)] + " abandoned: a device failed");
  std::vector<std::byte> message = std::move(found->second);
  box.messages.erase(found);
  const std::size_t got = message.size();
  if (got == bytes) std::memcpy(data, message.data(), bytes);
  box.spare.push_back(std::move(message));
  if (got != bytes)
    throw Error("recv on " + names_[static_cast<std::size_t>(rank)] + ": expected " + std::to_string(bytes) + " bytes from " +
                names_[static_cast<std::size_t>(peer)] + ", got " + std::to_string(got));
  lock.unlock();
  std::lock_guard stats(stats_mutex_);
  stats_.bytes_moved += bytes;
}

void InProcessCommunicator::barrier(int rank) {
  check_rank(rank, "barrier");
  sync(rank, "barrier");
}

void InProcessCommunicator::abort(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (!aborted_) abort_reason_ = reason;
    aborted_ = true;
  }
  cv_.notify_all();
  for (auto& box : mailboxes_) {
    std::lock_guard lock(box->mutex);
    box->aborted = true;
    box->cv.notify_all();
  }
}

void InProcessCommunicator::reset() {
  {
    std::lock_guard lock(mutex_);
    aborted_ = false;
    abort_reason_.clear();
    arrived_ = 0;
    ++generation_;
    std::fill(rank_generation_.begin(), rank_generation_.end(), 0);
  }
  for (auto& box : mailboxes_) {
    std::lock_guard lock(box->mutex);
    box->aborted = false;
    for (auto& m : box->messages) box->spare.push_back(std::move(m.second));  // an abandoned step's
    box->messages.clear();
  }
}

std::shared_ptr<Communicator> InProcessCommunicator::subgroup(const std::vector<int64_t>& ranks) const {
  std::vector<std::string> names;
  for (int64_t r : ranks) {
    check_rank(static_cast<int>(r), "subgroup");
    names.push_back(names_[static_cast<std::size_t>(r)]);
  }
  auto group = std::make_shared<InProcessCommunicator>(names);
  group->set_timeout(timeout_);
  return group;
}

CommStats InProcessCommunicator::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

}  // namespace tandem::comm
