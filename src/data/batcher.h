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
  // The dataset's tensors in gather's order: every x, then every y.
  std::size_t columns() const { return columns_.size(); }
  std::size_t row_bytes(std::size_t column) const { return row_bytes_[column]; }  // as staged: after its RowMap
  // Copies the rows of batch b, in this epoch's order, into outs[c] for each column c (raw
  // buffers with room for batch_rows(b) rows, same dtypes as the dataset; a null one is skipped:
  // predict has no targets). No allocation here.
  void gather(int64_t b, const std::vector<void*>& outs) const;
  void gather(int64_t b, void* x_out, void* y_out) const { gather(b, std::vector<void*>{x_out, y_out}); }  // one x, one y

 private:
  void transform(std::byte* x_row, int64_t source_row) const;
  Dataset data_;  // shares the tensors' storage, so this copy is cheap and cannot dangle
  int64_t batch_size_;
  bool shuffle_;
  uint64_t seed_;
  std::vector<Tensor> columns_;
  std::vector<const RowMap*> maps_;             // per column, null when unmapped (into data_)
  std::vector<std::size_t> source_bytes_, row_bytes_;  // per column: a source row, a staged row
  std::vector<int64_t> order_;
  std::vector<datasets::RowTransform> transforms_;
  Shape row_shape_;  // x's row shape, what each transform is told
  int epoch_ = 0;
};

}  // namespace tandem::data
