// datasets::from_hdf5: two arrays of an HDF5 file (as h5py writes them) as a Dataset; and the
// checks it shares with hdf5_source (hdf5_columns.h).
#include <string>

#include "data/hdf5_columns.h"
#include "tandem/data_files.h"
#include "tandem/errors.h"

namespace tandem::data {

TensorType hdf5_column(const io::H5File& file, const std::string& name, DType uint8_as, const char* role, const std::string& who) {
  if (!file.is_dataset(name))
    throw ValueError(who + ": " + file.path() + ": no dataset \"" + name + "\" for " + role + (file.exists(name) ? " (it is a group)" : ""));
  const io::DatasetInfo info = file.dataset_info(name);
  if (!info.dtype && info.type_name != "uint8")
    throw ValueError(who + ": " + file.path() + ": dataset \"" + name + "\" (" + role + ") has dtype " + info.type_name +
                     " and shape " + info.shape_str() + "; expected float32, float64, int32, int64 or uint8");
  if (info.dims.empty())
    throw ShapeError(who + ": " + file.path() + ": dataset \"" + name + "\" (" + role + ") is a scalar of dtype " + info.type_name +
                     "; expected an array with one row per example");
  return {Shape(info.dims), info.dtype ? *info.dtype : uint8_as};
}

void check_hdf5_rows(const Shape& x, const Shape& y, const std::string& x_name, const std::string& y_name, const std::string& who) {
  if (x[0] != y[0])
    throw ShapeError(who + ": dataset \"" + x_name + "\" has shape " + x.str() + " but \"" + y_name + "\" has shape " + y.str() +
                     "; their first dimensions (rows) must match");
}

}  // namespace tandem::data

namespace tandem::datasets {

Dataset from_hdf5(const std::string& path, const std::string& x_dataset, const std::string& y_dataset) {
  const io::H5File file = io::H5File::open(path);
  const TensorType xt = data::hdf5_column(file, x_dataset, DType::F32, "x", "from_hdf5");
  const TensorType yt = data::hdf5_column(file, y_dataset, DType::I32, "y", "from_hdf5");
  data::check_hdf5_rows(xt.shape, yt.shape, x_dataset, y_dataset, "from_hdf5: " + path);
  Tensor x(xt.shape, xt.dtype), y(yt.shape, yt.dtype);
  file.read_dataset_into(x_dataset, x);
  file.read_dataset_into(y_dataset, y);
  return Dataset(std::move(x), std::move(y));
}

}  // namespace tandem::datasets
