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

namespace tandem::comm {
class Communicator;
}

namespace tandem::runtime {

class CommWorker;

// Whether Executables bound to devices that copy asynchronously (GPUs) take their inputs through
// inboxes, so that a step's inputs are copied while the previous step runs (default: yes; the
// environment variable TANDEM_INPUT_OVERLAP=0 turns it off). Read when an Executable is made.
bool input_overlap();
void set_input_overlap(bool on);

class Executable {
 public:
  // `devices[p]` runs program p; `variable(p, id)` is the home of variable `id` on that device
  // (it must outlive the Executable). `comm` is needed when programs communicate. Steps run on
  // each device's worker thread, shared with every other Executable (runtime/device_threads.h).
  Executable(std::shared_ptr<const compile::Plan> plan, std::vector<backend::Device*> devices,
             const std::function<void*(int program, int variable_id)>& variable,
             std::shared_ptr<comm::Communicator> comm = nullptr);
  ~Executable();  // waits for a step the watchdog abandoned: its kernels use this arena

  backend::Device& device(int program) const { return *devices_[static_cast<std::size_t>(program)]; }
  // Device memory of an input of one micro-batch, to write with write_feed; null if the step does
  // not read it.
  void* feed(int program, const std::string& input, int micro_batch = 0) const;
  // Copies `bytes` of host memory to the input at `at` (an address feed() gave) of `program`. A
  // device that copies synchronously (the CPU) copies at once, into the step's memory. One that
  // copies asynchronously (a GPU) gets the copy issued into the input's inbox, one of two device
  // buffers beside the step's memory taken in turn, and moves it into the step's memory as the first
  // work of the next run(): the host does not wait, and may write while the previous step runs.
  void write_feed(int program, void* at, const void* host, std::size_t bytes);
  // Returns once the copies write_feed issued have read their host memory (which may then change).
  void wait_for_writes();
  // Whether every program takes its inputs through inboxes: then the next step's inputs may be
  // written while this one runs (run's `meanwhile`), even by another Executable.
  bool stages_inputs() const { return stages_inputs_; }
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
  // `meanwhile` runs on the calling thread once the devices were given the step, before waiting
  // for them (an error it raises is rethrown after the step ended, unless the step failed too):
  // where stages_inputs(), it may write the next step's inputs.
  void run(const std::function<void()>& meanwhile = nullptr);
  // Whether the last run's `meanwhile` returned while a device was still running the step: then
  // the time it took (waiting for the next batch, say) was hidden behind the step.
  bool meanwhile_hidden() const { return meanwhile_hidden_; }
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
  void make_inboxes(int program, Bound& b);
  void abort_communication(const std::string& why);
  void reset_communication();
  std::map<std::vector<int64_t>, std::shared_ptr<comm::Communicator>> groups_;  // subsets' communicators
  std::mutex error_mutex_;
  std::exception_ptr root_error_;
  std::shared_ptr<const compile::Plan> plan_;
  std::shared_ptr<comm::Communicator> comm_;
  Tracer tracer_;
  std::vector<std::unique_ptr<Bound>> bound_;
  std::vector<std::function<void()>> device_steps_;  // what each device worker runs for a step
  std::vector<uint64_t> tickets_;                    // each device's current step
  bool abandoned_ = false;                           // a step outlived the watchdog and may still run
  // Inboxes: writes go to set writing_ (0 or 1); run() hands it to the step and flips it.
  bool stages_inputs_ = false;
  int writing_ = 0;
  bool wrote_ = false;   // into set writing_, since the last run()
  bool fresh_ = true;    // set writing_ holds an older step's inputs: cleared by the first write
  bool meanwhile_hidden_ = false;
  std::vector<backend::Device*> devices_;
  std::vector<core::TaskThread*> device_workers_;  // the devices', shared
};

}  // namespace tandem::runtime
