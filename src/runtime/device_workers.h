// Persistent worker threads, one per extra device of a multi-device Executable: a step wakes
// them all, the caller runs device 0 itself, and the first error any device raised is rethrown.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem::runtime {

class DeviceWorkers {
 public:
  explicit DeviceWorkers(int count);
  ~DeviceWorkers();
  DeviceWorkers(const DeviceWorkers&) = delete;
  DeviceWorkers& operator=(const DeviceWorkers&) = delete;
  // Runs job(i) on worker i for every worker and `self` on the calling thread; waits for all.
  void run(const std::function<void(int)>& job, const std::function<void()>& self);

 private:
  void loop(int index);
  std::vector<std::thread> threads_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
};

}  // namespace tandem::runtime
