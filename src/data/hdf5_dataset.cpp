// datasets::from_hdf5: two arrays of an HDF5 file (as h5py writes them) as a Dataset.
#include <string>

#include "io/hdf5_file.h"
#include "tandem/data_files.h"
#include "tandem/errors.h"

namespace tandem::datasets {
namespace {

Tensor read(const io::H5File& file, const std::string& name, DType uint8_as, const char* role) {
  if (!file.is_dataset(name))
    throw ValueError("from_hdf5: " + file.path() + ": no dataset \"" + name + "\" for " + role +
                     (file.exists(name) ? " (it is a group)" : ""));
  const io::DatasetInfo info = file.dataset_info(name);
  const DType dtype = info.dtype ? *info.dtype : uint8_as;
  if (!info.dtype && info.type_name != "uint8")
    throw ValueError("from_hdf5: " + file.path() + ": dataset \"" + name + "\" (" + role + ") has dtype " + info.type_name +
                     " and shape " + info.shape_str() + "; expected float32, float64, int32, int64 or uint8");
  if (info.dims.empty())
    throw ShapeError("from_hdf5: " + file.path() + ": dataset \"" + name + "\" (" + role + ") is a scalar of dtype " +
                     info.type_name + "; expected an array with one row per example");
  Tensor t(Shape(info.dims), dtype);
  file.read_dataset_into(name, t);
  return t;
}

}  // namespace

Dataset from_hdf5(const std::string& path, const std::string& x_dataset, const std::string& y_dataset) {
  const io::H5File file = io::H5File::open(path);
  Tensor x = read(file, x_dataset, DType::F32, "x");
  Tensor y = read(file, y_dataset, DType::I32, "y");
  if (x.shape()[0] != y.shape()[0])
    throw ShapeError("from_hdf5: " + path + ": dataset \"" + x_dataset + "\" has shape " + x.shape().str() + " but \"" + y_dataset +
                     "\" has shape " + y.shape().str() + "; their first dimensions (rows) must match");
  return Dataset(std::move(x), std::move(y));
}

}  // namespace tandem::datasets
