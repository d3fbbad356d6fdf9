// In-memory datasets and the Fashion-MNIST loader.
#pragma once

#include <string>
#include <utility>

#include "tandem/tensor.h"

namespace tandem {

// Features x and targets y with the same number of rows (dimension 0).
class Dataset {
 public:
  Dataset() = default;
  Dataset(Tensor x, Tensor y);  // throws ValueError naming both lengths if they differ

  int64_t size() const { return x_.empty() ? 0 : x_.shape()[0]; }
  const Tensor& x() const { return x_; }
  const Tensor& y() const { return y_; }
  Dataset slice(int64_t begin, int64_t end) const;  // rows [begin, end), copied

 private:
  Tensor x_, y_;
};

namespace datasets {

// Fashion-MNIST from the Debian package `dataset-fashion-mnist`: train (60000) and test (10000).
// Images are float32 (N, 28, 28) scaled to [0, 1]; labels int32 (N,) in 0..9.
std::pair<Dataset, Dataset> fashion_mnist(const std::string& dir = "/usr/share/datasets/fashion-mnist");

}  // namespace datasets
}  // namespace tandem
