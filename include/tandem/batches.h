// Iterating a Dataset's batches without a model, as fit stages them: for inspecting a pipeline,
// measuring it, or a training loop of one's own.
//
//   for (const tandem::Batch& b : tandem::batches(data, {.batch_size = 128, .shuffle = true, .seed = 1}))
//     use(b.x[0], b.y[0]);
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "tandem/augmentation.h"
#include "tandem/data.h"
#include "tandem/tensor.h"

namespace tandem {

// One batch: the inputs, then the targets, each a tensor of the batch's rows (after the dataset's
// row maps and the transforms). They are copies: a batch stays valid after the next is read.
struct Batch {
  std::vector<Tensor> x, y;
  int64_t index = 0;  // its place in the epoch
};

struct BatchOptions {
  int64_t batch_size = 32;  // not used for a source of whole batches (datasets::from_batch_function)
  bool shuffle = false;     // each epoch's order is a function of (seed, epoch) alone
  uint64_t seed = 0;
  int epoch = 0;            // the epoch whose order and transform draws to give
  std::vector<datasets::RowTransform> transforms;  // as fit's: x float32, one input
};

// The batches of one epoch, staged by the dataset's pipeline (its decode threads and prefetch
// depth) while the caller works on the previous one. An input range: iterate it once.
class BatchStream {
 public:
  BatchStream(const Dataset& data, BatchOptions options);
  ~BatchStream();
  BatchStream(BatchStream&&) noexcept;
  BatchStream& operator=(BatchStream&&) noexcept;

  int64_t size() const;       // batches in the epoch
  std::optional<Batch> next();  // the next batch, or none after the last

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;
    iterator() = default;
    explicit iterator(BatchStream* stream) : stream_(stream), current_(stream->next()) {}
    const Batch& operator*() const { return *current_; }
    const Batch* operator->() const { return &*current_; }
    iterator& operator++() {
      current_ = stream_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(const iterator& o) const { return !current_ && !o.current_; }  // only the end compares equal

   private:
    BatchStream* stream_ = nullptr;
    std::optional<Batch> current_;
  };
  iterator begin() { return iterator(this); }
  iterator end() { return {}; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The batches of `data` for one epoch (ValueError for a batch_size below 1 or bad transforms).
BatchStream batches(const Dataset& data, BatchOptions options = {});

}  // namespace tandem
