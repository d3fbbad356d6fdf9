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
  // Stages the columns of `batches` whose `wanted` entry is true (predict skips the targets).
  Prefetcher(const Batcher& batches, const std::vector<bool>& wanted);
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // After Batcher::start_epoch: begins gathering batches `first` and first + 1.
  void start_epoch(int64_t first = 0);
  // Waits until batch b is staged; valid until release(b). Rethrows a gather error; raises
  // TimeoutError when the batch is not ready within the watchdog's limit.
  const std::byte* column(int64_t b, std::size_t c);
  void release(int64_t b);  // the slot may now take batch b + 2

 private:
  struct Slot {
    std::vector<std::vector<std::byte>> columns;
    std::vector<void*> outs;  // each column's buffer, null for the columns not wanted
    int64_t batch = -1;  // the batch gathered into it, or being gathered
    uint64_t ticket = 0;
    std::function<void()> gather;
  };
  void gather_into(Slot& slot, int64_t b);
  Slot& ready(int64_t b);
  const Batcher& batches_;
  Slot slots_[2];
  core::TaskThread thread_;  // last: joined before the slots go
};

}  // namespace tandem::data
