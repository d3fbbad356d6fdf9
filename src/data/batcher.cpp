#include "data/batcher.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include "core/random.h"
#include "tandem/errors.h"

namespace tandem::data {
namespace {
// Zero-byte rows can come with null storage, which memcpy must not see.
void copy(std::byte* dst, const std::byte* src, std::size_t n) {
  if (n) std::memcpy(dst, src, n);
}
}  // namespace

Batcher::Batcher(const Dataset& data, int64_t batch_size, bool shuffle, uint64_t seed,
                 std::vector<datasets::RowTransform> transforms)
    : data_(data), batch_size_(batch_size), shuffle_(shuffle), seed_(seed), transforms_(std::move(transforms)),
      row_shape_(data_.x_row().shape) {
  if (batch_size < 1) throw ValueError("Batcher: batch_size must be >= 1, got " + std::to_string(batch_size));
  if (!transforms_.empty() && data_.xs().size() > 1)
    throw ValueError("transforms: they change the rows of one input, but the model has " + std::to_string(data_.xs().size()));
  if (!transforms_.empty() && data_.x_row().dtype != DType::F32)
    throw ValueError(std::string("transforms: they change float32 x, but x is ") + dtype_name(data_.x_row().dtype) +
                     " (the model's input dtype)");
  columns_ = data_.xs();
  columns_.insert(columns_.end(), data_.ys().begin(), data_.ys().end());
  for (std::size_t i = 0; i < data_.xs().size(); ++i) maps_.push_back(data_.x_map(i) ? &*data_.x_map(i) : nullptr);
  for (std::size_t i = 0; i < data_.ys().size(); ++i) maps_.push_back(data_.y_map(i) ? &*data_.y_map(i) : nullptr);
  const auto n = static_cast<std::size_t>(data_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    source_bytes_.push_back(n ? columns_[c].bytes() / n : 0);
    row_bytes_.push_back(maps_[c] ? static_cast<std::size_t>(maps_[c]->row.shape.num_elements()) * dtype_size(maps_[c]->row.dtype)
                                  : source_bytes_.back());
  }
  order_.resize(static_cast<std::size_t>(data_.size()));
  start_epoch(0);
}

void Batcher::start_epoch(int epoch) {
  epoch_ = epoch;
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (!shuffle_) return;
  // Our own Fisher-Yates: std::shuffle's output differs between standard libraries.
  rng::Stream rs(seed_, 1000 + static_cast<uint64_t>(static_cast<int64_t>(epoch)));
  for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rs.below(i)]);
}

int64_t Batcher::num_batches() const { return (data_.size() + batch_size_ - 1) / batch_size_; }

int64_t Batcher::batch_rows(int64_t b) const {
  if (b < 0 || b >= num_batches())
    throw ValueError("Batcher: batch " + std::to_string(b) + " outside [0, " + std::to_string(num_batches()) + ")");
  return std::min(batch_size_, data_.size() - b * batch_size_);
}

void Batcher::gather(int64_t b, const std::vector<void*>& outs) const {
  const int64_t rows = batch_rows(b);
  const int64_t first = b * batch_size_;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    auto* dst = static_cast<std::byte*>(outs.at(c));
    if (!dst) continue;
    const auto* src = static_cast<const std::byte*>(columns_[c].raw());
    const std::size_t row = row_bytes_[c];
    if (maps_[c]) {  // each row through its map, from where the order puts it
      for (int64_t r = 0; r < rows; ++r) {
        const auto at = static_cast<std::size_t>(shuffle_ ? order_[static_cast<std::size_t>(first + r)] : first + r);
        maps_[c]->apply(src + at * source_bytes_[c], dst + static_cast<std::size_t>(r) * row);
      }
      continue;
    }
    if (!shuffle_) {  // rows are contiguous, so one copy
      copy(dst, src + row * static_cast<std::size_t>(first), row * static_cast<std::size_t>(rows));
      continue;
    }
    for (int64_t r = 0; r < rows; ++r)
      copy(dst + static_cast<std::size_t>(r) * row, src + static_cast<std::size_t>(order_[static_cast<std::size_t>(first + r)]) * row, row);
  }
  if (transforms_.empty()) return;
  auto* x = static_cast<std::byte*>(outs.at(0));
  for (int64_t r = 0; r < rows; ++r) transform(x + static_cast<std::size_t>(r) * row_bytes_[0], order_[static_cast<std::size_t>(first + r)]);
}

void Batcher::transform(std::byte* x_row, int64_t source_row) const {
  std::span<float> x(reinterpret_cast<float*>(x_row), row_bytes_[0] / sizeof(float));
  std::mt19937_64 random(rng::hash(seed_, 0x617567ull /* "aug" */, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(source_row)));
  for (const datasets::RowTransform& t : transforms_) t(x, row_shape_, random);
}

}  // namespace tandem::data
