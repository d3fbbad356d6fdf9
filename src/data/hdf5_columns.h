// What from_hdf5 and hdf5_source share: which datasets of a file can be x or y and as which dtype.
#pragma once

#include <string>

#include "io/hdf5_file.h"
#include "tandem/tensor.h"

namespace tandem::data {

// The shape and dtype dataset `name` of `file` reads as: its own dtype (float32, float64, int32,
// int64) or `uint8_as` for uint8. ValueError/ShapeError starting with `who` for a missing dataset,
// another dtype or a scalar; `role` ("x" or "y") names its use.
TensorType hdf5_column(const io::H5File& file, const std::string& name, DType uint8_as, const char* role, const std::string& who);

// Checks that x and y (full shapes) have the same number of rows; ShapeError starting with `who`.
void check_hdf5_rows(const Shape& x, const Shape& y, const std::string& x_name, const std::string& y_name, const std::string& who);

}  // namespace tandem::data
