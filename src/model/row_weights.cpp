// fit's sample_weight and class_weight, as one weight per training row: the step multiplies each
// row's loss by it.
#include <cmath>
#include <cstring>
#include <map>

#include "model/model_impl.h"
#include "tandem/errors.h"

namespace tandem {

namespace {
// The class a target row stands for: the argmax of a one-hot row, else its (first) id rounded.
template <class Value>
int64_t row_class(const Value& value, int64_t per_row, bool one_hot) {
  if (!one_hot) return static_cast<int64_t>(std::llround(value(0)));
  int64_t cls = 0;
  for (int64_t j = 1; j < per_row; ++j)
    if (value(j) > value(cls)) cls = j;
  return cls;
}

float class_weight_of(const std::map<int64_t, double>& class_weight, int64_t cls) {
  const auto it = class_weight.find(cls);
  return it == class_weight.end() ? 1.0f : static_cast<float>(it->second);
}

void check_class_weight(std::size_t outputs, const FitOptions& o) {
  if (outputs != 1)
    throw ValueError("fit: class_weight is for a model with one output, this one has " + std::to_string(outputs) +
                     " (Keras refuses it too); give sample_weight instead");
  for (const auto& [cls, weight] : o.class_weight)
    if (!std::isfinite(weight)) throw ValueError("fit: class_weight[" + std::to_string(cls) + "] is " + std::to_string(weight) + "; weights must be finite");
}
}  // namespace

// The per-row loss weights that fit's sample_weight or class_weight ask for, float32 (rows,).
std::optional<Tensor> Model::row_weights(const Dataset& data, const FitOptions& o) const {
  const Impl& m = *impl_;
  if (o.sample_weight && !o.class_weight.empty())
    throw ValueError("fit: give either sample_weight or class_weight, not both (Keras refuses them together)");
  const int64_t rows = data.size();
  if (o.sample_weight) {
    const Tensor& w = *o.sample_weight;
    const Shape s = w.shape();
    if (!(s.rank() == 1 || (s.rank() == 2 && s[1] == 1)) || s[0] != rows)
      throw ShapeError("fit: sample_weight must have shape (" + std::to_string(rows) + ",), one weight per row of x, got " + s.str());
    Tensor out = w.cast(DType::F32).reshape(Shape{rows});
    for (int64_t i = 0; i < rows; ++i)
      if (!std::isfinite(out.item(i))) throw ValueError("fit: sample_weight[" + std::to_string(i) + "] is " + std::to_string(out.item(i)) + "; weights must be finite");
    return out;
  }
  if (o.class_weight.empty()) return std::nullopt;
  check_class_weight(m.outputs.size(), o);
  const Tensor& y = data.y();
  const int64_t per_row = rows ? y.size() / rows : 0;
  const bool one_hot = y.shape().rank() > 1 && y.shape().back() > 1;
  Tensor out(Shape{rows}, DType::F32);
  for (int64_t i = 0; i < rows; ++i)
    out.values<float>()[static_cast<std::size_t>(i)] =
        class_weight_of(o.class_weight, row_class([&](int64_t j) { return y.item(i * per_row + j); }, per_row, one_hot));
  return out;
}

// The same for streamed data, computed from each staged target row as its batch is staged.
std::function<float(const std::byte*)> Model::streamed_row_weights(const Dataset& data, const FitOptions& o) const {
  if (o.sample_weight)
    throw ValueError("fit: sample_weight is an array of one weight per row, and the dataset is streamed from " + data.source()->describe() +
                     "; give class_weight, or weigh the rows in the source");
  if (o.class_weight.empty()) return {};
  check_class_weight(impl_->outputs.size(), o);
  const TensorType y = data.y_row(0);
  const int64_t per_row = y.shape.num_elements();
  const bool one_hot = y.shape.rank() > 0 && y.shape.back() > 1;
  return [class_weight = o.class_weight, per_row, one_hot, dtype = y.dtype](const std::byte* row) {
    auto value = [&](int64_t j) -> double {
      const std::byte* p = row + static_cast<std::size_t>(j) * dtype_size(dtype);
      switch (dtype) {
        case DType::F32: { float v; std::memcpy(&v, p, sizeof v); return v; }
        case DType::F64: { double v; std::memcpy(&v, p, sizeof v); return v; }
        case DType::I32: { int32_t v; std::memcpy(&v, p, sizeof v); return v; }
        case DType::I64: { int64_t v; std::memcpy(&v, p, sizeof v); return static_cast<double>(v); }
        case DType::BF16: { bfloat16 v; std::memcpy(&v, p, sizeof v); return static_cast<float>(v); }
        case DType::F16: { float16 v; std::memcpy(&v, p, sizeof v); return static_cast<float>(v); }
      }
      return 0.0;
    };
    return class_weight_of(class_weight, row_class(value, per_row, one_hot));
  };
}

}  // namespace tandem
