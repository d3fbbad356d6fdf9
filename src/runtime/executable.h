// A Plan bound to memory and devices: every kernel resolved to a closure over fixed addresses.
// run() executes one step with no allocation, lookups or string work.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/kernel_registry.h"
#include "compile/plan.h"

namespace tandem::runtime {

class Executable {
 public:
  // `context(p)` is program p's device context; `variable(p, id)` the storage of variable `id`
  // on that device (it must outlive the Executable).
  Executable(std::shared_ptr<const compile::Plan> plan, const std::function<void*(int program)>& context,
             const std::function<void*(int program, int variable_id)>& variable);

  void* feed(int program, const std::string& placeholder) const;  // where to write an input
  const void* fetch(int program, int index) const;                // a fetched value after run()
  std::size_t arena_bytes(int program) const;
  const compile::Plan& plan() const { return *plan_; }

  void run();                                   // every program's schedule, in order
  void run_block(int program, int block);       // one scheduled action (for multi-device runtimes)

 private:
  struct Bound {
    std::unique_ptr<std::byte[], void (*)(void*)> arena{nullptr, nullptr};
    std::vector<std::vector<void*>> pointers;    // [node][output]
    std::vector<std::vector<backend::KernelFn>> blocks;
  };
  std::shared_ptr<const compile::Plan> plan_;
  std::vector<Bound> bound_;
};

}  // namespace tandem::runtime
