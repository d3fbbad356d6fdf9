// Datasets in memory or streamed from a Source, and the Fashion-MNIST loader; tandem/data_files.h
// reads CSV, HDF5 and images. docs/input-pipelines.md describes the streaming pipeline.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tandem/data_source.h"
#include "tandem/tensor.h"

namespace tandem {

// For InputPipelineOptions::num_parallel_calls: measure and adapt the number of decode threads as
// training goes (between 1 and the machine's hardware threads), as tf.data.AUTOTUNE does.
inline constexpr int AUTOTUNE = -1;

// How a Dataset's batches are staged while the model trains on the previous ones.
struct InputPipelineOptions {
  // Threads that read, map and transform the rows of a batch (each a part of its rows), or
  // AUTOTUNE. The data never depends on it: every row lands where the epoch's order puts it.
  int num_parallel_calls = AUTOTUNE;
  // Batches staged ahead of the one being copied to the devices (>= 1). Staging memory is
  // (prefetch + 1) x the bytes of one batch, whatever the data set's size.
  int prefetch = 2;
  // A sample whose read raises DataError is replaced by the next readable sample of the epoch's
  // order (so batches keep their size and the result does not depend on thread timing), and fit
  // warns with the count at the end of each epoch. false: the DataError stops fit.
  bool skip_errors = false;
};

// A change to every row of a Dataset's column that may change its shape and dtype (one-hot targets,
// a cast), run as batches are staged, on the decode threads (concurrently when there are several:
// apply must allow that), wherever the dataset goes, so the whole mapped tensor never exists.
struct RowMap {
  TensorType row;  // each mapped row's shape (batch excluded) and dtype
  std::function<void(const std::byte* in, std::byte* out)> apply;  // one source row -> one mapped row
};
// Makes the RowMap for rows of the given type (batch excluded): what Dataset::map_x/map_y take.
using RowMapper = std::function<RowMap(const TensorType& source_row)>;

// Features x and targets y with the same number of rows (dimension 0). A model with several
// inputs or outputs takes one tensor per input and one per output, in the model's order.
// A streamed Dataset (from_source, datasets::from_function) holds no tensors: its samples are read
// from its Source as batches are staged, by the pipeline its InputPipelineOptions describe.
class Dataset {
 public:
  Dataset() = default;
  // Samples read by index from `source` as training goes: its sample_type's x columns are the
  // model's inputs, its y columns the targets. A null source or a negative size is a ValueError.
  static Dataset from_source(std::shared_ptr<const Source> source, InputPipelineOptions options = {});
  Dataset(Tensor x, Tensor y);  // throws ValueError naming both lengths if they differ
  Dataset(std::vector<Tensor> x, std::vector<Tensor> y);  // at least one of each, all of one row count

  // From arrays the caller holds (row-major, rows first), copied: x_shape and y_shape say how
  // many values each holds. X and Y are float, double, int32_t or int64_t. A vector whose size is
  // not its shape's element count raises ShapeError naming x or y, both counts and the shape.
  template <class X, class Y>
  static Dataset from_arrays(const std::vector<X>& x, Shape x_shape, const std::vector<Y>& y, Shape y_shape) {
    return from_spans(std::span<const X>(x), std::move(x_shape), std::span<const Y>(y), std::move(y_shape));
  }
  // The same from pointers: x holds x_shape.num_elements() values, y y_shape's (not null unless 0).
  template <class X, class Y>
  static Dataset from_arrays(const X* x, Shape x_shape, const Y* y, Shape y_shape) {
    check_pointer(x, x_shape, "x"), check_pointer(y, y_shape, "y");
    const auto nx = static_cast<std::size_t>(x_shape.num_elements()), ny = static_cast<std::size_t>(y_shape.num_elements());
    return from_spans(std::span<const X>(x, nx), std::move(x_shape), std::span<const Y>(y, ny), std::move(y_shape));
  }

  int64_t size() const { return source_ ? source_->size() : xs_.empty() ? 0 : xs_[0].shape()[0]; }
  // The tensors of an in-memory Dataset; a streamed one has none (ValueError saying so).
  const Tensor& x() const { return xs().at(0); }  // the first input's
  const Tensor& y() const { return ys().at(0); }  // the first output's
  const std::vector<Tensor>& xs() const { return source_ ? no_tensors("xs") : xs_; }
  const std::vector<Tensor>& ys() const { return source_ ? no_tensors("ys") : ys_; }
  std::size_t num_x() const { return x_maps_.size(); }  // inputs (tensors or x columns)
  std::size_t num_y() const { return y_maps_.size(); }  // outputs

  bool streamed() const { return source_ != nullptr; }
  const std::shared_ptr<const Source>& source() const { return source_; }  // null in memory
  // How batches are staged. In memory the default is one thread and one batch ahead (a gather
  // is a copy); with_pipeline changes it for either kind.
  const InputPipelineOptions& pipeline() const { return pipeline_; }
  Dataset with_pipeline(InputPipelineOptions options) const;  // ValueError for a bad count

  // The same data with the rows of input `i` (of output `i`) mapped as they are staged:
  // `ds.map_y(datasets::one_hot(10))`. A tensor is mapped at most once.
  Dataset map_x(const RowMapper& mapper, std::size_t i = 0) const;
  Dataset map_y(const RowMapper& mapper, std::size_t i = 0) const;
  // What a model sees of a row of input (output) i: the map's row type, or the tensor's own.
  TensorType x_row(std::size_t i = 0) const;
  TensorType y_row(std::size_t i = 0) const;
  const std::optional<RowMap>& x_map(std::size_t i) const { return x_maps_.at(i); }
  const std::optional<RowMap>& y_map(std::size_t i) const { return y_maps_.at(i); }
  // Other tensors of the same rows with this dataset's maps (library use: converted dtypes; extra
  // y tensors, past the mapped ones, are unmapped).
  Dataset with(std::vector<Tensor> x, std::vector<Tensor> y) const;
  Dataset slice(int64_t begin, int64_t end) const;  // rows [begin, end), copied

 private:
  template <class X, class Y>
  static Dataset from_spans(std::span<const X> x, Shape x_shape, std::span<const Y> y, Shape y_shape) {
    return Dataset(tensor_from(x, std::move(x_shape), "x"), tensor_from(y, std::move(y_shape), "y"));
  }
  template <class T>
  static Tensor tensor_from(std::span<const T> values, Shape shape, const char* what) {
    check_count(values.size(), shape, what);
    return Tensor::from(std::move(shape), values);
  }
  static void check_count(std::size_t count, const Shape& shape, const char* what);
  static void check_pointer(const void* p, const Shape& shape, const char* what);
  [[noreturn]] const std::vector<Tensor>& no_tensors(const char* what) const;
  std::vector<Tensor> xs_, ys_;
  std::vector<std::optional<RowMap>> x_maps_, y_maps_;  // one per tensor (per column when streamed)
  std::shared_ptr<const Source> source_;
  InputPipelineOptions pipeline_{.num_parallel_calls = 1, .prefetch = 1};
};

namespace datasets {

// Fashion-MNIST from the Debian package `dataset-fashion-mnist`: train (60000) and test (10000).
// Images are float32 (N, 28, 28) scaled to [0, 1]; labels int32 (N,) in 0..9.
std::pair<Dataset, Dataset> fashion_mnist(const std::string& dir = "/usr/share/datasets/fashion-mnist");

// Row maps for Dataset::map_x / map_y. one_hot: class ids (a row of one id, or (1,)) to `num_classes`
// values of `dtype`, 1 at the id (an id outside [0, num_classes) gives a row of zeros, as one_hot
// ops do). cast: every value converted to `dtype`.
RowMapper one_hot(int64_t num_classes, DType dtype = DType::F32);
RowMapper cast(DType dtype);

// A user's own streamed data set, as keras.utils.PyDataset: `read(index, out)` writes sample
// `index` (0 <= index < size) into one buffer per column of `type` (every x, then every y), each
// with room for one sample. It is called from several decode threads at once, so it must be safe
// to call concurrently; a sample it cannot produce raises DataError naming its file.
using SampleReader = std::function<void(int64_t index, std::span<std::byte* const> out)>;
Dataset from_function(int64_t size, SampleType type, SampleReader read, InputPipelineOptions options = {},
                      std::string name = "from_function");

// A user's own data set made a batch at a time, as keras.utils.PyDataset: `read(batch, rows, out)`
// writes batch `batch` — samples [batch * batch_size, batch * batch_size + rows) of `size`, so
// every batch but the last has batch_size rows — into one buffer per column of `type` (every x,
// then every y), each with room for `rows` samples, rows first. fit, evaluate and predict take
// these batches as they are, in order: their batch_size and shuffle options are not used. Called
// from several decode threads at once, each making its own batch; a batch it cannot make raises
// DataError. skip_errors is refused (a batch cannot be replaced by another batch's samples).
using BatchReader = std::function<void(int64_t batch, int64_t rows, std::span<std::byte* const> out)>;
Dataset from_batch_function(int64_t size, int64_t batch_size, SampleType type, BatchReader read, InputPipelineOptions options = {},
                            std::string name = "from_batch_function");

// The same for one input and one target of element types X and Y (float, double, int32_t or
// int64_t), rows of x_shape and y_shape: the callable fills typed spans.
//   datasets::from_function<float, int32_t>(n, {28, 28}, {},
//       [](int64_t i, std::span<float> x, std::span<int32_t> y) { ... });
template <class X, class Y>
Dataset from_function(int64_t size, Shape x_shape, Shape y_shape, std::function<void(int64_t, std::span<X>, std::span<Y>)> fill,
                      InputPipelineOptions options = {}, std::string name = "from_function") {
  const auto nx = static_cast<std::size_t>(x_shape.num_elements()), ny = static_cast<std::size_t>(y_shape.num_elements());
  SampleType type{{{std::move(x_shape), dtype_of<X>()}}, {{std::move(y_shape), dtype_of<Y>()}}};
  return from_function(
      size, std::move(type),
      [fill = std::move(fill), nx, ny](int64_t index, std::span<std::byte* const> out) {
        fill(index, std::span<X>(reinterpret_cast<X*>(out[0]), nx), std::span<Y>(reinterpret_cast<Y*>(out[1]), ny));
      },
      options, std::move(name));
}

// from_batch_function for one input and one target of element types X and Y, rows of x_shape and
// y_shape: the callable fills typed spans of `rows` rows.
template <class X, class Y>
Dataset from_batch_function(int64_t size, int64_t batch_size, Shape x_shape, Shape y_shape,
                            std::function<void(int64_t batch, int64_t rows, std::span<X>, std::span<Y>)> fill,
                            InputPipelineOptions options = {}, std::string name = "from_batch_function") {
  const auto nx = static_cast<std::size_t>(x_shape.num_elements()), ny = static_cast<std::size_t>(y_shape.num_elements());
  SampleType type{{{std::move(x_shape), dtype_of<X>()}}, {{std::move(y_shape), dtype_of<Y>()}}};
  return from_batch_function(
      size, batch_size, std::move(type),
      [fill = std::move(fill), nx, ny](int64_t batch, int64_t rows, std::span<std::byte* const> out) {
        const auto n = static_cast<std::size_t>(rows);
        fill(batch, rows, std::span<X>(reinterpret_cast<X*>(out[0]), nx * n), std::span<Y>(reinterpret_cast<Y*>(out[1]), ny * n));
      },
      options, std::move(name));
}

}  // namespace datasets

// Class ids (any shape, integer or whole-number float) as one-hot rows of `num_classes` float32
// values, shape ids + (num_classes,), as keras.utils.to_categorical; an id of shape (N, 1) gives
// (N, num_classes). An id outside [0, num_classes) is a ValueError naming it and its index.
Tensor to_categorical(const Tensor& ids, int64_t num_classes);

// The arguments of pad_sequences, with keras.utils.pad_sequences's names and defaults.
struct PadSequencesOptions {
  int64_t maxlen = 0;              // the row length; 0: the longest sequence's (Keras's None)
  DType dtype = DType::I32;
  std::string padding = "pre";     // where short sequences get `value`: "pre" (before) or "post"
  std::string truncating = "pre";  // which end of a long sequence is cut: "pre" keeps its last maxlen ids
  double value = 0;                // for I32 and I64 a whole number within the type's range
};
// Sequences of ids (token ids of texts, say) as one tensor (n, maxlen), as
// keras.utils.pad_sequences: each row holds its sequence, padded with `value` or truncated to
// maxlen as the options say. An empty sequence gives a row of `value`; no sequences give (0, maxlen).
// ValueError naming the argument for a negative maxlen, an unknown padding or truncating, or a value
// the dtype cannot hold.
Tensor pad_sequences(const std::vector<std::vector<int32_t>>& sequences, const PadSequencesOptions& options = {});

}  // namespace tandem
