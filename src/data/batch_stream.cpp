// tandem::batches: fit's batcher and prefetcher, with the staged columns copied out as tensors.
#include <cstring>
#include <string>

#include "data/batcher.h"
#include "data/prefetcher.h"
#include "tandem/batches.h"
#include "tandem/errors.h"

namespace tandem {

struct BatchStream::Impl {
  Impl(const Dataset& data, const BatchOptions& o)
      : batcher(data, o.batch_size, o.shuffle, o.seed, o.transforms),
        prefetcher(batcher, std::vector<bool>(batcher.columns(), true)) {
    for (std::size_t i = 0; i < data.num_x(); ++i) types.push_back(data.x_row(i));
    for (std::size_t i = 0; i < data.num_y(); ++i) types.push_back(data.y_row(i));
    batcher.start_epoch(o.epoch);
    prefetcher.start_epoch(0);
  }
  data::Batcher batcher;
  data::Prefetcher prefetcher;  // after the batcher: it reads it
  std::vector<TensorType> types;  // per column, a row's
  std::size_t num_x = 0;
  int64_t next = 0;
};

BatchStream::BatchStream(const Dataset& data, BatchOptions options) {
  if (options.batch_size < 1) throw ValueError("batches: batch_size must be >= 1, got " + std::to_string(options.batch_size));
  impl_ = std::make_unique<Impl>(data, options);
  impl_->num_x = data.num_x();
}
BatchStream::~BatchStream() = default;
BatchStream::BatchStream(BatchStream&&) noexcept = default;
BatchStream& BatchStream::operator=(BatchStream&&) noexcept = default;

int64_t BatchStream::size() const { return impl_->batcher.num_batches(); }

std::optional<Batch> BatchStream::next() {
  Impl& s = *impl_;
  if (s.next >= s.batcher.num_batches()) return std::nullopt;
  const int64_t b = s.next++, rows = s.batcher.batch_rows(b);
  Batch batch;
  batch.index = b;
  for (std::size_t c = 0; c < s.types.size(); ++c) {
    Tensor t(s.types[c].shape.with_batch(rows), s.types[c].dtype);
    if (t.bytes()) std::memcpy(t.raw(), s.prefetcher.column(b, c), t.bytes());
    (c < s.num_x ? batch.x : batch.y).push_back(std::move(t));
  }
  s.prefetcher.release(b);
  return batch;
}

BatchStream batches(const Dataset& data, BatchOptions options) { return BatchStream(data, std::move(options)); }

}  // namespace tandem
