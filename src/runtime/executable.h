// A Plan bound to memory and devices: every kernel resolved to a closure over fixed addresses.
// run() executes one step — each program on its own device worker, communication on each
// device's communication thread — with no allocation, lookups or string work.
#pragma once

#include <functional>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/kernel_registry.h"
#include "compile/plan.h"
#include "runtime/tracer.h"

namespace tandem::distribute::comm {
class Communicator;
}

namespace tandem::runtime {

class DeviceWorkers;
struct CommContext;
class CommWorker;

class Executable {
 public:
  // `context(p)` is program p's device context; `variable(p, id)` the storage of variable `id`
  // on that device (it must outlive the Executable). `comm` is needed when programs communicate.
  Executable(std::shared_ptr<const compile::Plan> plan, const std::function<void*(int program)>& context,
             const std::function<void*(int program, int variable_id)>& variable,
             std::shared_ptr<distribute::comm::Communicator> comm = nullptr);
  ~Executable();

  void* feed(int program, const std::string& placeholder) const;  // where to write an input
  const void* fetch(int program, int index) const;                // a fetched value after run()
  std::size_t arena_bytes(int program) const;
  int programs() const { return static_cast<int>(bound_.size()); }
  const compile::Plan& plan() const { return *plan_; }
  Tracer& tracer() { return tracer_; }

  void run();  // one step on every device; rethrows the first error any device raised

 private:
  struct Bound;
  void run_program(int program);
  // Runs a program of a multi-device step; the first device to fail for a reason of its own
  // abandons the step for all of them, so nobody waits out a timeout for it.
  void run_guarded(int program);
  std::mutex error_mutex_;
  std::exception_ptr root_error_;
  std::shared_ptr<const compile::Plan> plan_;
  std::shared_ptr<distribute::comm::Communicator> comm_;
  Tracer tracer_;
  std::vector<std::unique_ptr<Bound>> bound_;
  std::unique_ptr<DeviceWorkers> workers_;
};

}  // namespace tandem::runtime
