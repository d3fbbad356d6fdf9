#include "data/prefetcher.h"

namespace tandem::data {

Prefetcher::Prefetcher(const Batcher& batches, std::size_t x_row, std::size_t y_row)
    : batches_(batches), x_row_(x_row), y_row_(y_row) {
  const auto rows = static_cast<std::size_t>(batches.num_batches() ? batches.batch_rows(0) : 0);
  for (Slot& s : slots_) s.x.resize(rows * x_row_), s.y.resize(rows * y_row_);  // once, for the largest batch
  thread_ = std::thread([this] { loop(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Prefetcher::start_epoch() {
  std::lock_guard lock(mutex_);
  for (int i = 0; i < 2; ++i) {
    slots_[i].batch = -1;
    slots_[i].wanted = i < batches_.num_batches() ? i : -1;
  }
  cv_.notify_all();
}

void Prefetcher::loop() {
  for (;;) {
    int slot = -1;
    int64_t b = -1;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || slots_[0].wanted >= 0 || slots_[1].wanted >= 0; });
      if (stop_) return;
      slot = slots_[0].wanted >= 0 && (slots_[1].wanted < 0 || slots_[0].wanted < slots_[1].wanted) ? 0 : 1;
      b = slots_[slot].wanted;
    }
    std::exception_ptr error;
    try {
      batches_.gather(b, slots_[slot].x.data(), y_row_ ? slots_[slot].y.data() : nullptr);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (error) error_ = error;
      if (slots_[slot].wanted == b) slots_[slot].wanted = -1, slots_[slot].batch = b;
    }
    cv_.notify_all();
  }
}

void Prefetcher::wait_ready(int64_t b) {
  std::unique_lock lock(mutex_);
  Slot& s = slots_[b % 2];
  cv_.wait(lock, [&] { return s.batch == b || error_; });
  if (error_) std::rethrow_exception(error_);
}

const std::byte* Prefetcher::x(int64_t b) {
  wait_ready(b);
  return slots_[b % 2].x.data();
}

const std::byte* Prefetcher::y(int64_t b) {
  wait_ready(b);
  return slots_[b % 2].y.data();
}

void Prefetcher::release(int64_t b) {
  std::lock_guard lock(mutex_);
  Slot& s = slots_[b % 2];
  s.batch = -1;
  s.wanted = b + 2 < batches_.num_batches() ? b + 2 : -1;
  cv_.notify_all();
}

}  // namespace tandem::data
