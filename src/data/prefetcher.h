// Gathers the next batch on a background thread while the current step runs. Two staging slots:
// batch b lives in slot b % 2 until the caller releases it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "data/batcher.h"

namespace tandem::data {

class Prefetcher {
 public:
  Prefetcher(const Batcher& batches, std::size_t x_row_bytes, std::size_t y_row_bytes);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  void start_epoch();  // after Batcher::start_epoch: begins gathering batches 0 and 1
  // Waits until batch b is staged; valid until release(b). Rethrows a gather error.
  const std::byte* x(int64_t b);
  const std::byte* y(int64_t b);
  void release(int64_t b);  // the slot may now take batch b + 2

 private:
  void loop();
  void wait_ready(int64_t b);
  const Batcher& batches_;
  std::size_t x_row_, y_row_;
  struct Slot {
    std::vector<std::byte> x, y;
    int64_t batch = -1;  // staged batch, -1 when empty
    int64_t wanted = -1; // batch to gather next, -1 when none
  };
  Slot slots_[2];
  bool stop_ = false;
  std::exception_ptr error_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace tandem::data
