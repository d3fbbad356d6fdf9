#include "comm/spanning.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "comm/mean.h"
#include "tandem/errors.h"

namespace tandem::comm {

namespace {
// FNV-1a over the members: the same channel on every worker, a different one per group.
uint64_t channel_of(const std::vector<int64_t>& members) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t m : members)
    for (int b = 0; b < 8; ++b) h = (h ^ static_cast<uint64_t>((m >> (8 * b)) & 0xff)) * 1099511628211ull;
  return h | 1;  // never 0, the transfers' channel
}

template <class T>
void add(void* sum, const void* x, std::size_t count) {
  T* s = static_cast<T*>(sum);
  const T* v = static_cast<const T*>(x);
  for (std::size_t i = 0; i < count; ++i) s[i] += v[i];
}

}  // namespace

SpanningCommunicator::SpanningCommunicator(std::shared_ptr<Communicator> local, std::shared_ptr<Mailbox> mail, int worker, int workers,
                                           std::vector<int64_t> members)
    : local_(std::move(local)), mail_(std::move(mail)), worker_(worker), workers_(workers), devices_per_worker_(local_->size()), members_(std::move(members)) {
  if (members_.empty()) {
    members_.resize(static_cast<std::size_t>(workers_ * devices_per_worker_));
    std::iota(members_.begin(), members_.end(), int64_t{0});
  }
  std::vector<int64_t> here;
  for (std::size_t r = 0; r < members_.size(); ++r) {
    const int w = worker_of(members_[r]);
    if (workers_in_group_.empty() || workers_in_group_.back() != w) {
      workers_in_group_.push_back(w);
      first_member_.push_back(static_cast<int>(r));
      member_count_.push_back(0);
    }
    ++member_count_.back();
    if (w == worker_) here.push_back(members_[r] % devices_per_worker_);
  }
  if (static_cast<int>(here.size()) == devices_per_worker_) mine_ = local_;
  else if (!here.empty()) mine_ = local_->subgroup(here);
  channel_ = channel_of(members_);
  set_timeout(local_->timeout());
}

int SpanningCommunicator::here(int rank, const char* what) const {
  if (rank < 0 || rank >= size()) throw Error(std::string("internal: ") + what + " for rank " + std::to_string(rank) + " of " + std::to_string(size()));
  const int w = worker_of(global(rank));
  if (w != worker_ || !mine_)
    throw Error(std::string("internal: ") + what + " for rank " + std::to_string(rank) + ", a device of worker " + std::to_string(w) + ", on worker " +
                std::to_string(worker_));
  const auto at = std::find(workers_in_group_.begin(), workers_in_group_.end(), w);
  return rank - first_member_[static_cast<std::size_t>(at - workers_in_group_.begin())];
}

void SpanningCommunicator::exchange_blocks(const std::vector<std::byte*>& blocks, const std::vector<std::size_t>& block_bytes) {
  const auto me = static_cast<std::size_t>(std::find(workers_in_group_.begin(), workers_in_group_.end(), worker_) - workers_in_group_.begin());
  for (std::size_t i = 0; i < workers_in_group_.size(); ++i)
    if (i != me) mail_->post(workers_in_group_[i], step_key(worker_, workers_in_group_[i]), blocks[me], block_bytes[me]);
  for (std::size_t i = 0; i < workers_in_group_.size(); ++i)
    if (i != me) mail_->take(workers_in_group_[i], step_key(workers_in_group_[i], worker_), blocks[i], block_bytes[i]);
}

void SpanningCommunicator::all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire) {
  if (dtype != DType::F32 && dtype != DType::F64) throw Error(std::string("all_reduce: float32 or float64 buffers only, got ") + dtype_name(dtype));
  const int l = here(rank, "all_reduce");
  const std::size_t bytes = count * dtype_size(dtype);
  if (mine_->size() > 1) mine_->all_reduce(l, data, count, dtype, ReduceOp::Sum, wire);
  if (workers_in_group_.size() > 1) {
    if (l == 0) {  // every worker's partial sum, added in worker order
      std::vector<std::vector<std::byte>> parts(workers_in_group_.size(), std::vector<std::byte>(bytes));
      std::vector<std::byte*> blocks;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        if (workers_in_group_[i] == worker_) std::memcpy(parts[i].data(), data, bytes);
        blocks.push_back(parts[i].data());
      }
      exchange_blocks(blocks, std::vector<std::size_t>(parts.size(), bytes));
      std::memcpy(data, parts[0].data(), bytes);
      for (std::size_t i = 1; i < parts.size(); ++i)
        dtype == DType::F32 ? add<float>(data, parts[i].data(), count) : add<double>(data, parts[i].data(), count);
    }
    if (mine_->size() > 1) mine_->broadcast(l, data, bytes, 0);
  }
  if (op == ReduceOp::Mean) divide_by(data, count, dtype, size());
}

void SpanningCommunicator::all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) {
  const int l = here(rank, "all_gather");
  const std::size_t row = count * dtype_size(dtype);
  auto* all = static_cast<std::byte*>(out);
  std::vector<std::byte*> blocks;
  std::vector<std::size_t> block_bytes;
  std::byte* mine = nullptr;
  for (std::size_t i = 0; i < workers_in_group_.size(); ++i) {
    blocks.push_back(all + row * static_cast<std::size_t>(first_member_[i]));
    block_bytes.push_back(row * static_cast<std::size_t>(member_count_[i]));
    if (workers_in_group_[i] == worker_) mine = blocks.back();
  }
  if (mine_->size() > 1) mine_->all_gather(l, in, mine, count, dtype);
  else if (mine != in) std::memmove(mine, in, row);
  if (workers_in_group_.size() == 1) return;
  if (l == 0) exchange_blocks(blocks, block_bytes);
  if (mine_->size() > 1) mine_->broadcast(l, out, row * members_.size(), 0);
}

void SpanningCommunicator::reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) {
  // Not on a hot path: the whole sum, then this rank's share of it.
  const std::size_t bytes = count * dtype_size(dtype);
  std::vector<std::byte> all(static_cast<const std::byte*>(in), static_cast<const std::byte*>(in) + bytes * members_.size());
  all_reduce(rank, all.data(), count * members_.size(), dtype, op);
  std::memcpy(out, all.data() + bytes * static_cast<std::size_t>(rank), bytes);
}

void SpanningCommunicator::broadcast(int rank, void* data, std::size_t bytes, int root) {
  const int l = here(rank, "broadcast");
  const int root_worker = worker_of(global(root));
  const auto r = static_cast<std::size_t>(std::find(workers_in_group_.begin(), workers_in_group_.end(), root_worker) - workers_in_group_.begin());
  if (worker_ == root_worker) {
    if (mine_->size() > 1) mine_->broadcast(l, data, bytes, root - first_member_[r]);
    if (l == 0)
      for (int w : workers_in_group_)
        if (w != worker_) mail_->post(w, step_key(worker_, w), data, bytes);
    return;
  }
  if (l == 0) mail_->take(root_worker, step_key(root_worker, worker_), data, bytes);
  if (mine_->size() > 1) mine_->broadcast(l, data, bytes, 0);
}

void SpanningCommunicator::send(int rank, int peer, const void* data, std::size_t bytes, int tag) {
  here(rank, "send");
  const int64_t from = global(rank), to = global(peer);
  if (worker_of(to) == worker_) return local_->send(static_cast<int>(from % devices_per_worker_), static_cast<int>(to % devices_per_worker_), data, bytes, tag);
  mail_->post(worker_of(to), {0, from, to, tag}, data, bytes);
}

void SpanningCommunicator::recv(int rank, int peer, void* data, std::size_t bytes, int tag) {
  here(rank, "recv");
  const int64_t from = global(peer), to = global(rank);
  if (worker_of(from) == worker_) return local_->recv(static_cast<int>(to % devices_per_worker_), static_cast<int>(from % devices_per_worker_), data, bytes, tag);
  mail_->take(worker_of(from), {0, from, to, tag}, data, bytes);
}

void SpanningCommunicator::barrier(int rank) {
  double token = 0;
  all_reduce(rank, &token, 1, DType::F64, ReduceOp::Sum);
}

void SpanningCommunicator::abort(const std::string& reason) {
  local_->abort(reason);
  mail_->abort(reason);
}

void SpanningCommunicator::reset() {
  local_->reset();
  mail_->reset();
}

std::shared_ptr<Communicator> SpanningCommunicator::subgroup(const std::vector<int64_t>& ranks) const {
  std::vector<int64_t> members;
  for (int64_t r : ranks) members.push_back(global(static_cast<int>(r)));
  auto group = std::make_shared<SpanningCommunicator>(local_, mail_, worker_, workers_, std::move(members));
  group->set_timeout(timeout());
  return group;
}

}  // namespace tandem::comm
