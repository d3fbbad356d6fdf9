// A Plan bound to memory and devices: every kernel resolved to a closure over fixed addresses.
// run() executes one step — each program on its own device worker, communication on each
// device's communication thread — with no allocation, lookups or string work. The calling thread
// waits for the device workers under the watchdog (tandem/watchdog.h).
#pragma once

#include <functional>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/kernel_registry.h"
#include "compile/plan.h"
#include "core/task_thread.h"
#include "runtime/tracer.h"

namespace tandem::distribute::comm {
class Communicator;
}

namespace tandem::runtime {

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

  // One step on every device; rethrows the first error any device raised. Raises TimeoutError
  // naming each device that has not finished and the kernel it is in when the step outlives the
  // watchdog's limit; a later run() first waits, under the watchdog again, for that step to end.
  void run();
  // Returns once no step of this Executable is running: waits (under the watchdog) for a step the
  // watchdog abandoned. Call it before touching the memory the step uses — feeds, fetches, the
  // variables it updates — from outside run().
  void settle();

 private:
  struct Bound;
  void run_program(int program);
  // Waits for every device's step; the devices still running at the deadline, described.
  std::string wait_for_devices(std::exception_ptr& first_error);
  std::string describe_running(int program) const;
  // Runs a program of a multi-device step; the first device to fail for a reason of its own
  // abandons the step for all of them, so nobody waits out a timeout for it.
  void run_guarded(int program);
  std::mutex error_mutex_;
  std::exception_ptr root_error_;
  std::shared_ptr<const compile::Plan> plan_;
  std::shared_ptr<distribute::comm::Communicator> comm_;
  Tracer tracer_;
  std::vector<std::unique_ptr<Bound>> bound_;
  std::vector<std::function<void()>> device_steps_;  // what each device worker runs for a step
  std::vector<uint64_t> tickets_;                    // each device's current step
  bool abandoned_ = false;                           // a step outlived the watchdog and may still run
  // Last: destroyed first, so no worker still runs a kernel when the arenas go.
  std::vector<std::unique_ptr<core::TaskThread>> device_workers_;
};

}  // namespace tandem::runtime
