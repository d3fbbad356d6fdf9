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

namespace tandem::datasets {

// keras.utils.image_dataset_from_directory's options, for a folder with one subfolder per class.
struct ImageDirectoryOptions {
  std::string label_mode = "int";            // "int": int32 class ids; "categorical": float32 one-hot
  std::vector<std::string> class_names{};    // the classes and their order; empty: the subfolders, sorted
  std::string color_mode = "rgb";            // "rgb" (3 channels), "grayscale" (1) or "rgba" (4)
  int64_t image_height = 256, image_width = 256;  // every image is resized to this (Keras's image_size)
  bool shuffle = true;                       // the files' order, before the validation split
  uint64_t seed = 0;
  double validation_split = 0.0;             // the last fraction of the (shuffled) files
};

// The images of a folder's class subfolders as x float32 (N, height, width, channels) with values
// 0..255 and labels by subfolder. Files are taken as Keras does: classes in order, files sorted
// within each; names that are not .png, .jpg or .jpeg are skipped. Images are resized with
// bilinear interpolation on half-pixel centres, edges clamped, no antialiasing (tf.image.resize, as
// Keras does); grayscale is ITU-R 601-2 luma, rounded, computed before resizing.
struct ImageDirectory {
  Dataset training;
  Dataset validation;  // empty when validation_split is 0
  std::vector<std::string> class_names;
};
ImageDirectory image_dataset_from_directory(const std::string& directory, const ImageDirectoryOptions& options = {});

}  // namespace tandem::datasets
