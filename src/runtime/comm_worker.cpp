#include "runtime/comm_worker.h"

#include "runtime/tracer.h"
#include "tandem/errors.h"

namespace tandem::runtime {

CommWorker::CommWorker(Tracer* tracer, int track) : tracer_(tracer), track_(track), thread_([this] { loop(); }) {}

CommWorker::~CommWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

int CommWorker::add_slot(std::function<void()> work, std::string label) {
  std::lock_guard lock(mutex_);
  slots_.push_back({std::move(work), std::move(label), false, nullptr});
  queue_.resize(slots_.size());
  return static_cast<int>(slots_.size()) - 1;
}

void CommWorker::start(int slot) {
  {
    std::lock_guard lock(mutex_);
    if (queued_ == queue_.size()) throw Error("internal: communication slot started twice without a wait");
    slots_[static_cast<std::size_t>(slot)].done = false;
    slots_[static_cast<std::size_t>(slot)].error = nullptr;  // left over from an abandoned step
    queue_[tail_] = slot;
    tail_ = (tail_ + 1) % queue_.size();
    ++queued_;
  }
  cv_.notify_all();
}

void CommWorker::wait(int slot) {
  std::unique_lock lock(mutex_);
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  cv_.wait(lock, [&] { return s.done; });  // the collective itself times out, never this wait
  if (s.error) {
    std::exception_ptr e = s.error;
    s.error = nullptr;
    std::rethrow_exception(e);
  }
}

void CommWorker::drain() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return queued_ == 0 && !busy_; });
}

void CommWorker::loop() {
  for (;;) {
    int slot;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || queued_ > 0; });
      if (stop_) return;
      slot = queue_[head_];
      head_ = (head_ + 1) % queue_.size();
      --queued_;
      busy_ = true;
    }
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    const double t0 = tracer_ ? tracer_->now() : 0;
    std::exception_ptr error;
    try {
      s.work();
    } catch (...) {
      error = std::current_exception();
    }
    if (tracer_) tracer_->record(track_, s.label.c_str(), t0, tracer_->now());
    {
      std::lock_guard lock(mutex_);
      s.error = error;
      s.done = true;
      busy_ = false;
    }
    cv_.notify_all();
  }
}

}  // namespace tandem::runtime
