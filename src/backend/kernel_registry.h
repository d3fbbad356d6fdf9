// Kernels keyed by (op, device kind, dtype). A factory runs once when a Plan is built: it reads the
// node's attributes and shapes and returns a closure over fixed buffer addresses, so running a
// step is a straight walk over closures with no lookups, strings or allocation.
#pragma once

#include <compare>
#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include "core/registry.h"
#include "graph/graph.h"

namespace tandem::backend {

enum class DeviceKind { Cpu, Cuda };

struct KernelInit {
  const graph::Node& node;
  std::vector<TensorType> in_types;
  std::vector<void*> in;   // resolved addresses of the inputs
  std::vector<void*> out;  // and of the outputs
  void* context;           // the backend's device context (cpu::Context for the CPU)
  void* comm = nullptr;    // comm::CommContext of this program (comm/comm_context.h), for communication kernels
  int micro_batch = 0;     // the micro-batch of the step this kernel instance runs for
  const TensorType& out_type(int i = 0) const { return node.outputs[static_cast<std::size_t>(i)]; }
};

using KernelFn = std::function<void()>;
using KernelFactory = std::function<KernelFn(const KernelInit&)>;

const char* device_kind_name(DeviceKind kind);  // "CPU", "CUDA"

struct KernelKey {
  std::string op;
  DeviceKind kind;
  DType dtype;
  auto operator<=>(const KernelKey&) const = default;
};
std::string describe(const KernelKey& key);  // `"relu" on CPU float32`, for messages

// Kernels by (op, device kind, dtype); a key registered twice is an error (see core/registry.h).
struct KernelRegistry : core::Registry<KernelKey, KernelFactory> {
  KernelRegistry() : Registry("kernel") {}
};

KernelRegistry& kernels();  // the process's: every REGISTER_KERNEL

// The dtype that selects a node's kernel: its first input's, else its first output's.
DType kernel_dtype(const graph::Graph& g, const graph::Node& node);
// Throws if no kernel is registered for the key, and for any failed registration.
const KernelFactory& find_kernel(const std::string& op, DeviceKind kind, DType dtype);

struct KernelRegistration {
  KernelRegistration(const char* op, DeviceKind kind, DType dtype, KernelFactory f,
                     std::source_location loc = std::source_location::current());
};

}  // namespace tandem::backend

#define REGISTER_KERNEL(op, kind, dtype, factory) \
  static const ::tandem::backend::KernelRegistration TANDEM_KCAT(kernel_registration_, __COUNTER__)(op, kind, dtype, factory)
#define TANDEM_KCAT_(a, b) a##b
#define TANDEM_KCAT(a, b) TANDEM_KCAT_(a, b)
