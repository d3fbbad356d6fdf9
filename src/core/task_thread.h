// A thread of its own that runs the tasks posted to it one at a time, in the order posted: a
// device's worker, a device's communication thread, the batch prefetcher. Posting and waiting
// allocate nothing: a task is a function the poster keeps alive until the task has finished.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/handoff.h"

namespace tandem::core {

class TaskThread {
 public:
  // At most `capacity` tasks may be unfinished at once. After running a task the thread spins
  // `idle_spin` for the next one before it sleeps.
  TaskThread(int capacity, Clock::duration idle_spin);
  ~TaskThread();  // runs what was posted, then joins
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  // Queues `task` and returns its ticket (0, 1, 2, ... in posting order).
  uint64_t post(const std::function<void()>& task);
  // Waits until the task of `ticket` and those before it have run: spins `spin`, then sleeps.
  // Returns false if `deadline` passes first. Rethrows the first exception a task up to `ticket`
  // threw that no earlier wait rethrew.
  bool wait(uint64_t ticket, Clock::time_point deadline, Clock::duration spin = {});
  bool finished(uint64_t ticket) const { return finished_.load(std::memory_order_acquire) > ticket; }
  uint64_t posted() const { return posted_.load(std::memory_order_acquire); }
  // How many TaskThreads this process has started: lets tests check who makes threads.
  static uint64_t started();

 private:
  void loop();

  std::vector<const std::function<void()>*> ring_;
  std::atomic<uint64_t> posted_{0}, finished_{0};
  std::atomic<bool> stop_{false};
  Clock::duration idle_spin_;
  Handoff work_, done_;
  std::mutex post_mutex_;  // posters may be several threads

  std::atomic<bool> has_error_{false};
  std::mutex error_mutex_;
  uint64_t error_ticket_ = 0;
  std::exception_ptr error_;

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace tandem::core
