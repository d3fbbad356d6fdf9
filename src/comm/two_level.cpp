#include "comm/two_level.h"

#include <cstring>
#include <vector>

#include "comm/mean.h"
#include "tandem/errors.h"

namespace tandem::comm {

TwoLevelCommunicator::TwoLevelCommunicator(std::shared_ptr<Communicator> local, std::shared_ptr<Communicator> across, int worker)
    : local_(std::move(local)), across_(std::move(across)), worker_(worker) {}

int TwoLevelCommunicator::local_rank(int rank, const char* what) const {
  const int l = rank - worker_ * local_->size();
  if (l < 0 || l >= local_->size())
    throw Error(std::string("internal: ") + what + " for rank " + std::to_string(rank) + ", which is not a device of worker " + std::to_string(worker_));
  return l;
}

int TwoLevelCommunicator::local_peer(int peer, const char* what) const {
  const int l = peer - worker_ * local_->size();
  if (l < 0 || l >= local_->size())
    throw Error(std::string(what) + ": rank " + std::to_string(peer) + " is a device of another worker; transfers between workers are collectives only");
  return l;
}

void TwoLevelCommunicator::all_reduce(int rank, void* data, std::size_t count, DType dtype, ReduceOp op, Wire wire) {
  const int l = local_rank(rank, "all_reduce");
  local_->all_reduce(l, data, count, dtype, ReduceOp::Sum, wire);
  if (l == 0) across_->all_reduce(worker_, data, count, dtype, ReduceOp::Sum, wire);
  local_->broadcast(l, data, count * dtype_size(dtype), 0);
  if (op == ReduceOp::Mean) divide_by(data, count, dtype, size());
}

void TwoLevelCommunicator::all_gather(int rank, const void* in, void* out, std::size_t count, DType dtype) {
  const int l = local_rank(rank, "all_gather");
  const std::size_t block = count * static_cast<std::size_t>(local_->size());  // one worker's part
  std::byte* mine = static_cast<std::byte*>(out) + block * dtype_size(dtype) * static_cast<std::size_t>(worker_);
  local_->all_gather(l, in, mine, count, dtype);
  if (l == 0) across_->all_gather(worker_, mine, out, block, dtype);
  local_->broadcast(l, out, block * dtype_size(dtype) * static_cast<std::size_t>(across_->size()), 0);
}

void TwoLevelCommunicator::reduce_scatter(int rank, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) {
  // Not on any hot path (Mirrored reduces whole buckets): the sum of everything, then this
  // rank's share of it.
  const std::size_t bytes = count * dtype_size(dtype);
  std::vector<std::byte> all(static_cast<const std::byte*>(in), static_cast<const std::byte*>(in) + bytes * static_cast<std::size_t>(size()));
  all_reduce(rank, all.data(), count * static_cast<std::size_t>(size()), dtype, op);
  std::memcpy(out, all.data() + bytes * static_cast<std::size_t>(rank), bytes);
}

void TwoLevelCommunicator::broadcast(int rank, void* data, std::size_t bytes, int root) {
  const int l = local_rank(rank, "broadcast");
  const int root_worker = root / local_->size(), root_local = root % local_->size();
  if (worker_ == root_worker) local_->broadcast(l, data, bytes, root_local);
  if (l == 0) across_->broadcast(worker_, data, bytes, root_worker);
  if (worker_ != root_worker) local_->broadcast(l, data, bytes, 0);
}

void TwoLevelCommunicator::send(int rank, int peer, const void* data, std::size_t bytes, int tag) {
  local_->send(local_rank(rank, "send"), local_peer(peer, "send"), data, bytes, tag);
}

void TwoLevelCommunicator::recv(int rank, int peer, void* data, std::size_t bytes, int tag) {
  local_->recv(local_rank(rank, "recv"), local_peer(peer, "recv"), data, bytes, tag);
}

void TwoLevelCommunicator::barrier(int rank) {
  const int l = local_rank(rank, "barrier");
  local_->barrier(l);
  if (l == 0) across_->barrier(worker_);
  local_->barrier(l);
}

void TwoLevelCommunicator::abort(const std::string& reason) {
  local_->abort(reason);
  across_->abort(reason);
}

void TwoLevelCommunicator::reset() {
  local_->reset();
  across_->reset();
}

CommStats TwoLevelCommunicator::stats() const {
  const CommStats a = local_->stats(), b = across_->stats();
  return {a.bytes_moved + b.bytes_moved, a.collectives};
}

std::shared_ptr<Communicator> TwoLevelCommunicator::subgroup(const std::vector<int64_t>& ranks) const {
  std::vector<int64_t> local;
  for (int64_t r : ranks) local.push_back(local_peer(static_cast<int>(r), "subgroup"));
  return local_->subgroup(local);
}

}  // namespace tandem::comm
