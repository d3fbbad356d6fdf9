// A Plan bound to memory and devices: every kernel resolved to a closure over fixed addresses.
// run() executes one step — each program on its own device worker, communication on each
// device's communication thread — with no allocation, lookups or string work. The calling thread
// waits for the device workers under the watchdog (tandem/watchdog.h).
#pragma once

#include <functional>
#include <map>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/device.h"
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
  // `devices[p]` runs program p; `variable(p, id)` is the home of variable `id` on that device
  // (it must outlive the Executable). `comm` is needed when programs communicate. Steps run on
  // each device's worker thread, shared with every other Executable (runtime/device_threads.h).
  Executable(std::shared_ptr<const compile::Plan> plan, std::vector<backend::Device*> devices,
             const std::function<void*(int program, int variable_id)>& variable,
             std::shared_ptr<distribute::comm::Communicator> comm = nullptr);
  ~Executable();  // waits for a step the watchdog abandoned: its kernels use this arena

  backend::Device& device(int program) const { return *devices_[static_cast<std::size_t>(program)]; }
  // Device memory to write an input of one micro-batch to, through device(program).copy_in;
  // null if the step does not read it.
  void* feed(int program, const std::string& input, int micro_batch = 0) const;
  const void* fetch(int program, int index) const;  // a fetched value after run(), in device memory
  // Copies fetch `index` of `program` out of device memory.
  void copy_fetch(int program, int index, void* host_dst, std::size_t bytes) const;
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
  void issue_program(int program);  // launches the program's kernels in schedule order
  // Waits for every device's step; the devices still running at the deadline, described.
  std::string wait_for_devices(std::exception_ptr& first_error);
  std::string describe_running(int program) const;
  // Runs a program of a multi-device step; the first device to fail for a reason of its own
  // abandons the step for all of them, so nobody waits out a timeout for it.
  void run_guarded(int program);
  void make_groups();
  void abort_communication(const std::string& why);
  void reset_communication();
  std::map<std::vector<int64_t>, std::shared_ptr<distribute::comm::Communicator>> groups_;  // subsets' communicators
  std::mutex error_mutex_;
  std::exception_ptr root_error_;
  std::shared_ptr<const compile::Plan> plan_;
  std::shared_ptr<distribute::comm::Communicator> comm_;
  Tracer tracer_;
  std::vector<std::unique_ptr<Bound>> bound_;
  std::vector<std::function<void()>> device_steps_;  // what each device worker runs for a step
  std::vector<uint64_t> tickets_;                    // each device's current step
  bool abandoned_ = false;                           // a step outlived the watchdog and may still run
  std::vector<backend::Device*> devices_;
  std::vector<core::TaskThread*> device_workers_;  // the devices', shared
};

}  // namespace tandem::runtime
