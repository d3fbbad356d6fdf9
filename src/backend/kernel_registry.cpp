#include "backend/kernel_registry.h"

#include "tandem/errors.h"

namespace tandem::backend {

const char* device_kind_name(DeviceKind kind) {
  static const char* const names[] = {"CPU", "CUDA"};  // in DeviceKind's order
  return names[static_cast<int>(kind)];
}

std::string describe(const KernelKey& key) {
  return '"' + key.op + "\" on " + device_kind_name(key.kind) + " " + dtype_name(key.dtype);
}

KernelRegistry& kernels() {
  static KernelRegistry r;  // built on first use: registrations in other files may run before this one's statics
  return r;
}

KernelRegistration::KernelRegistration(const char* op, DeviceKind kind, DType dtype, KernelFactory f, std::source_location loc) {
  kernels().add({op, kind, dtype}, std::move(f), loc);
}

DType kernel_dtype(const graph::Graph& g, const graph::Node& node) {
  return node.inputs.empty() ? node.outputs.at(0).dtype : g.type(node.inputs[0]).dtype;
}

const KernelFactory& find_kernel(const std::string& op, DeviceKind kind, DType dtype) {
  const KernelFactory* factory = kernels().find({op, kind, dtype});
  if (!factory) throw Error("no " + std::string(device_kind_name(kind)) + " kernel for op '" + op + "' on " + dtype_name(dtype));
  return *factory;
}

}  // namespace tandem::backend
