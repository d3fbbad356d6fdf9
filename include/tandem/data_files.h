// Datasets read from files, Keras-style: numeric CSV and HDF5 arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tandem/data.h"

namespace tandem::datasets {

// A column of a CSV file, by header name or by 0-based index.
using CsvColumn = std::variant<std::string, int64_t>;

struct CsvOptions {
  CsvColumn label_column = int64_t{-1};  // -1: the last column
  bool header = true;                    // the first record names the columns
  char delimiter = ',';
  std::vector<CsvColumn> select_columns{};  // the feature columns, in this order; empty: all but the label
  // The targets' dtype. Empty: int32 when every label is an integer, float32 otherwise.
  std::optional<DType> label_dtype{};
};

// A numeric CSV file (RFC 4180 quoting) as x float32 (N, features) and y (N,). Errors name the
// file, the line, the column and the text that is not a number.
Dataset from_csv(const std::string& path, const CsvOptions& options = {});

// Two datasets of one HDF5 file, with the same number of rows (dimension 0). float32, float64,
// int32 and int64 keep their dtype; uint8 reads as float32 for x and int32 for y.
Dataset from_hdf5(const std::string& path, const std::string& x_dataset = "x", const std::string& y_dataset = "y");

}  // namespace tandem::datasets
