// Data sets read as training goes: the Source a streaming Dataset reads its samples from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tandem/errors.h"
#include "tandem/tensor.h"

namespace tandem {

// One sample's columns: its inputs' types, then its targets' (batch dimension excluded).
struct SampleType {
  std::vector<TensorType> x, y;
  std::size_t columns() const { return x.size() + y.size(); }
  const TensorType& column(std::size_t c) const { return c < x.size() ? x.at(c) : y.at(c - x.size()); }
};

// A data set that need not fit in memory, read one sample at a time by index as batches are
// staged: image files decoded lazily, HDF5 read by chunks, CSV lines, samples in tar shards, or a
// user's own (the role of keras.utils.PyDataset). Random access by index is what keeps the order a
// function of (seed, epoch) alone, whatever the thread timing, batch size or device count, and what
// lets a resumed epoch skip samples without reading them.
//
// The pipeline calls read() from several decode threads at once, each with a different index, so
// read must be safe to call concurrently (open files per call or per thread, or lock).
class Source {
 public:
  virtual ~Source() = default;
  virtual int64_t size() const = 0;            // the number of samples
  virtual SampleType sample_type() const = 0;  // the same for every sample
  // Writes sample `index` (0 <= index < size()) into `out`: one buffer per column, every x then
  // every y, each with room for one sample of its column's type. A sample that cannot be read
  // raises DataError naming the file (and the member of a shard, the line of a CSV, ...).
  virtual void read(int64_t index, std::span<std::byte* const> out) const = 0;
  // What the source reads, for errors and logs: `image folder "/data/train"`.
  virtual std::string describe() const = 0;

  // A source that makes whole batches at once (as keras.utils.PyDataset's __getitem__ does: a
  // block read from a file, a vectorised generator) returns their row count here, and fit,
  // evaluate and predict then take their batches from it as they are: batch b holds samples
  // [b * batch_size(), ...) — every batch full but the last — and the options' batch_size and
  // shuffle are not used (Keras ignores them for a PyDataset too). 0: samples are read one by one.
  virtual int64_t batch_size() const { return 0; }
  // Writes batch `batch` (`rows` rows) into `out`: one buffer per column, as read() but with room
  // for `rows` samples each, rows first. Called only when batch_size() > 0, from several decode
  // threads at once (each with its own batch).
  virtual void read_batch(int64_t batch, int64_t rows, std::span<std::byte* const> out) const;
};

// A sample that cannot be read: a missing, unreadable or corrupt file, a truncated shard. The
// message names the file; `path` holds it for code that skips such samples and counts them.
class DataError : public Error {
 public:
  DataError(std::string path, const std::string& what) : Error(what), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tandem
