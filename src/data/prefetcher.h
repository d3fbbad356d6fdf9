// Gathers the next batch on a background thread while the current step runs. Two staging slots:
// batch b lives in slot b % 2 until the caller releases it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/task_thread.h"
#include "data/batcher.h"

namespace tandem::data {

class Prefetcher {
 public:
  Prefetcher(const Batcher& batches, std::size_t x_row_bytes, std::size_t y_row_bytes);
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  void start_epoch();  // after Batcher::start_epoch: begins gathering batches 0 and 1
  // Waits until batch b is staged; valid until release(b). Rethrows a gather error; raises
  // TimeoutError when the batch is not ready within the watchdog's limit.
  const std::byte* x(int64_t b);
  const std::byte* y(int64_t b);
  void release(int64_t b);  // the slot may now take batch b + 2

 private:
  struct Slot {
    std::vector<std::byte> x, y;
    int64_t batch = -1;  // the batch gathered into it, or being gathered
    uint64_t ticket = 0;
    std::function<void()> gather;
  };
  void gather_into(Slot& slot, int64_t b);
  Slot& ready(int64_t b);
  const Batcher& batches_;
  std::size_t y_row_;
  Slot slots_[2];
  core::TaskThread thread_;  // last: joined before the slots go
};

}  // namespace tandem::data
