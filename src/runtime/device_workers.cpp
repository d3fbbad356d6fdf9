#include "runtime/device_workers.h"

namespace tandem::runtime {

DeviceWorkers::DeviceWorkers(int count) {
  for (int i = 0; i < count; ++i) threads_.emplace_back([this, i] { loop(i); });
}

DeviceWorkers::~DeviceWorkers() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void DeviceWorkers::loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(index);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    if (error && !error_) error_ = error;
    if (--running_ == 0) done_.notify_all();
  }
}

void DeviceWorkers::run(const std::function<void(int)>& job, const std::function<void()>& self) {
  {
    std::lock_guard lock(mutex_);
    job_ = &job;
    running_ = static_cast<int>(threads_.size());
    error_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr mine;
  try {
    self();
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return running_ == 0; });
  if (mine) std::rethrow_exception(mine);
  if (error_) std::rethrow_exception(error_);
}

}  // namespace tandem::runtime
