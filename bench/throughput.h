// What the throughput benchmarks share: one epoch of fit, timed after a warm-up that compiles
// the step.
#pragma once

#include <tandem/tandem.h>

#include <chrono>

// Samples per second of fit over `train` (its rows rounded down to whole batches), after
// `warm_up` batches that compile the step and fill the caches.
inline double training_throughput(tandem::Model& model, const tandem::Dataset& train, int64_t batch, int64_t warm_up) {
  model.fit(train.slice(0, warm_up * batch), {.batch_size = batch, .verbose = 0});
  const int64_t rows = train.size() / batch * batch;
  const auto t0 = std::chrono::steady_clock::now();
  model.fit(train.slice(0, rows), {.batch_size = batch, .verbose = 0});
  return double(rows) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
