// The HDF5 wrapper. HDF5's own error printing is switched off; each failing call is turned into a
// tandem::Error that carries the innermost message of HDF5's error stack.
#include "io/hdf5_file.h"

#include <hdf5.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include "core/float16.h"
#include "io/atomic_file.h"
#include "tandem/errors.h"

namespace tandem::io {

static_assert(sizeof(hid_t) == sizeof(int64_t), "H5File keeps hid_t in an int64_t");

namespace {

// HDF5 keeps its error stack per thread, so the automatic printing is switched off on every entry.
void quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

herr_t innermost(unsigned n, const H5E_error2_t* e, void* out) {
  if (n == 0 && e->desc && *e->desc) *static_cast<std::string*>(out) = e->desc;
  return 0;
}

// The most specific message HDF5 left for the last failure, and a cleared stack.
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason;
}

std::string absolute(const std::string& path) { return path.empty() || path[0] != '/' ? "/" + path : path; }

[[noreturn]] void fail(const std::string& file, const std::string& object, const std::string& what) {
  const std::string reason = hdf5_reason();
  std::string msg = file + ": ";
  if (!object.empty()) msg += absolute(object) + ": ";
  msg += what;
  if (!reason.empty()) msg += " (HDF5: " + reason + ")";
  throw Error(msg);
}

// Owns one HDF5 identifier and closes it with the matching function.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 1.10 predefines no 16-bit float. float16 is built the way h5py builds it (IEEE binary16,
// which NumPy and Keras read back as float16). bfloat16 is stored as Keras stores it: 2-byte opaque
// values with the attribute dtype = "bfloat16" (h5py has no bfloat16; Keras reads the bytes back
// with ml_dtypes). Made once; never closed.
hid_t float16_type() {
  static const hid_t t = [] {
    const hid_t f = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(f, 15, 10, 5, 0, 10);
    H5Tset_size(f, 2);
    H5Tset_ebias(f, 15);
    H5Tlock(f);
    return f;
  }();
  return t;
}
hid_t bfloat16_type() {
  static const hid_t t = [] {
    const hid_t o = H5Tcreate(H5T_OPAQUE, 2);
    H5Tlock(o);
    return o;
  }();
  return t;
}
constexpr const char* kDtypeAttribute = "dtype";

hid_t file_type(DType t) {
  switch (t) {
    case DType::F32: return H5T_IEEE_F32LE;
    case DType::F64: return H5T_IEEE_F64LE;
    case DType::I32: return H5T_STD_I32LE;
    case DType::I64: return H5T_STD_I64LE;
    case DType::BF16: return bfloat16_type();
    case DType::F16: return float16_type();
  }
  return H5T_IEEE_F32LE;
}

hid_t memory_type(DType t) {
  switch (t) {
    case DType::F32: return H5T_NATIVE_FLOAT;
    case DType::F64: return H5T_NATIVE_DOUBLE;
    case DType::I32: return H5T_NATIVE_INT32;
    case DType::I64: return H5T_NATIVE_INT64;
    case DType::BF16: return bfloat16_type();  // x86 and ARM are little-endian, as the file types
    case DType::F16: return float16_type();
  }
  return H5T_NATIVE_FLOAT;
}

hid_t intermediate_groups() {
  static const hid_t lcpl = [] {
    const hid_t p = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(p, 1);
    return p;
  }();
  return lcpl;
}

// A type's name in NumPy's terms, and the tensor dtype it maps to, if any.
std::pair<std::string, std::optional<DType>> describe_type(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  const std::string bits = std::to_string(size * 8);
  if (cls == H5T_FLOAT) {
    if (size == 4) return {"float32", DType::F32};
    if (size == 8) return {"float64", DType::F64};
    std::size_t exponent_bits = 0, mantissa_bits = 0;
    if (size == 2 && H5Tget_fields(type, nullptr, nullptr, &exponent_bits, nullptr, &mantissa_bits) >= 0 && exponent_bits == 5 &&
        mantissa_bits == 10)
      return {"float16", DType::F16};
    return {"float" + bits, std::nullopt};
  }
  if (cls == H5T_INTEGER) {
    if (H5Tget_sign(type) == H5T_SGN_NONE) return {"uint" + bits, std::nullopt};
    if (size == 4) return {"int32", DType::I32};
    if (size == 8) return {"int64", DType::I64};
    return {"int" + bits, std::nullopt};
  }
  switch (cls) {
    case H5T_STRING: return {"string", std::nullopt};
    case H5T_COMPOUND: return {"compound", std::nullopt};
    case H5T_ENUM: return {"enum", std::nullopt};
    case H5T_ARRAY: return {"array", std::nullopt};
    case H5T_VLEN: return {"variable-length", std::nullopt};
    case H5T_OPAQUE: return {"opaque", std::nullopt};
    case H5T_REFERENCE: return {"reference", std::nullopt};
    case H5T_BITFIELD: return {"bitfield", std::nullopt};
    default: return {"unknown type", std::nullopt};
  }
}

// Reads n values of a dataset holding `stored` into `out` of `dtype`. HDF5 converts between the
// numeric types but for two cases that Tandem converts itself: bfloat16 (opaque to HDF5) and
// narrowing into float16 (HDF5 rounds ties away from zero; Tandem, as NumPy, to even).
bool read_values(hid_t ds, hid_t memory, hid_t file, std::optional<DType> stored, DType dtype, void* out, std::size_t n) {
  auto read = [&](hid_t type, void* to) { return H5Dread(ds, type, memory, file, H5P_DEFAULT, to) >= 0; };
  if (stored == dtype || (dtype != DType::BF16 && dtype != DType::F16 && stored != DType::BF16)) return read(memory_type(dtype), out);
  const DType from = stored == DType::BF16 ? DType::BF16 : DType::F64;
  std::vector<std::byte> staged(n * dtype_size(from));
  if (!read(memory_type(from), staged.data())) return false;
  convert_values(staged.data(), from, out, dtype, n);
  return true;
}

}  // namespace

std::string DatasetInfo::shape_str() const { return Shape(dims).str(); }

H5File H5File::create(const std::string& path, const H5CreateOptions& options) {
  quiet();
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  if (!fcpl.ok() || (options.userblock && H5Pset_userblock(fcpl.get(), options.userblock) < 0))
    fail(path, "", "cannot prepare the file's creation properties");
  // The file is built in memory (the core driver, no backing store) and written out by close():
  // HDF5 never meets a failing disk, whose failed writes leave its library state broken (the
  // process then crashes in HDF5's shutdown at exit).
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.ok() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0 || H5Pset_fapl_core(fapl.get(), 1 << 20, 0) < 0)
    fail(path, "", "cannot prepare file access");
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get());
  if (id < 0) fail(path, "", "cannot create the file");
  H5File file(path, id);
  file.in_memory_ = true;
  file.userblock_ = options.userblock;
  return file;
}

H5File H5File::open(const std::string& path) {
  quiet();
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !std::ifstream(path, std::ios::binary))
    throw Error(path + ": cannot open the file: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw Error(path + ": is a directory, not a file");
  if (st.st_size == 0) throw Error(path + ": the file is empty");
  if (!is_hdf5_file(path)) {
    char head[4] = {};
    std::ifstream(path, std::ios::binary).read(head, sizeof head);
    if (std::string(head, 4) == std::string("PK\x03\x04", 4))
      throw Error(path + ": a zip archive (a Keras 3 `.keras` file?), not an HDF5 file: load a whole model from it with "
                         "tandem::load_model, or save the weights alone in Keras with model.save_weights(\"model.weights.h5\")");
    throw Error(path + ": not an HDF5 file");
  }
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.ok() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0) fail(path, "", "cannot prepare file access");
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) fail(path, "", "cannot open the HDF5 file (truncated or corrupted?)");
  return H5File(path, id);
}

H5File H5File::open_image(const std::string& name, const std::string& image) {
  quiet();
  if (image.size() < 8 || image.compare(0, 8, std::string("\x89HDF\r\n\x1a\n", 8)) != 0)
    throw Error(name + ": not an HDF5 file");
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  // The core driver reads a copy of the image that HDF5 owns; nothing touches the disk.
  if (!fapl.ok() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0 || H5Pset_fapl_core(fapl.get(), 1 << 16, 0) < 0 ||
      H5Pset_file_image(fapl.get(), const_cast<char*>(image.data()), image.size()) < 0)
    fail(name, "", "cannot prepare access to the file image");
  const hid_t id = H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) fail(name, "", "cannot open the HDF5 file image (truncated or corrupted?)");
  return H5File(name, id);
}

H5File::H5File(H5File&& other) noexcept
    : path_(std::move(other.path_)),
      id_(std::exchange(other.id_, -1)),
      in_memory_(std::exchange(other.in_memory_, false)),
      userblock_(std::exchange(other.userblock_, 0)) {}

H5File& H5File::operator=(H5File&& other) noexcept {
  if (this != &other) {
    if (id_ >= 0) H5Fclose(id_);
    path_ = std::move(other.path_);
    id_ = std::exchange(other.id_, -1);
    in_memory_ = std::exchange(other.in_memory_, false);
    userblock_ = std::exchange(other.userblock_, 0);
  }
  return *this;
}

H5File::~H5File() {
  if (id_ >= 0) {
    quiet();
    H5Fclose(id_);
    H5Eclear2(H5E_DEFAULT);
  }
}

void H5File::flush() {
  quiet();
  if (id_ < 0) throw Error(path_ + ": the file is closed");
  if (H5Fflush(id_, H5F_SCOPE_GLOBAL) < 0) fail(path_, "", "cannot flush the file");
}

std::string H5File::take_image() {
  const hid_t id = std::exchange(id_, -1);
  const ssize_t size = H5Fflush(id, H5F_SCOPE_GLOBAL) < 0 ? -1 : H5Fget_file_image(id, nullptr, 0);
  std::string image;
  if (size >= 0) image.resize(static_cast<std::size_t>(size));
  if (size < 0 || H5Fget_file_image(id, image.data(), image.size()) != size) {
    const std::string reason = hdf5_reason();
    H5Fclose(id);
    H5Eclear2(H5E_DEFAULT);
    throw Error(path_ + ": cannot assemble the file in memory" + (reason.empty() ? "" : " (HDF5: " + reason + ")"));
  }
  if (H5Fclose(id) < 0) fail(path_, "", "cannot close the file");
  return image;
}

void H5File::close() {
  quiet();
  if (id_ < 0) return;
  if (!in_memory_) {
    if (H5Fclose(std::exchange(id_, -1)) < 0) fail(path_, "", "cannot close the file");
    return;
  }
  // The written file is the user block's zero bytes, then the HDF5 image.
  const std::string image = std::string(userblock_, '\0') + take_image();
  write_file(path_, image.data(), image.size());
}

std::string H5File::close_to_image() {
  quiet();
  if (id_ < 0 || !in_memory_) throw Error(path_ + ": close_to_image needs a file made by H5File::create and still open");
  if (userblock_) throw Error(path_ + ": close_to_image: a file image has no user block");
  return take_image();
}

void H5File::create_group(const std::string& path) {
  quiet();
  if (is_group(path)) return;
  Handle g(H5Gcreate2(id_, path.c_str(), intermediate_groups(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!g.ok()) fail(path_, path, "cannot create the group");
}

void H5File::write_dataset(const std::string& path, const Tensor& value) {
  quiet();
  std::vector<hsize_t> dims(value.shape().dims().begin(), value.shape().dims().end());
  Handle space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
               H5Sclose);
  if (!space.ok()) fail(path_, path, "cannot describe the shape " + value.shape().str());
  Handle ds(H5Dcreate2(id_, path.c_str(), file_type(value.dtype()), space.get(), intermediate_groups(), H5P_DEFAULT, H5P_DEFAULT),
            H5Dclose);
  if (!ds.ok()) fail(path_, path, "cannot create the dataset");
  if (value.size() > 0 && H5Dwrite(ds.get(), memory_type(value.dtype()), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.raw()) < 0)
    fail(path_, path, "cannot write the dataset");
  if (value.dtype() == DType::BF16) write_string_attribute(path, kDtypeAttribute, "bfloat16");
}

void H5File::write_string_attribute(const std::string& object, const std::string& name, const std::string& value) {
  quiet();
  Handle obj(H5Oopen(id_, object.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.ok()) fail(path_, object, "cannot open the object to set attribute \"" + name + "\"");
  if (H5Aexists(obj.get(), name.c_str()) > 0 && H5Adelete(obj.get(), name.c_str()) < 0)
    fail(path_, object, "cannot replace attribute \"" + name + "\"");
  // Like h5py's str attributes: a scalar variable-length UTF-8 string.
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!type.ok() || H5Tset_size(type.get(), H5T_VARIABLE) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
    fail(path_, object, "cannot make a string type");
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(obj.get(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* text = value.c_str();
  if (!attr.ok() || H5Awrite(attr.get(), type.get(), &text) < 0) fail(path_, object, "cannot write attribute \"" + name + "\"");
}

bool H5File::exists(const std::string& path) const {
  quiet();
  const std::string p = absolute(path);
  if (p == "/") return true;
  // Each link on the way must exist before the next can be asked about.
  for (std::size_t at = p.find('/', 1);; at = p.find('/', at + 1)) {
    const std::string prefix = p.substr(0, at);
    if (H5Lexists(id_, prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    if (at == std::string::npos) break;
  }
  const htri_t resolves = H5Oexists_by_name(id_, p.c_str(), H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  return resolves > 0;
}

namespace {
bool object_is(hid_t file, const std::string& path, H5I_type_t kind) {
  Handle obj(H5Oopen(file, path.c_str(), H5P_DEFAULT), H5Oclose);
  const bool is = obj.ok() && H5Iget_type(obj.get()) == kind;
  H5Eclear2(H5E_DEFAULT);
  return is;
}
}  // namespace

bool H5File::is_group(const std::string& path) const { return exists(path) && object_is(id_, path, H5I_GROUP); }
bool H5File::is_dataset(const std::string& path) const { return exists(path) && object_is(id_, path, H5I_DATASET); }

std::vector<std::string> H5File::children(const std::string& group) const {
  quiet();
  Handle g(H5Gopen2(id_, group.empty() ? "/" : group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.ok()) fail(path_, group, "cannot open the group");
  H5G_info_t info;
  if (H5Gget_info(g.get(), &info) < 0) fail(path_, group, "cannot read the group");
  constexpr hsize_t max_links = 1'000'000;
  if (info.nlinks > max_links) fail(path_, group, "implausible number of members " + std::to_string(info.nlinks));
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0 || len > 65535) fail(path_, group, "cannot read the name of member " + std::to_string(i));
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    if (H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT) < 0)
      fail(path_, group, "cannot read the name of member " + std::to_string(i));
    name.resize(static_cast<std::size_t>(len));
    names.push_back(std::move(name));
  }
  return names;
}

DatasetInfo H5File::dataset_info(const std::string& path) const {
  quiet();
  Handle ds(H5Dopen2(id_, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) fail(path_, path, "cannot open the dataset");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  if (!space.ok()) fail(path_, path, "cannot read the dataset's shape");
  DatasetInfo info;
  const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
  if (cls == H5S_SIMPLE) {
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > H5S_MAX_RANK) fail(path_, path, "cannot read the dataset's rank");
    std::array<hsize_t, H5S_MAX_RANK> dims{};
    if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) fail(path_, path, "cannot read the dataset's shape");
    for (int i = 0; i < rank; ++i) {
      if (dims[static_cast<std::size_t>(i)] > static_cast<hsize_t>(INT64_MAX)) fail(path_, path, "implausible dataset shape");
      info.dims.push_back(static_cast<int64_t>(dims[static_cast<std::size_t>(i)]));
    }
  } else if (cls != H5S_SCALAR) {
    fail(path_, path, "the dataset has no shape (null dataspace)");
  }
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  if (!type.ok()) fail(path_, path, "cannot read the dataset's type");
  std::tie(info.type_name, info.dtype) = describe_type(type.get());
  if (info.type_name == "opaque" && H5Tget_size(type.get()) == 2 && read_string_attribute(path, kDtypeAttribute) == "bfloat16")
    info.type_name = "bfloat16", info.dtype = DType::BF16;
  return info;
}

void H5File::read_dataset_into(const std::string& path, Tensor& out) const {
  const DatasetInfo info = dataset_info(path);
  if (info.dims != out.shape().dims())
    throw Error(path_ + ": " + absolute(path) + ": expected shape " + out.shape().str() + ", got " + info.shape_str());
  // uint8 (images) has no tensor dtype of its own but converts exactly into any of them.
  if (!info.dtype && info.type_name != "uint8") throw Error(path_ + ": " + absolute(path) + ": cannot read a dataset of type " + info.type_name);
  if (out.size() == 0) return;
  quiet();
  Handle ds(H5Dopen2(id_, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) fail(path_, path, "cannot open the dataset");
  if (!read_values(ds.get(), H5S_ALL, H5S_ALL, info.dtype, out.dtype(), out.raw(), static_cast<std::size_t>(out.size())))
    fail(path_, path, "cannot read the dataset's values");
}

void H5File::read_rows_into(const std::string& path, int64_t first, int64_t count, DType dtype, void* out) const {
  quiet();
  Handle ds(H5Dopen2(id_, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) fail(path_, path, "cannot open the dataset");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int rank = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 1 || rank > H5S_MAX_RANK) fail(path_, path, "cannot read rows of a dataset without dimensions");
  std::array<hsize_t, H5S_MAX_RANK> dims{}, start{}, size{};
  if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) fail(path_, path, "cannot read the dataset's shape");
  if (first < 0 || count < 0 || static_cast<hsize_t>(first + count) > dims[0])
    throw Error(path_ + ": " + absolute(path) + ": rows " + std::to_string(first) + " to " + std::to_string(first + count) +
                " are outside its " + std::to_string(dims[0]) + " rows");
  if (count == 0) return;
  size = dims;
  start[0] = static_cast<hsize_t>(first), size[0] = static_cast<hsize_t>(count);
  Handle memory(H5Screate_simple(rank, size.data(), nullptr), H5Sclose);
  if (!memory.ok() || H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, size.data(), nullptr) < 0)
    fail(path_, path, "cannot select rows " + std::to_string(first) + " to " + std::to_string(first + count));
  std::size_t n = 1;
  for (int i = 0; i < rank; ++i) n *= static_cast<std::size_t>(size[static_cast<std::size_t>(i)]);
  // The stored type matters only for the conversions Tandem makes itself (see read_values).
  std::optional<DType> stored;
  if (dtype == DType::BF16 || dtype == DType::F16 || H5Tget_class(Handle(H5Dget_type(ds.get()), H5Tclose).get()) == H5T_OPAQUE)
    stored = dataset_info(path).dtype;
  if (!read_values(ds.get(), memory.get(), space.get(), stored, dtype, out, n))
    fail(path_, path, "cannot read rows " + std::to_string(first) + " to " + std::to_string(first + count));
}

Tensor H5File::read_dataset(const std::string& path) const {
  const DatasetInfo info = dataset_info(path);
  if (!info.dtype) throw Error(path_ + ": " + absolute(path) + ": cannot read a dataset of type " + info.type_name);
  Tensor out(Shape(info.dims), *info.dtype);
  read_dataset_into(path, out);
  return out;
}

std::optional<std::string> H5File::read_string_attribute(const std::string& object, const std::string& name) const {
  const std::optional<std::vector<std::string>> list = read_string_list_attribute(object, name);
  if (!list) return std::nullopt;
  if (list->size() != 1) fail(path_, object, "attribute \"" + name + "\" is not a single string");
  return list->front();
}

std::optional<std::vector<std::string>> H5File::read_string_list_attribute(const std::string& object, const std::string& name) const {
  quiet();
  Handle obj(H5Oopen(id_, object.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.ok()) fail(path_, object, "cannot open the object");
  const htri_t has = H5Aexists(obj.get(), name.c_str());
  if (has < 0) fail(path_, object, "cannot look up attribute \"" + name + "\"");
  if (has == 0) return std::nullopt;
  Handle attr(H5Aopen(obj.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle type(attr.ok() ? H5Aget_type(attr.get()) : -1, H5Tclose);
  Handle space(attr.ok() ? H5Aget_space(attr.get()) : -1, H5Sclose);
  if (!type.ok() || !space.ok()) fail(path_, object, "cannot read attribute \"" + name + "\"");
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0 || n > (1 << 20)) fail(path_, object, "attribute \"" + name + "\" has an implausible size");
  std::vector<std::string> out;
  if (n == 0) return out;  // h5py writes an empty list as an empty float64 array
  if (H5Tget_class(type.get()) != H5T_STRING) fail(path_, object, "attribute \"" + name + "\" is not a list of strings");
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    std::vector<char*> texts(static_cast<std::size_t>(n), nullptr);
    if (H5Aread(attr.get(), mem.get(), texts.data()) < 0) fail(path_, object, "cannot read attribute \"" + name + "\"");
    for (char* t : texts) out.emplace_back(t ? t : "");
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, texts.data());
    return out;
  }
  const std::size_t size = H5Tget_size(type.get());
  std::string block(size * static_cast<std::size_t>(n), '\0');
  if (size == 0 || H5Aread(attr.get(), type.get(), block.data()) < 0) fail(path_, object, "cannot read attribute \"" + name + "\"");
  for (hssize_t i = 0; i < n; ++i) {
    const std::string item = block.substr(static_cast<std::size_t>(i) * size, size);
    out.push_back(item.substr(0, item.find('\0')));
  }
  return out;
}

bool hdf5_is_threadsafe() {
  hbool_t safe = 0;
  return H5is_library_threadsafe(&safe) >= 0 && safe;
}

bool is_hdf5_file(const std::string& path) {
  // HDF5 looks for its signature at 0 and at every power of two from 512 (after a user block).
  static constexpr char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  for (std::uint64_t at = 0; at + 8 <= size; at = at ? at * 2 : 512) {
    char head[8];
    in.seekg(static_cast<std::streamoff>(at));
    if (!in.read(head, 8)) return false;
    if (std::memcmp(head, signature, 8) == 0) return true;
  }
  return false;
}

}  // namespace tandem::io
