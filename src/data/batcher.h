// Mini-batch iteration over a Dataset (in memory or streamed from a Source) for training and
// evaluation loops.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tandem/augmentation.h"
#include "tandem/data.h"

namespace tandem::data {

// A weight for each row computed from its staged first target row (class_weight on streamed
// data), staged as one float32 column after the dataset's own.
using RowWeight = std::function<float(const std::byte* y_row)>;

// Splits a Dataset into batches; with shuffle, each epoch visits rows in a seeded permutation
// that depends only on (seed, epoch). A streamed dataset's rows are read from its Source in that
// same order, so the batches are the same bytes as those of an in-memory dataset of the same samples.
class Batcher {
 public:
  // batch_size >= 1. `transforms` change each gathered row of x in place (x must be float32), with
  // draws from (seed, epoch, the row's index in data).
  Batcher(const Dataset& data, int64_t batch_size, bool shuffle, uint64_t seed,
          std::vector<datasets::RowTransform> transforms = {}, RowWeight row_weight = {});
  void start_epoch(int epoch);          // computes this epoch's order (identity if !shuffle)
  int64_t num_batches() const;          // ceil(size / batch_size)
  int64_t batch_rows(int64_t b) const;  // batch_size, or fewer for the last partial batch
  // The dataset's columns in gather's order: every x, then every y (then the row weight).
  std::size_t columns() const { return row_bytes_.size(); }
  std::size_t targets() const { return data_.num_y() + (row_weight_ ? 1 : 0); }  // the last columns
  std::size_t row_bytes(std::size_t column) const { return row_bytes_[column]; }  // as staged: after its RowMap
  const InputPipelineOptions& pipeline() const { return data_.pipeline(); }
  bool streamed() const { return data_.streamed(); }
  // The source makes whole batches (Source::batch_size): each batch is gathered by one call, on
  // one thread, in the source's order.
  bool whole_batches() const { return whole_batches_; }
  std::string describe() const;  // "the dataset" or the source's own description
  // Memory one gathering thread needs of its own (a streamed sample's columns as read, or a whole
  // batch's columns that are mapped or not staged), bytes.
  std::size_t scratch_bytes() const { return scratch_bytes_; }

  // Copies rows [begin, end) of batch b, in this epoch's order, into outs[c] for each column c
  // (raw buffers with room for batch_rows(b) rows, same dtypes as staged; a null one is skipped:
  // predict has no targets); each row lands at its own place, so several threads may gather
  // disjoint ranges of one batch at once, each with its own `scratch` (scratch_bytes()). No
  // allocation here. Of a source of whole batches only the whole batch may be asked [0, rows).
  // With the dataset's skip_errors, a sample whose read raises DataError is
  // replaced by the next readable one of the order: returns how many were, and the first error
  // in *first_error.
  int64_t gather(int64_t b, const std::vector<void*>& outs, int64_t begin, int64_t end, std::byte* scratch,
                 std::string* first_error = nullptr) const;
  // Every row of batch b, on the calling thread.
  void gather(int64_t b, const std::vector<void*>& outs) const;
  void gather(int64_t b, void* x_out, void* y_out) const { gather(b, std::vector<void*>{x_out, y_out}); }  // one x, one y

 private:
  int64_t sample(int64_t position) const {  // the dataset row at a position of this epoch's order
    return shuffle_ ? order_[static_cast<std::size_t>(position)] : position;
  }
  void copy_rows(const std::vector<void*>& outs, int64_t first, int64_t begin, int64_t end) const;
  int64_t read_rows(const std::vector<void*>& outs, int64_t first, int64_t begin, int64_t end, std::byte* scratch,
                    std::string* first_error) const;
  void read_row(int64_t sample, int64_t r, const std::vector<void*>& outs, std::byte* scratch) const;
  void read_batch(int64_t b, const std::vector<void*>& outs, std::byte* scratch) const;
  template <class Read>
  void read_into(int64_t r, int64_t rows, const std::vector<void*>& outs, std::byte* scratch, const Read& read) const;
  void transform(std::byte* x_row, int64_t source_row) const;
  Dataset data_;  // shares the tensors' storage (or the source), so this copy is cheap and cannot dangle
  int64_t batch_size_;
  bool shuffle_;
  bool whole_batches_ = false;
  uint64_t seed_;
  std::vector<Tensor> columns_;                 // in memory: the tensors
  std::vector<const RowMap*> maps_;             // per column, null when unmapped (into data_)
  std::vector<std::size_t> source_bytes_, row_bytes_;  // per column: a source row, a staged row
  std::vector<std::size_t> scratch_at_;         // streamed: where each column is read into scratch
  std::size_t scratch_bytes_ = 0;
  std::vector<int64_t> order_;
  std::vector<datasets::RowTransform> transforms_;
  RowWeight row_weight_;
  std::size_t n_x_ = 0;  // x columns: the first target column follows them
  Shape row_shape_;  // x's row shape, what each transform is told
  int epoch_ = 0;
};

}  // namespace tandem::data
