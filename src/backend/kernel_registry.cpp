#include "backend/kernel_registry.h"

#include <map>
#include <tuple>

#include "tandem/errors.h"

namespace tandem::backend {

namespace {
using Key = std::tuple<std::string, DeviceKind, DType>;
std::map<Key, KernelFactory>& table() {
  static std::map<Key, KernelFactory> t;
  return t;
}
}  // namespace

void register_kernel(const std::string& op, DeviceKind kind, DType dtype, KernelFactory factory) {
  table()[Key{op, kind, dtype}] = std::move(factory);
}

DType kernel_dtype(const graph::Graph& g, const graph::Node& node) {
  return node.inputs.empty() ? node.outputs.at(0).dtype : g.type(node.inputs[0]).dtype;
}

const KernelFactory& find_kernel(const std::string& op, DeviceKind kind, DType dtype) {
  auto it = table().find(Key{op, kind, dtype});
  if (it == table().end())
    throw Error("no " + std::string(kind == DeviceKind::Cpu ? "CPU" : "CUDA") + " kernel for op '" + op + "' on " +
                dtype_name(dtype));
  return it->second;
}

}  // namespace tandem::backend
