// Where the model's variables live on the devices that use them: one home per (device, variable),
// shared by every compiled step on that device. The model's host tensors are the logical values;
// homes are kept in step with them only through the device's copies, in both directions. A
// variable split over devices (compile::VariableShard) has a block of it in each home.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/device.h"
#include "compile/plan.h"
#include "tandem/layer.h"

namespace tandem::runtime {

class VariableHomes {
 public:
  // The home of `v` (or of its block `shard`) on `device`, made on first use and filled from v's
  // host tensor. A device holds one form of a variable: all of it or one block.
  void* home(backend::Device& device, const Variable& v, const compile::VariableShard* shard = nullptr);
  // Host tensors -> every home of each variable.
  void to_devices(const std::vector<VariablePtr>& vars);
  // The homes of each variable (all hold the same values after a step) -> its host tensor: the
  // first whole copy, or every block.
  void to_host(const std::vector<VariablePtr>& vars) const;
  void to_host(Variable& v) const;
  void clear() { homes_.clear(); }
  // What this process holds of `v`: all of it (a whole copy on some device), or blocks of it.
  bool holds_whole(const Variable& v) const;
  std::vector<compile::VariableShard> blocks_held(const Variable& v) const;
  // Block `s` of `from` into the same place of `to` (whole tensors of one type).
  static void copy_block(const Tensor& from, const compile::VariableShard& s, Tensor& to);

 private:
  struct Home {
    backend::Device* device;
    backend::DeviceBuffer buffer;
    std::optional<compile::VariableShard> shard;
  };
  void fill(Home& h, const Tensor& host);
  std::map<int, std::vector<Home>> homes_;  // by variable id, in the order they were made
};

}  // namespace tandem::runtime
