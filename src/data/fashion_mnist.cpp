#include <filesystem>

#include "data/idx.h"
#include "tandem/data.h"
#include "tandem/errors.h"

namespace tandem::datasets {
namespace {

Tensor load(const std::string& dir, const char* name) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  // The usual cause is the dataset not being installed, so say how to get it.
  if (!std::filesystem::exists(path))
    throw Error("fashion_mnist: missing " + path +
                "; it is provided by the Debian package dataset-fashion-mnist "
                "(install it with `apt-get install dataset-fashion-mnist`)");
  return data::read_idx(path);
}

}  // namespace

std::pair<Dataset, Dataset> fashion_mnist(const std::string& dir) {
  // Loaded one by one, not as constructor arguments, so a missing file is reported in a fixed order.
  Tensor train_x = load(dir, "train-images-idx3-ubyte.gz");
  Tensor train_y = load(dir, "train-labels-idx1-ubyte.gz");
  Tensor test_x = load(dir, "t10k-images-idx3-ubyte.gz");
  Tensor test_y = load(dir, "t10k-labels-idx1-ubyte.gz");
  return {Dataset(std::move(train_x), std::move(train_y)), Dataset(std::move(test_x), std::move(test_y))};
}

}  // namespace tandem::datasets
