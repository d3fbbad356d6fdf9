// CPU kernels of the communication nodes: they hand work to the device's communication queue.
#include <cstdint>
#include <functional>
#include <string>

#include "backend/comm_kernels.h"

namespace tandem::backend::cpu {

namespace {
using comm::CommQueue;
using comm::Communicator;
using comm::ReduceOp;
using comm::Wire;

KernelFn make_all_reduce_start(const KernelInit& k) {
  std::size_t total = 0;
  const std::vector<BucketRange> ranges = bucket_ranges(k, &total);
  const DType dtype = k.in_types.at(0).dtype;
  const bool mean = communication_of(k).mean;
  const Wire wire = wire_of(k);
  const auto [comm, rank] = peers_of(k);
  const std::string label = "all_reduce bucket " + std::to_string(communication_of(k).bucket) + " (" + std::to_string(total / 1024) + " KB)";
  const int slot = add_bucket_slot(
      k,
      [=] {
        for (auto [p, n] : ranges) comm->all_reduce(rank, p, n, dtype, mean ? ReduceOp::Mean : ReduceOp::Sum, wire);
      },
      label);
  CommQueue* queue = comm_of(k).queue;
  return [=] { queue->start(slot); };
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
  const int tag = communication_of(k).tag;
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
// 16-bit values (mixed precision's activations and their gradients between devices): moved as
// bytes, summed in float32 per element and rounded once per addition.
REGISTER_KERNEL("all_reduce_start", DeviceKind::Cpu, DType::BF16, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_start", DeviceKind::Cpu, DType::F16, make_all_reduce_start);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cpu, DType::BF16, make_all_reduce_wait);
REGISTER_KERNEL("all_reduce_wait", DeviceKind::Cpu, DType::F16, make_all_reduce_wait);
REGISTER_KERNEL("all_gather", DeviceKind::Cpu, DType::BF16, make_all_gather);
REGISTER_KERNEL("all_gather", DeviceKind::Cpu, DType::F16, make_all_gather);
REGISTER_KERNEL("reduce_scatter", DeviceKind::Cpu, DType::BF16, make_reduce_scatter);
REGISTER_KERNEL("reduce_scatter", DeviceKind::Cpu, DType::F16, make_reduce_scatter);
REGISTER_KERNEL("send", DeviceKind::Cpu, DType::BF16, make_point_to_point);
REGISTER_KERNEL("send", DeviceKind::Cpu, DType::F16, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cpu, DType::BF16, make_point_to_point);
REGISTER_KERNEL("recv", DeviceKind::Cpu, DType::F16, make_point_to_point);
}  // namespace tandem::backend::cpu
