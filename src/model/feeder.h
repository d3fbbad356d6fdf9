// What fit, evaluate and predict share: the verbosity the progress bar gets, and the Feeder that
// copies staged batches into a step's inputs.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>

#include "backend/device.h"
#include "data/batcher.h"
#include "data/prefetcher.h"
#include "distribute/strategy.h"
#include "model/model_impl.h"
#include "runtime/executable.h"

namespace tandem::detail {

// verbose 1's live bar redraws its line with carriage returns, which in a log file or a pipe is
// one long line of repeats: there, as Keras's verbose="auto" does, it prints one line per epoch.
// Of several workers, only the chief prints.
inline int progress_verbosity(int verbose, const distribute::Strategy* strategy) {
  if (strategy && strategy->workers() > 1 && !distribute::this_worker().chief()) return 0;
  return verbose == 1 && !isatty(fileno(stdout)) ? 2 : verbose;
}

// The callbacks of an evaluate or predict loop over `steps` batches, each told of the model and the
// run: the progress bar first when `verbose` asks for one.
inline std::vector<CallbackPtr> loop_callbacks(std::vector<CallbackPtr> callbacks, int verbose, int64_t steps, Model* model) {
  if (verbose > 0) {
    auto bar = std::make_shared<ProgbarLogger>(std::cout);
    bar->set_test_steps(steps);
    callbacks.insert(callbacks.begin(), bar);
  }
  for (auto& c : callbacks) c->set_model(model), c->set_params({1, steps, verbose});
  return callbacks;
}

// The rows of a batch that this process's programs of `step` read (every row, unless the strategy
// spreads the batch over several workers), merged into ascending ranges.
inline data::RowRanges rows_read(const CompiledStep& step) {
  data::RowRanges r;
  auto add = [&](const std::vector<std::vector<CompiledStep::Feed>>& feeds) {
    for (const auto& per_program : feeds)
      for (const CompiledStep::Feed& f : per_program)
        if (!f.at.empty())
          for (int64_t piece = 0; piece < step.pieces; ++piece) r.emplace_back(piece * step.micro_rows + f.offset, piece * step.micro_rows + f.offset + f.rows);
  };
  add(step.x), add(step.y);
  std::sort(r.begin(), r.end());
  data::RowRanges merged;
  for (const auto& [b, e] : r) {
    if (!merged.empty() && b <= merged.back().second) merged.back().second = std::max(merged.back().second, e);
    else merged.emplace_back(b, e);
  }
  return merged;
}

// Staging slots from `device`'s own host memory (Device::allocate_host).
inline data::StagingAllocator host_memory_of(backend::Device& device) {
  return [&device](std::size_t bytes) {
    auto buffer = std::make_shared<backend::HostBuffer>(device.allocate_host(bytes));
    return std::shared_ptr<std::byte>(buffer, buffer->data());  // owns the buffer, points at its memory
  };
}

// The staging slots for batches that go to `strategy`'s devices: page-locked memory when one of
// them copies asynchronously (a GPU: its copies then read the slots directly, without the host
// waiting), ordinary memory otherwise.
inline data::StagingAllocator staging_memory(const distribute::Strategy& strategy) {
  for (const std::string& name : strategy.devices()) {
    backend::Device& device = backend::open_device(name, strategy.threads_per_device());
    if (device.copies_asynchronously()) return host_memory_of(device);
  }
  return nullptr;
}

// Copies batch b, staged by the decode threads, into the step's inputs: each device gets the
// rows of the batch its program reads. A device that copies asynchronously gets them in its
// step's inboxes (runtime::Executable::write_feed), which it may do while the previous step runs.
class Feeder {
 public:
  Feeder(const data::Batcher& batches, bool with_targets, const data::StagingAllocator& staging = nullptr)
      : batches_(batches), prefetch_(batches, wanted(batches, with_targets), staging), with_targets_(with_targets) {}
  // A worker of several stages only the rows its devices read: `step_for(rows)` gives the step
  // that runs batches of that many rows (compiled before the epoch starts).
  void select_rows(const distribute::Strategy& strategy, const std::function<const CompiledStep&(int64_t rows)>& step_for) {
    if (strategy.workers() == 1 || batches_.num_batches() == 0) return;
    std::map<int64_t, data::RowRanges> by_rows;
    for (const int64_t rows : {batches_.batch_rows(0), batches_.batch_rows(batches_.num_batches() - 1)}) by_rows[rows] = rows_read(step_for(rows));
    prefetch_.select_rows([by_rows = std::move(by_rows)](int64_t rows) { return by_rows.at(rows); });
  }
  void drain() { prefetch_.drain(); }  // before the batcher's next epoch: no gather reads its order then
  void start_epoch(int64_t first = 0) { prefetch_.start_epoch(first); }  // the epoch's batches from `first` on
  data::Prefetcher& prefetcher() { return prefetch_; }
  // Batch b as the index-th batch of the step: the columns are the inputs, then the targets.
  void feed(int64_t b, const CompiledStep& step, int64_t index = 0) {
    const std::size_t n_x = step.x.size();
    for (std::size_t i = 0; i < n_x; ++i) step.write(step.x[i], prefetch_.column(b, i), batches_.row_bytes(i), index);
    if (with_targets_)
      for (std::size_t i = 0; i < step.y.size(); ++i) step.write(step.y[i], prefetch_.column(b, n_x + i), batches_.row_bytes(n_x + i), index);
    step.exe->wait_for_writes();  // the slot is refilled once released: its copies must have read it
    prefetch_.release(b);
  }

 private:
  // predict's datasets carry unused target columns (a Dataset always has one), not staged.
  static std::vector<bool> wanted(const data::Batcher& batches, bool with_targets) {
    std::vector<bool> w(batches.columns(), true);
    if (!with_targets) std::fill(w.begin() + static_cast<std::ptrdiff_t>(batches.columns() - batches.targets()), w.end(), false);
    return w;
  }
  const data::Batcher& batches_;
  data::Prefetcher prefetch_;
  bool with_targets_;
};

// Runs `step`; where its devices take inputs through inboxes (GPUs), batch `next` is written into
// the inboxes of its step — `next_step()`, looked up before `step` runs, since compiling reads the
// variables — while `step` runs, and `fed` says so. Without a next batch (`next_step` empty), or
// on a device that copies synchronously, `step` just runs.
inline void run_feeding_next(const CompiledStep& step, Feeder& feeder, int64_t next, const std::function<CompiledStep&()>& next_step, bool& fed) {
  const CompiledStep* then = next_step && step.exe->stages_inputs() ? &next_step() : nullptr;
  if (!then || !then->exe->stages_inputs()) return step.exe->run();
  step.exe->run([&] {
    feeder.feed(next, *then, 0);
    fed = true;
  });
}
}  // namespace tandem::detail
