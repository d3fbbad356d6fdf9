#include "backend/comm_kernels.h"

#include "tandem/errors.h"

namespace tandem::backend {

using comm::CommContext;
using comm::CommQueue;

CommContext& comm_of(const KernelInit& k) {
  if (!k.comm) throw Error("internal: a communication node in a plan bound without a communicator");
  return *static_cast<CommContext*>(k.comm);
}

const graph::Communication& communication_of(const KernelInit& k) {
  if (!k.node.communication) throw Error("internal: communication kernel '" + k.node.op + "' for a node without its Communication");
  return *k.node.communication;
}

comm::Wire wire_of(const KernelInit& k) {
  return communication_of(k).wire == graph::Communication::Wire::BFloat16 ? comm::Wire::BFloat16 : comm::Wire::Native;
}

Peers peers_of(const KernelInit& k) {
  const CommContext& c = comm_of(k);
  const std::vector<int>& group = communication_of(k).group;
  if (static_cast<int>(group.size()) >= c.communicator->size()) return {c.communicator, c.rank};  // collective() checks the count
  const auto& g = c.group(std::vector<int64_t>(group.begin(), group.end()));
  return {g.communicator, g.rank};
}

Peers collective(const KernelInit& k, const char* op) {
  const Peers p = peers_of(k);
  const auto ranks = static_cast<int64_t>(communication_of(k).group.size());
  if (ranks != p.communicator->size())
    throw Error(std::string(op) + ": the node spans " + std::to_string(ranks) + " ranks, the communicator has " +
                std::to_string(p.communicator->size()));
  return p;
}

int peer_of(const KernelInit& k, const char* op) {
  const CommContext& c = comm_of(k);
  const int peer = communication_of(k).peer;
  if (peer < 0 || peer >= c.communicator->size() || peer == c.rank)
    throw Error(std::string(op) + " on rank " + std::to_string(c.rank) + ": peer must be another rank in [0, " +
                std::to_string(c.communicator->size()) + "), got " + std::to_string(peer));
  return peer;
}

std::vector<BucketRange> bucket_ranges(const KernelInit& k, std::size_t* total_bytes) {
  const DType dtype = k.in_types.at(0).dtype;
  const std::size_t elem = dtype_size(dtype);
  std::vector<BucketRange> ranges;
  std::size_t total = 0;
  for (std::size_t i = 0; i < k.in.size(); ++i) {
    if (k.in_types[i].dtype != dtype) throw Error("all_reduce: a bucket mixes dtypes");
    const std::size_t bytes = k.in_types[i].bytes();
    total += bytes;
    auto* p = static_cast<std::byte*>(k.in[i]);
    if (!ranges.empty()) {
      BucketRange& last = ranges.back();
      const std::size_t padded = (last.count * elem + 63) / 64 * 64;
      if (static_cast<std::byte*>(last.start) + padded == p) {
        last.count = padded / elem + bytes / elem;
        continue;
      }
    }
    ranges.push_back({p, bytes / elem});
  }
  if (total_bytes) *total_bytes = total;
  return ranges;
}

int add_bucket_slot(const KernelInit& k, std::function<void()> work, const std::string& label) {
  CommContext& c = comm_of(k);
  const auto bucket = static_cast<std::size_t>(communication_of(k).bucket);
  const int slot = c.queue->add_slot(std::move(work), label);
  if (c.bucket_slots.size() <= bucket) c.bucket_slots.resize(bucket + 1, -1);
  c.bucket_slots[bucket] = slot;
  return slot;
}

KernelFn make_all_reduce_wait(const KernelInit& k) {
  const CommContext& c = comm_of(k);
  const auto bucket = static_cast<std::size_t>(communication_of(k).bucket);
  if (bucket >= c.bucket_slots.size() || c.bucket_slots[bucket] < 0) throw Error("internal: all_reduce_wait before its start");
  const int slot = c.bucket_slots[bucket];
  CommQueue* queue = c.queue;
  return [=] { queue->wait(slot); };
}

KernelFn run_on_queue(const KernelInit& k, std::function<void()> work, const std::string& label) {
  CommQueue* queue = comm_of(k).queue;
  const int slot = queue->add_slot(std::move(work), label);
  return [=] {
    queue->start(slot);
    queue->wait(slot);
  };
}

}  // namespace tandem::backend
