// Test helpers for threaded code: a guard that turns a hang into a failure that says where it
// stopped, and busy threads that compete for the cores like a build running beside training.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tandem::testing {

// If not destroyed within `limit`, prints `what` and progress() and ends the process with status
// 1: a hang fails the test, and CI goes on, instead of waiting out its own time limit.
class HangGuard {
 public:
  HangGuard(std::string what, std::chrono::seconds limit, std::function<std::string()> progress)
      : thread_([this, what = std::move(what), limit, progress = std::move(progress)] {
          std::unique_lock lock(mutex_);
          if (cv_.wait_for(lock, limit, [&] { return disarmed_; })) return;
          std::fprintf(stderr, "HANG: %s did not finish within %lld s; it stopped at: %s\n", what.c_str(),
                       static_cast<long long>(limit.count()), progress().c_str());
          std::fflush(stderr);
          std::_Exit(1);
        }) {}
  ~HangGuard() {
    {
      std::lock_guard lock(mutex_);
      disarmed_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;
};

// Threads that spin until destroyed, like `sh -c 'while :; do :; done'` beside the program.
class BusyThreads {
 public:
  explicit BusyThreads(int count) {
    for (int i = 0; i < count; ++i)
      threads_.emplace_back([this] {
        volatile uint64_t x = 0;
        while (!stop_.load(std::memory_order_relaxed)) x = x + 1;
      });
  }
  ~BusyThreads() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace tandem::testing
