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

Dataset Dataset::slice(int64_t begin, int64_t end) const {
  if (begin < 0 || end > size() || begin > end)
    throw ValueError("Dataset::slice: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") outside a dataset of " + std::to_string(size()) + " rows");
  if (x_.empty()) return {};
  return Dataset(x_.rows(begin, end), y_.rows(begin, end));
}

}  // namespace tandem
