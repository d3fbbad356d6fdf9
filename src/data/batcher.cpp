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
constexpr std::size_t kAlign = 64;  // each column's scratch row starts on its own cache line
std::size_t aligned(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

Batcher::Batcher(const Dataset& data, int64_t batch_size, bool shuffle, uint64_t seed,
                 std::vector<datasets::RowTransform> transforms, RowWeight row_weight)
    : data_(data), batch_size_(batch_size), shuffle_(shuffle), seed_(seed), transforms_(std::move(transforms)),
      row_weight_(std::move(row_weight)), n_x_(data_.num_x()), row_shape_(data_.x_row().shape) {
  if (batch_size < 1) throw ValueError("Batcher: batch_size must be >= 1, got " + std::to_string(batch_size));
  if (!transforms_.empty() && data_.num_x() > 1)
    throw ValueError("transforms: they change the rows of one input, but the model has " + std::to_string(data_.num_x()));
  if (!transforms_.empty() && data_.x_row().dtype != DType::F32)
    throw ValueError(std::string("transforms: they change float32 x, but x is ") + dtype_name(data_.x_row().dtype) +
                     " (the model's input dtype)");
  for (std::size_t i = 0; i < data_.num_x(); ++i) maps_.push_back(data_.x_map(i) ? &*data_.x_map(i) : nullptr);
  for (std::size_t i = 0; i < data_.num_y(); ++i) maps_.push_back(data_.y_map(i) ? &*data_.y_map(i) : nullptr);
  const auto n = static_cast<std::size_t>(data_.size());
  if (data_.streamed()) {
    const SampleType type = data_.source()->sample_type();
    if (const int64_t rows = data_.source()->batch_size(); rows > 0) {  // the source's batches, as they come
      whole_batches_ = true, batch_size_ = rows, shuffle_ = false;
    }
    const auto scratch_rows = static_cast<std::size_t>(whole_batches_ ? batch_size_ : 1);
    for (std::size_t c = 0; c < type.columns(); ++c) {
      source_bytes_.push_back(type.column(c).bytes());
      scratch_at_.push_back(scratch_bytes_);
      scratch_bytes_ += aligned(source_bytes_.back() * scratch_rows);
    }
  } else {
    columns_ = data_.xs();
    columns_.insert(columns_.end(), data_.ys().begin(), data_.ys().end());
    for (const Tensor& t : columns_) source_bytes_.push_back(n ? t.bytes() / n : 0);
  }
  for (std::size_t c = 0; c < maps_.size(); ++c)
    row_bytes_.push_back(maps_[c] ? maps_[c]->row.bytes() : source_bytes_[c]);
  if (row_weight_) row_bytes_.push_back(sizeof(float));
  order_.resize(n);
  start_epoch(0);
}

std::string Batcher::describe() const { return data_.streamed() ? data_.source()->describe() : std::string("the in-memory dataset"); }

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
  std::vector<std::byte> scratch(scratch_bytes_);
  gather(b, outs, 0, batch_rows(b), scratch.data());
}

int64_t Batcher::gather(int64_t b, const std::vector<void*>& outs, int64_t begin, int64_t end, std::byte* scratch,
                        std::string* first_error) const {
  const int64_t rows = batch_rows(b);
  if (begin < 0 || end > rows || begin > end)
    throw Error("internal: rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of a batch of " + std::to_string(rows));
  const int64_t first = b * batch_size_;
  int64_t skipped = 0;
  if (whole_batches_) {
    if (begin != 0 || end != rows)
      throw Error("internal: rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of a batch of " + std::to_string(rows) +
                  " from " + describe() + ", which makes whole batches");
    read_batch(b, outs, scratch);
  } else if (data_.streamed()) {
    skipped = read_rows(outs, first, begin, end, scratch, first_error);
  } else {
    copy_rows(outs, first, begin, end);
  }
  if (row_weight_ && outs.back() && outs.at(n_x_))
    for (int64_t r = begin; r < end; ++r) {
      const float w = row_weight_(static_cast<const std::byte*>(outs[n_x_]) + static_cast<std::size_t>(r) * row_bytes_[n_x_]);
      std::memcpy(static_cast<std::byte*>(outs.back()) + static_cast<std::size_t>(r) * sizeof w, &w, sizeof w);
    }
  return skipped;
}

void Batcher::copy_rows(const std::vector<void*>& outs, int64_t first, int64_t begin, int64_t end) const {
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    auto* dst = static_cast<std::byte*>(outs.at(c));
    if (!dst) continue;
    const auto* src = static_cast<const std::byte*>(columns_[c].raw());
    const std::size_t row = row_bytes_[c];
    if (maps_[c]) {  // each row through its map, from where the order puts it
      for (int64_t r = begin; r < end; ++r)
        maps_[c]->apply(src + static_cast<std::size_t>(sample(first + r)) * source_bytes_[c], dst + static_cast<std::size_t>(r) * row);
      continue;
    }
    if (!shuffle_) {  // rows are contiguous, so one copy
      copy(dst + row * static_cast<std::size_t>(begin), src + row * static_cast<std::size_t>(first + begin), row * static_cast<std::size_t>(end - begin));
      continue;
    }
    for (int64_t r = begin; r < end; ++r)
      copy(dst + static_cast<std::size_t>(r) * row, src + static_cast<std::size_t>(sample(first + r)) * row, row);
  }
  if (transforms_.empty() || !outs.at(0)) return;
  auto* x = static_cast<std::byte*>(outs[0]);
  for (int64_t r = begin; r < end; ++r) transform(x + static_cast<std::size_t>(r) * row_bytes_[0], sample(first + r));
}

// Rows [r, r + rows) from one read of the source: each column straight into its place in the
// batch when it is staged as read, else into scratch and from there row by row through its map
// (or nowhere: a column not staged). `read` gets one buffer per column.
template <class Read>
void Batcher::read_into(int64_t r, int64_t rows, const std::vector<void*>& outs, std::byte* scratch, const Read& read) const {
  constexpr std::size_t kMaxColumns = 64;
  std::byte* at[kMaxColumns];
  const std::size_t n = source_bytes_.size();
  if (n > kMaxColumns) throw ValueError("Batcher: a sample of " + std::to_string(n) + " columns; at most 64 are supported");
  for (std::size_t c = 0; c < n; ++c) {
    auto* dst = static_cast<std::byte*>(outs.at(c));
    at[c] = dst && !maps_[c] ? dst + static_cast<std::size_t>(r) * row_bytes_[c] : scratch + scratch_at_[c];
  }
  read(std::span<std::byte* const>(at, n));
  for (std::size_t c = 0; c < n; ++c)
    if (maps_[c] && outs[c])
      for (int64_t i = 0; i < rows; ++i)
        maps_[c]->apply(at[c] + static_cast<std::size_t>(i) * source_bytes_[c],
                        static_cast<std::byte*>(outs[c]) + static_cast<std::size_t>(r + i) * row_bytes_[c]);
}

void Batcher::read_row(int64_t index, int64_t r, const std::vector<void*>& outs, std::byte* scratch) const {
  read_into(r, 1, outs, scratch, [&](std::span<std::byte* const> at) { data_.source()->read(index, at); });
}

// A whole batch from a source of batches, then the transforms of its rows.
void Batcher::read_batch(int64_t b, const std::vector<void*>& outs, std::byte* scratch) const {
  const int64_t rows = batch_rows(b);
  read_into(0, rows, outs, scratch, [&](std::span<std::byte* const> at) { data_.source()->read_batch(b, rows, at); });
  if (transforms_.empty() || !outs.at(0)) return;
  for (int64_t r = 0; r < rows; ++r) transform(static_cast<std::byte*>(outs[0]) + static_cast<std::size_t>(r) * row_bytes_[0], b * batch_size_ + r);
}

int64_t Batcher::read_rows(const std::vector<void*>& outs, int64_t first, int64_t begin, int64_t end, std::byte* scratch,
                           std::string* first_error) const {
  const int64_t n = data_.size();
  int64_t skipped = 0;
  for (int64_t r = begin; r < end; ++r) {
    int64_t position = first + r, index = sample(position);
    // A sample that fails is replaced by the next one of the order that reads: a function of the
    // order and of which samples fail, never of which thread got there first.
    for (int64_t tries = 0;; ++tries) {
      try {
        read_row(index, r, outs, scratch);
        break;
      } catch (const DataError& e) {
        if (!data_.pipeline().skip_errors) throw;
        if (tries == 0 && skipped++ == 0 && first_error) *first_error = e.what();
        if (tries + 1 >= n)
          throw DataError(e.path(), std::string("skip_errors: no sample of ").append(describe()).append(" could be read; the last error: ").append(e.what()));
        position = (position + 1) % n;
        index = sample(position);
      }
    }
    if (!transforms_.empty() && outs.at(0)) transform(static_cast<std::byte*>(outs[0]) + static_cast<std::size_t>(r) * row_bytes_[0], index);
  }
  return skipped;
}

void Batcher::transform(std::byte* x_row, int64_t source_row) const {
  std::span<float> x(reinterpret_cast<float*>(x_row), row_bytes_[0] / sizeof(float));
  std::mt19937_64 random(rng::hash(seed_, 0x617567ull /* "aug" */, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(source_row)));
  for (const datasets::RowTransform& t : transforms_) t(x, row_shape_, random);
}

}  // namespace tandem::data
