#include <algorithm>
#include <string>

#include "tandem/data.h"
#include "tandem/errors.h"

namespace tandem {

Dataset::Dataset(Tensor x, Tensor y) : x_(std::move(x)), y_(std::move(y)) {
  // Rows are dimension 0, so a scalar cannot be split into examples.
  if (x_.shape().rank() == 0 || y_.shape().rank() == 0)
    throw ValueError("Dataset: x and y need a row dimension, got x " + x_.shape().str() + " and y " +
                     y_.shape().str());
  if (x_.shape()[0] != y_.shape()[0])
    throw ValueError("Dataset: x has " + std::to_string(x_.shape()[0]) + " rows but y has " +
                     std::to_string(y_.shape()[0]) + "; they must match");
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
  if (begin < 0 || end > size() || begin > end)
    throw ValueError("Dataset::slice: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") outside a dataset of " + std::to_string(size()) + " rows");
  if (x_.empty()) return {};
  return Dataset(x_.rows(begin, end), y_.rows(begin, end));
}

}  // namespace tandem
