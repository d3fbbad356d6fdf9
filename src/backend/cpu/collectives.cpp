// CPU kernels of the communication nodes: they hand work to the device's communication queue.
#include <cstdint>
#include <string>

#include "backend/kernel_registry.h"
#include "comm/comm_context.h"
#include "tandem/errors.h"

namespace tandem::backend::cpu {

namespace {
using distribute::comm::CommContext;
using distribute::comm::CommQueue;
using distribute::comm::Communicator;
using distribute::comm::ReduceOp;
using distribute::comm::Wire;

CommContext& comm_of(const KernelInit& k) {
  if (!k.comm) throw Error("internal: a communication node in a plan bound without a communicator");
  return *static_cast<CommContext*>(k.comm);
}

// A bucket's gradients: one range when the memory planner laid them out back to back (padding
// between them is reduced too, harmlessly), otherwise one all-reduce per gradient.
KernelFn make_all_reduce_start(const KernelInit& k) {
  CommContext& c = comm_of(k);
  const DType dtype = k.in_types.at(0).dtype;
  const std::size_t elem = dtype_size(dtype);
  std::vector<std::pair<void*, std::size_t>> ranges;  // (start, elements)
  std::size_t total = 0;
  for (std::size_t i = 0; i < k.in.size(); ++i) {
    if (k.in_types[i].dtype != dtype) throw Error("all_reduce: a bucket mixes dtypes");
    const std::size_t bytes = k.in_types[i].bytes();
    total += bytes;
    auto* p = static_cast<std::byte*>(k.in[i]);
    if (!ranges.empty()) {
      auto& [start, count] = ranges.back();
      const std::size_t padded = (count * elem + 63) / 64 * 64;
      if (static_cast<std::byte*>(start) + padded == p) {
        count = padded / elem + bytes / elem;
        continue;
      }
    }
    ranges.emplace_back(p, bytes / elem);
  }
  const bool mean = k.node.attrs.b("mean");
  const Wire wire = k.node.attrs.b("bf16") ? Wire::BFloat16 : Wire::Native;
  Communicator* comm = c.communicator;
  const int rank = c.rank;
  const auto bucket = static_cast<std::size_t>(k.node.attrs.i("bucket"));
  const std::string label = "all_reduce bucket " + std::to_string(bucket) + " (" + std::to_string(total / 1024) + " KB)";
  const int slot = c.queue->add_slot(
      [=] {
        for (auto [p, n] : ranges) comm->all_reduce(rank, p, n, dtype, mean ? ReduceOp::Mean : ReduceOp::Sum, wire);
      },
      label);
  if (c.bucket_slots.size() <= bucket) c.bucket_slots.resize(bucket + 1, -1);
  c.bucket_slots[bucket] = slot;
  CommQueue* queue = c.queue;
  return [=] { queue->start(slot); };
}

KernelFn make_all_reduce_wait(const KernelInit& k) {
  CommContext& c = comm_of(k);
  const auto bucket = static_cast<std::size_t>(k.node.attrs.i("bucket"));
  if (bucket >= c.bucket_slots.size() || c.bucket_slots[bucket] < 0) throw Error("internal: all_reduce_wait before its start");
  const int slot = c.bucket_slots[bucket];
  CommQueue* queue = c.queue;
  return [=] { queue->wait(slot); };
}
}  // namespace

REGISTER_KERNEL("all_reduce_start", DeviceKind::Cpu, DType::F32, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_start", DeviceKind::Cpu, DType::F64, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cpu, DType::F32, make_all_reduce_wait);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cpu, DType::F64, make_all_reduce_wait);

}  // namespace tandem::backend::cpu
