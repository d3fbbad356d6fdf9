// Reader for gzip-compressed IDX files, the format MNIST-style datasets ship in.
#pragma once

#include <string>

#include "tandem/tensor.h"

namespace tandem::data {

// Images (magic 00 00 08 03) become float32 (N, rows, cols) scaled to [0, 1]; labels
// (magic 00 00 08 01) become int32 (N,). Throws tandem::Error naming the path on a missing,
// malformed or truncated file.
Tensor read_idx(const std::string& path);

}  // namespace tandem::data
