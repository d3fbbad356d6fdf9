// fit's sample_weight and class_weight, as one weight per training row: the step multiplies each
// row's loss by it.
#include <cmath>

#include "model/model_impl.h"
#include "tandem/errors.h"

namespace tandem {

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
  if (m.outputs.size() != 1)
    throw ValueError("fit: class_weight is for a model with one output, this one has " + std::to_string(m.outputs.size()) +
                     " (Keras refuses it too); give sample_weight instead");
  for (const auto& [cls, weight] : o.class_weight)
    if (!std::isfinite(weight)) throw ValueError("fit: class_weight[" + std::to_string(cls) + "] is " + std::to_string(weight) + "; weights must be finite");
  const Tensor& y = data.y();
  const int64_t per_row = rows ? y.size() / rows : 0;
  const bool one_hot = y.shape().rank() > 1 && y.shape().back() > 1;
  Tensor out(Shape{rows}, DType::F32);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t cls = 0;
    if (one_hot) {
      for (int64_t j = 1; j < per_row; ++j)
        if (y.item(i * per_row + j) > y.item(i * per_row + cls)) cls = j;
    } else {
      cls = static_cast<int64_t>(std::llround(y.item(i * per_row)));
    }
    const auto it = o.class_weight.find(cls);
    out.values<float>()[static_cast<std::size_t>(i)] = it == o.class_weight.end() ? 1.0f : static_cast<float>(it->second);
  }
  return out;
}

}  // namespace tandem
