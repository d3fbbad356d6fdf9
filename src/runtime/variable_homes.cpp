#include "runtime/variable_homes.h"

namespace tandem::runtime {

void* VariableHomes::home(backend::Device& device, const Variable& v) {
  std::vector<Home>& homes = homes_[v.id()];
  for (Home& h : homes)
    if (h.device == &device) return h.buffer.data();
  const Tensor& host = v.value();
  backend::DeviceBuffer buffer = device.allocate(host.bytes());
  device.copy_in(buffer.data(), host.raw(), host.bytes());
  homes.push_back({&device, std::move(buffer)});
  return homes.back().buffer.data();
}

void VariableHomes::to_devices(const std::vector<VariablePtr>& vars) {
  for (const VariablePtr& v : vars) {
    auto it = homes_.find(v->id());
    if (it == homes_.end()) continue;
    for (Home& h : it->second) h.device->copy_in(h.buffer.data(), v->value().raw(), v->value().bytes());
  }
}

void VariableHomes::to_host(Variable& v) const {
  auto it = homes_.find(v.id());
  if (it == homes_.end() || it->second.empty()) return;
  const Home& h = it->second.front();
  h.device->copy_out(v.value().raw(), h.buffer.data(), v.value().bytes());
}

void VariableHomes::to_host(const std::vector<VariablePtr>& vars) const {
  for (const VariablePtr& v : vars) to_host(*v);
}

}  // namespace tandem::runtime
