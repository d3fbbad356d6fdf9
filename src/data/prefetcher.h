// Stages batches on decode threads while the current step runs: `prefetch + 1` staging slots
// (batch b lives in slot b % slots until the caller releases it), each batch's rows split over
// the decode threads, every row at the place the epoch's order gives it. A source of whole
// batches makes each batch on one thread (b % threads), so the threads work on different batches.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/task_thread.h"
#include "data/batcher.h"

namespace tandem::data {

// Row ranges [begin, end) of a batch of `rows` rows that this process feeds to its devices (a
// worker of several reads only its own rows).
using RowRanges = std::vector<std::pair<int64_t, int64_t>>;
using RowSelect = std::function<RowRanges(int64_t rows)>;
// Where the staging slots come from: the memory of the device the batches go to (page-locked for
// a GPU, so that its copies read the slots directly and asynchronously).
using StagingAllocator = std::function<std::shared_ptr<std::byte>(std::size_t bytes)>;  // owns what it points at

class Prefetcher {
 public:
  // Stages the columns of `batches` whose `wanted` entry is true (predict skips the targets),
  // with the threads and depth of batches.pipeline(), in slots from `allocate` (ordinary host
  // memory when null).
  Prefetcher(const Batcher& batches, const std::vector<bool>& wanted, const StagingAllocator& allocate = nullptr);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Before start_epoch: only these rows of each batch are staged (the others are left as they are).
  void select_rows(RowSelect select) { select_ = std::move(select); }
  // Waits for the gathers still running (an epoch left before its end), dropping their errors:
  // call it before Batcher::start_epoch changes the order they read.
  void drain();
  // After Batcher::start_epoch: begins gathering batches `first`, first + 1, ...
  void start_epoch(int64_t first = 0);
  // Waits until batch b is staged; valid until release(b). Rethrows a gather error (a DataError
  // naming the file); raises TimeoutError when the batch is not ready within the watchdog's limit.
  const std::byte* column(int64_t b, std::size_t c);
  void release(int64_t b);  // the slot may now take batch b + slots

  // Time column() spent waiting for batches since the last call, in seconds.
  double take_wait_seconds() { return std::exchange(waited_, 0.0); }
  // Samples skipped (skip_errors) in the batches released since the last call, and the first error.
  int64_t take_skipped(std::string* first_error);
  int threads() const { return active_; }  // decode threads the next batch is split over
  std::size_t staging_bytes() const { return staging_bytes_; }  // slots and scratch, allocated once
  // The most staging memory Prefetchers of this process held at once (tests assert the bound).
  static std::size_t peak_staging_bytes();
  static void reset_peak_staging_bytes();

 private:
  struct Slot {
    std::vector<std::shared_ptr<std::byte>> columns;
    std::vector<void*> outs;  // each column's buffer, null for the columns not wanted
    int64_t batch = -1;  // the batch gathered into it, or being gathered
    int parts = 0;       // the threads it is split over: first_thread, first_thread + 1, ...
    int first_thread = 0;
    RowRanges ranges;    // its rows to stage
    std::vector<uint64_t> tickets;            // per thread
    std::vector<std::function<void()>> part;  // per thread: its share of the rows (or the whole batch)
    std::atomic<int64_t> skipped{0};
    std::mutex error_mutex;
    std::string first_error;
    int error_part = 0;  // the part first_error came from
  };
  void gather_into(Slot& slot, int64_t b);
  void gather_part(Slot& slot, int thread);
  Slot& ready(int64_t b);
  void add_thread();
  const Batcher& batches_;
  int max_threads_, active_ = 1;
  bool autotuning_;
  RowSelect select_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::vector<std::byte>> scratch_;  // per thread
  std::size_t staging_bytes_ = 0;
  double waited_ = 0;
  // AUTOTUNE's window: batches released, and time waited, since it last decided.
  int64_t window_batches_ = 0;
  double window_waited_ = 0, window_start_ = 0;
  int64_t skipped_ = 0;
  std::string first_error_;
  std::vector<std::unique_ptr<core::TaskThread>> threads_;  // last: joined before the slots go
};

}  // namespace tandem::data
