// One compiled step's collectives on a device's communication thread (runtime/device_threads.h),
// run in the order they are started, so they overlap the device's compute. Slots are fixed when a
// Plan is bound; starting and waiting allocate nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_context.h"
#include "core/task_thread.h"

namespace tandem::runtime {

class Tracer;

class CommWorker final : public comm::CommQueue {
 public:
  CommWorker(std::string device, core::TaskThread& thread, Tracer* tracer, int track);
  ~CommWorker() override;
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  int add_slot(std::function<void()> work, std::string label) override;  // at bind time, before any start
  void start(int slot) override;
  // Rethrows what the collective threw (its own timeout, say); raises TimeoutError naming the
  // device and the collective when it has not finished within the watchdog's limit.
  void wait(int slot) override;
  // Waits until every started collective has finished (after a failure), dropping their errors;
  // raises TimeoutError like wait().
  void drain();

 private:
  struct Slot {
    std::function<void()> run;  // the collective, traced
    std::string label;
    uint64_t ticket = 0;
  };
  [[noreturn]] void timed_out(uint64_t ticket) const;
  std::string device_;
  Tracer* tracer_;
  int track_;
  std::vector<Slot> slots_;
  core::TaskThread* thread_;  // the device's, shared with every other step on it
  bool started_ = false;
};

}  // namespace tandem::runtime
