// Where the model's variables live on the devices that use them: one home per (device, variable),
// shared by every compiled step on that device. The model's host tensors are the logical values;
// homes are kept in step with them only through the device's copies, in both directions.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"
#include "tandem/layer.h"

namespace tandem::runtime {

class VariableHomes {
 public:
  // The home of `v` on `device`, made on first use and filled from v's host tensor.
  void* home(backend::Device& device, const Variable& v);
  // Host tensors -> every home of each variable.
  void to_devices(const std::vector<VariablePtr>& vars);
  // The first home of each variable (all homes hold the same values after a step) -> its host tensor.
  void to_host(const std::vector<VariablePtr>& vars) const;
  void to_host(Variable& v) const;
  void clear() { homes_.clear(); }

 private:
  struct Home {
    backend::Device* device;
    backend::DeviceBuffer buffer;
  };
  std::map<int, std::vector<Home>> homes_;  // by variable id, in the order they were made
};

}  // namespace tandem::runtime
