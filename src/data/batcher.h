// Mini-batch iteration over a Dataset for training and evaluation loops.
#pragma once

#include <cstdint>
#include <vector>

#include "tandem/augmentation.h"
#include "tandem/data.h"

namespace tandem::data {

// Splits a Dataset into batches; with shuffle, each epoch visits rows in a seeded permutation
// that depends only on (seed, epoch).
class Batcher {
 public:
  // batch_size >= 1. `transforms` change each gathered row of x in place (x must be float32), with
  // draws from (seed, epoch, the row's index in data).
  Batcher(const Dataset& data, int64_t batch_size, bool shuffle, uint64_t seed,
          std::vector<datasets::RowTransform> transforms = {});
  void start_epoch(int epoch);          // computes this epoch's order (identity if !shuffle)
  int64_t num_batches() const;          // ceil(size / batch_size)
  int64_t batch_rows(int64_t b) const;  // batch_size, or fewer for the last partial batch
  // Copies the rows of batch b, in this epoch's order, into x_out / y_out (raw buffers with room
  // for batch_rows(b) rows of x and of y, same dtypes as the dataset; y_out may be null to skip
  // the targets). No allocation here.
  void gather(int64_t b, void* x_out, void* y_out) const;

 private:
  void transform(std::byte* x_row, int64_t source_row) const;
  Dataset data_;  // shares the tensors' storage, so this copy is cheap and cannot dangle
  int64_t batch_size_;
  bool shuffle_;
  uint64_t seed_;
  std::size_t x_row_bytes_ = 0, y_row_bytes_ = 0;
  std::vector<int64_t> order_;
  std::vector<datasets::RowTransform> transforms_;
  Shape row_shape_;  // x's row shape, what each transform is told
  int epoch_ = 0;
};

}  // namespace tandem::data
