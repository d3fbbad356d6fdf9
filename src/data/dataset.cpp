#include <algorithm>
#include <cmath>
#include <string>

#include "tandem/data.h"
#include "tandem/errors.h"

namespace tandem {

Dataset::Dataset(Tensor x, Tensor y) : Dataset(std::vector<Tensor>{std::move(x)}, std::vector<Tensor>{std::move(y)}) {}

Dataset::Dataset(std::vector<Tensor> x, std::vector<Tensor> y) : xs_(std::move(x)), ys_(std::move(y)) {
  if (xs_.empty() || ys_.empty())
    throw ValueError("Dataset: expected at least one x and one y tensor, got " + std::to_string(xs_.size()) + " and " +
                     std::to_string(ys_.size()));
  const bool several = xs_.size() > 1 || ys_.size() > 1;
  auto label = [&](const char* what, std::size_t i) { return several ? std::string(what) + "[" + std::to_string(i) + "]" : std::string(what); };
  // Rows are dimension 0, so a scalar cannot be split into examples.
  auto check = [&](const std::vector<Tensor>& ts, const char* what) {
    for (std::size_t i = 0; i < ts.size(); ++i) {
      if (ts[i].shape().rank() == 0)
        throw ValueError("Dataset: " + label(what, i) + " needs a row dimension, got shape " + ts[i].shape().str());
      if (ts[i].shape()[0] != xs_[0].shape()[0])
        throw ValueError("Dataset: " + label("x", 0) + " has " + std::to_string(xs_[0].shape()[0]) + " rows but " + label(what, i) +
                         " has " + std::to_string(ts[i].shape()[0]) + "; they must match");
    }
  };
  check(xs_, "x");
  check(ys_, "y");
  x_maps_.resize(xs_.size());
  y_maps_.resize(ys_.size());
}

namespace {
TensorType row_type(const Tensor& t) { return {t.shape().without_batch(), t.dtype()}; }

Dataset mapped(const Dataset& data, const RowMapper& mapper, std::vector<std::optional<RowMap>>& maps, const TensorType& t, std::size_t i,
               const char* what) {
  const std::string who = std::string("Dataset::map_") + what + "(" + std::to_string(i) + ")";
  if (!mapper) throw ValueError(who + ": the mapper is empty");
  if (maps[i]) throw ValueError(who + ": that tensor is mapped already; map it once, with one function doing both");
  RowMap m = mapper(t);
  if (!m.apply) throw ValueError(who + ": the mapper gave no apply function");
  maps[i] = std::move(m);
  return data;
}
}  // namespace

// A streamed dataset's rows are its source's samples: the map takes the source's column type.
Dataset Dataset::map_x(const RowMapper& mapper, std::size_t i) const {
  if (i >= num_x()) throw ValueError("Dataset::map_x: input " + std::to_string(i) + " of " + std::to_string(num_x()));
  Dataset out = *this;
  return mapped(out, mapper, out.x_maps_, source_ ? source_->sample_type().x.at(i) : row_type(xs_[i]), i, "x");
}

Dataset Dataset::map_y(const RowMapper& mapper, std::size_t i) const {
  if (i >= num_y()) throw ValueError("Dataset::map_y: output " + std::to_string(i) + " of " + std::to_string(num_y()));
  Dataset out = *this;
  return mapped(out, mapper, out.y_maps_, source_ ? source_->sample_type().y.at(i) : row_type(ys_[i]), i, "y");
}

TensorType Dataset::x_row(std::size_t i) const {
  if (x_maps_.at(i)) return x_maps_[i]->row;
  return source_ ? source_->sample_type().x.at(i) : row_type(xs_.at(i));
}
TensorType Dataset::y_row(std::size_t i) const {
  if (y_maps_.at(i)) return y_maps_[i]->row;
  return source_ ? source_->sample_type().y.at(i) : row_type(ys_.at(i));
}

Dataset Dataset::with(std::vector<Tensor> x, std::vector<Tensor> y) const {
  if (source_) no_tensors("with");
  Dataset out(std::move(x), std::move(y));
  out.pipeline_ = pipeline_;
  if (out.xs_.size() != xs_.size() || out.ys_.size() < ys_.size())
    throw ValueError("Dataset::with: expected " + std::to_string(xs_.size()) + " x and at least " + std::to_string(ys_.size()) + " y tensors");
  for (std::size_t i = 0; i < xs_.size(); ++i) out.x_maps_[i] = x_maps_[i];
  for (std::size_t i = 0; i < ys_.size(); ++i) out.y_maps_[i] = y_maps_[i];
  return out;
}

void Dataset::check_count(std::size_t count, const Shape& shape, const char* what) {
  for (const int64_t d : shape.dims())
    if (d < 0) throw ShapeError(std::string("Dataset::from_arrays: ") + what + " shape " + shape.str() + " has a negative dimension");
  if (static_cast<int64_t>(count) != shape.num_elements())
    throw ShapeError(std::string("Dataset::from_arrays: ") + what + " has " + std::to_string(count) + " values but its shape " +
                     shape.str() + " holds " + std::to_string(shape.num_elements()));
}

void Dataset::check_pointer(const void* p, const Shape& shape, const char* what) {
  check_count(static_cast<std::size_t>(std::max<int64_t>(0, shape.num_elements())), shape, what);  // negative dims
  if (!p && shape.num_elements() > 0)
    throw ValueError(std::string("Dataset::from_arrays: ") + what + " is a null pointer but its shape " + shape.str() + " holds " +
                     std::to_string(shape.num_elements()) + " values");
}

Dataset Dataset::slice(int64_t begin, int64_t end) const {
  if (source_) throw ValueError("Dataset::slice: a dataset streamed from " + source_->describe() + " cannot be sliced into tensors");
  if (begin < 0 || end > size() || begin > end)
    throw ValueError("Dataset::slice: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") outside a dataset of " + std::to_string(size()) + " rows");
  if (xs_.empty()) return {};
  auto rows = [&](const std::vector<Tensor>& ts) {
    std::vector<Tensor> out;
    for (const Tensor& t : ts) out.push_back(t.rows(begin, end));
    return out;
  };
  return with(rows(xs_), rows(ys_));
}

Tensor to_categorical(const Tensor& ids, int64_t num_classes) {
  if (num_classes < 1) throw ValueError("to_categorical: num_classes must be >= 1, got " + std::to_string(num_classes));
  std::vector<int64_t> dims = ids.shape().dims();
  if (!dims.empty() && dims.back() == 1) dims.pop_back();  // Keras drops a trailing axis of 1
  dims.push_back(num_classes);
  Tensor out(Shape(dims), DType::F32);
  float* y = out.data<float>();
  for (int64_t i = 0; i < ids.size(); ++i) {
    const double id = ids.item(i);
    if (!(id >= 0 && id < double(num_classes)) || id != std::floor(id))
      throw ValueError("to_categorical: id " + std::to_string(id) + " at index " + std::to_string(i) + " is not a class in [0, " +
                       std::to_string(num_classes) + ")");
    y[i * num_classes + static_cast<int64_t>(id)] = 1.0f;
  }
  return out;
}

}  // namespace tandem
