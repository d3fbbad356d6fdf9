// CPU kernels of the communication nodes: they hand work to the device's communication queue.
#include <cstdint>
#include <functional>
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

// Who a collective runs among: every rank, or the group its attribute names.
struct Peers {
  Communicator* communicator;
  int rank;
};
Peers peers_of(const KernelInit& k) {
  const CommContext& c = comm_of(k);
  if (!k.node.attrs.has("group")) return {c.communicator, c.rank};
  const auto& g = c.group(k.node.attrs.ints("group"));
  return {g.communicator, g.rank};
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
  const auto [comm, rank] = peers_of(k);
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

// The other collectives run to completion inside the kernel, on the communication thread, so
// they stay in order with the all-reduce buckets the device has started (every rank meets the
// same sequence).
KernelFn run_on_queue(const KernelInit& k, std::function<void()> work, const std::string& label) {
  CommContext& c = comm_of(k);
  CommQueue* queue = c.queue;
  const int slot = queue->add_slot(std::move(work), label);
  return [=] {
    queue->start(slot);
    queue->wait(slot);
  };
}

// A collective node's ranks, checked against the rank count it was built for.
Peers collective(const KernelInit& k, const char* op) {
  const Peers p = peers_of(k);
  const int64_t ranks = k.node.attrs.i("ranks");
  if (ranks != p.communicator->size())
    throw Error(std::string(op) + ": the node spans " + std::to_string(ranks) + " ranks, the communicator has " +
                std::to_string(p.communicator->size()));
  return p;
}

// A point-to-point node's peer: another rank of the communicator.
int peer_of(const KernelInit& k, const char* op) {
  const CommContext& c = comm_of(k);
  const int64_t peer = k.node.attrs.i("peer");
  if (peer < 0 || peer >= c.communicator->size() || peer == c.rank)
    throw Error(std::string(op) + " on rank " + std::to_string(c.rank) + ": peer must be another rank in [0, " +
                std::to_string(c.communicator->size()) + "), got " + std::to_string(peer));
  return static_cast<int>(peer);
}

KernelFn make_all_gather(const KernelInit& k) {
  const auto [comm, rank] = collective(k, "all_gather");
  const void* in = k.in[0];
  void* out = k.out[0];
  const auto count = static_cast<std::size_t>(k.in_types[0].shape.num_elements());
  const DType dtype = k.in_types[0].dtype;
  return run_on_queue(k, [=] { comm->all_gather(rank, in, out, count, dtype); }, "all_gather");
}

KernelFn make_reduce_scatter(const KernelInit& k) {
  const auto [comm, rank] = collective(k, "reduce_scatter");
  const void* in = k.in[0];
  void* out = k.out[0];
  const auto count = static_cast<std::size_t>(k.out_type().shape.num_elements());
  const DType dtype = k.in_types[0].dtype;
  return run_on_queue(k, [=] { comm->reduce_scatter(rank, in, out, count, dtype, ReduceOp::Sum); }, "reduce_scatter");
}

// send's data is its input; recv's, its output.
KernelFn make_point_to_point(const KernelInit& k) {
  const bool sending = k.node.op == "send";
  const int peer = peer_of(k, sending ? "send" : "recv");
  Communicator* comm = comm_of(k).communicator;
  const int rank = comm_of(k).rank;
  void* data = sending ? k.in[0] : k.out[0];
  const std::size_t bytes = sending ? k.in_types[0].bytes() : k.out_type().bytes();
  const auto tag = static_cast<int>(k.node.attrs.i("tag", 0));
  if (sending) return run_on_queue(k, [=] { comm->send(rank, peer, data, bytes, tag); }, "send to rank " + std::to_string(peer));
  return run_on_queue(k, [=] { comm->recv(rank, peer, data, bytes, tag); }, "recv from rank " + std::to_string(peer));
}
}  // namespace

REGISTER_KERNEL("all_reduce_start", DeviceKind::Cpu, DType::F32, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_start", DeviceKind::Cpu, DType::F64, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cpu, DType::F32, make_all_reduce_wait);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cpu, DType::F64, make_all_reduce_wait);

// Gathers and transfers move bytes: any dtype (integer labels and ids travel too).
REGISTER_KERNEL("all_gather", DeviceKind::Cpu, DType::F32, make_all_gather);
REGISTER_KERNEL("all_gather", DeviceKind::Cpu, DType::F64, make_all_gather);
REGISTER_KERNEL("all_gather", DeviceKind::Cpu, DType::I32, make_all_gather);
REGISTER_KERNEL("all_gather", DeviceKind::Cpu, DType::I64, make_all_gather);
REGISTER_KERNEL("reduce_scatter", DeviceKind::Cpu, DType::F32, make_reduce_scatter);
REGISTER_KERNEL("reduce_scatter", DeviceKind::Cpu, DType::F64, make_reduce_scatter);
REGISTER_KERNEL("send", DeviceKind::Cpu, DType::F32, make_point_to_point);
REGISTER_KERNEL("send", DeviceKind::Cpu, DType::F64, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cpu, DType::F32, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cpu, DType::F64, make_point_to_point);
REGISTER_KERNEL("send", DeviceKind::Cpu, DType::I32, make_point_to_point);
REGISTER_KERNEL("send", DeviceKind::Cpu, DType::I64, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cpu, DType::I32, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cpu, DType::I64, make_point_to_point);
}  // namespace tandem::backend::cpu
