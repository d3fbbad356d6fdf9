#include "core/task_thread.h"

#include <string>

#include "tandem/errors.h"

namespace tandem::core {

namespace {
std::atomic<uint64_t> threads_started{0};
}  // namespace

TaskThread::TaskThread(int capacity, Clock::duration idle_spin)
    : ring_(static_cast<std::size_t>(std::max(1, capacity)), nullptr), idle_spin_(idle_spin), thread_([this] { loop(); }) {
  threads_started.fetch_add(1, std::memory_order_relaxed);
}

uint64_t TaskThread::started() { return threads_started.load(std::memory_order_relaxed); }

TaskThread::~TaskThread() {
  stop_.store(true, std::memory_order_release);
  work_.notify();
  thread_.join();
}

uint64_t TaskThread::post(const std::function<void()>& task) {
  const std::lock_guard lock(post_mutex_);
  const uint64_t ticket = posted_.load(std::memory_order_relaxed);
  if (ticket - finished_.load(std::memory_order_acquire) >= ring_.size())
    throw Error("internal: more than " + std::to_string(ring_.size()) + " unfinished tasks posted to one thread");
  ring_[ticket % ring_.size()] = &task;
  posted_.store(ticket + 1, std::memory_order_release);
  work_.notify();
  return ticket;
}

bool TaskThread::wait(uint64_t ticket, Clock::time_point deadline, Clock::duration spin) {
  if (!done_.wait([&] { return finished(ticket); }, spin, deadline)) return false;
  if (has_error_.load(std::memory_order_acquire)) {
    const std::lock_guard lock(error_mutex_);
    if (error_ && error_ticket_ <= ticket) {
      std::exception_ptr e = std::move(error_);
      error_ = nullptr;
      has_error_.store(false, std::memory_order_relaxed);
      std::rethrow_exception(e);
    }
  }
  return true;
}

void TaskThread::loop() {
  uint64_t next = 0;
  for (;;) {
    work_.wait([&] { return posted_.load(std::memory_order_acquire) > next || stop_.load(std::memory_order_acquire); },
               idle_spin_, kNoDeadline);
    if (posted_.load(std::memory_order_acquire) == next) return;  // stopped, and nothing is left
    const std::function<void()>& task = *ring_[next % ring_.size()];
    try {
      task();
    } catch (...) {
      const std::lock_guard lock(error_mutex_);
      if (!error_) {  // the first one is the cause; later ones are usually its consequences
        error_ = std::current_exception();
        error_ticket_ = next;
        has_error_.store(true, std::memory_order_release);
      }
    }
    finished_.store(++next, std::memory_order_release);
    done_.notify();
  }
}

}  // namespace tandem::core
