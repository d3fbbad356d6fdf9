// A small RAII wrapper over the HDF5 C library: files, groups, datasets of the tensor dtypes
// and string attributes. No HDF5 type appears here; every failure becomes a tandem::Error that
// names the file and the object path ("w.weights.h5: /layers/dense/vars/0: cannot read ...").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tandem/tensor.h"

namespace tandem::io {

// What a dataset holds, read from its header without reading its data.
struct DatasetInfo {
  std::vector<int64_t> dims;   // empty for a scalar
  std::optional<DType> dtype;  // empty when the type is none of float32/64, int32/64, bfloat16, float16
  std::string type_name;       // "float32", "int64", "uint8", "float16", "string", ...
  std::string shape_str() const;  // Python style: "()", "(10,)", "(256, 10)"
};

struct H5CreateOptions {
  std::size_t userblock = 0;  // bytes reserved before the HDF5 data (0, or a power of two >= 512)
};

class H5File {
 public:
  // Creates a file for writing. It is built in memory: close() writes it to `path` (replacing
  // what is there), and a file destroyed without close() writes nothing.
  static H5File create(const std::string& path, const H5CreateOptions& options = {});
  // Opens an existing file read-only. Throws if it is missing or is not an HDF5 file.
  static H5File open(const std::string& path);
  // Opens a file image held in memory (an archive's entry) read-only; `name` is for messages.
  static H5File open_image(const std::string& name, const std::string& image);

  H5File(H5File&& other) noexcept;
  H5File& operator=(H5File&& other) noexcept;
  H5File(const H5File&) = delete;
  H5File& operator=(const H5File&) = delete;
  ~H5File();  // closes quietly; call close() to see errors

  const std::string& path() const { return path_; }

  // Object paths are absolute or relative to the root ("layers/dense/vars" = "/layers/dense/vars").
  void create_group(const std::string& path);  // creates missing parents too
  void write_dataset(const std::string& path, const Tensor& value);
  void write_string_attribute(const std::string& object, const std::string& name, const std::string& value);

  bool exists(const std::string& path) const;  // a link with this path resolves to an object
  bool is_group(const std::string& path) const;
  bool is_dataset(const std::string& path) const;
  std::vector<std::string> children(const std::string& group) const;  // link names, in name order
  DatasetInfo dataset_info(const std::string& path) const;
  // Reads a dataset of a supported dtype into a new tensor of its own shape and dtype.
  Tensor read_dataset(const std::string& path) const;
  // Reads into `out`, whose shape must equal the dataset's; converts between numeric types (the
  // tensor dtypes, and uint8).
  void read_dataset_into(const std::string& path, Tensor& out) const;
  // Reads rows [first, first + count) of a dataset (along its first dimension) into `out`, which
  // holds count rows of `dtype`, converting as read_dataset_into does: a hyperslab, so only those
  // rows are read from the file.
  void read_rows_into(const std::string& path, int64_t first, int64_t count, DType dtype, void* out) const;
  std::optional<std::string> read_string_attribute(const std::string& object, const std::string& name) const;
  // A list of strings (h5py's arrays of str, as Keras's legacy files name layers and weights); an
  // empty numeric array reads as an empty list. Empty when the attribute is absent.
  std::optional<std::vector<std::string>> read_string_list_attribute(const std::string& object, const std::string& name) const;

  void flush();
  void close();  // flushes and closes (a created file: writes it); the object is then empty
  // For a created file: closes it and returns its bytes (without a user block) instead of writing it.
  std::string close_to_image();

 private:
  H5File(std::string path, int64_t id) : path_(std::move(path)), id_(id) {}
  std::string take_image();  // closes a created file, returning its image
  std::string path_;
  int64_t id_ = -1;  // hid_t
  bool in_memory_ = false;    // created: close() writes the image
  std::size_t userblock_ = 0;  // bytes before the image in the written file
};

// Whether this HDF5 library was built thread-safe (its calls serialized by a lock of its own).
bool hdf5_is_threadsafe();

// Whether the file at `path` starts with an HDF5 signature (at offset 0, 512, 1024, ...).
bool is_hdf5_file(const std::string& path);

}  // namespace tandem::io
