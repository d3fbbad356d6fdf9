// Hundreds of damaged weights files made from one valid file: truncations, byte flips, and files
// written deliberately with wrong shapes, dtypes, and missing or extra datasets and groups. Every
// load must either throw tandem::Error and leave the model as it was (never a partial load), or,
// where the damage hit bytes nothing reads, load exactly the original values. Nothing may crash;
// this file also runs under AddressSanitizer.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <tandem/tandem.h>

#include "io/hdf5_file.h"
#include "io/weights_file.h"

// Under AddressSanitizer: HDF5 (the C library, not this project's code) trusts the sizes it reads
// from a damaged file's headers, so it may ask malloc for terabytes, get nullptr, and report an
// error; ASan's default is to abort on such a request instead of returning nullptr. And HDF5 1.10
// leaks a few small blocks on some of its error paths. Neither is a memory error here.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5"; }

namespace fs = std::filesystem;
namespace tl = tandem::layers;
using tandem::Tensor;

namespace {

enum class Outcome { Threw, LoadedSame, LoadedDifferent, Crashed };

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes() != b[i].bytes() || std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) != 0) return false;
  return true;
}

// A compiled, trained model (weights, BatchNormalization statistics and Adam slots all non-trivial)
// and its file, with and without Tandem's checksum block.
struct Fixture {
  fs::path dir;
  tandem::Sequential model{{tl::InputLayer({6}), tl::Dense(8, "relu"), tl::BatchNormalization(), tl::Dropout(0.1), tl::Dense(3)}};
  std::vector<tandem::VariablePtr> variables;  // weights, then optimizer variables
  std::vector<Tensor> original, perturbed;
  std::string checked_bytes, plain_bytes;

  Fixture() {
    dir = fs::temp_directory_path() / ("tandem_corrupt_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    model.compile({.optimizer = tandem::optimizers::Adam(1e-2), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    std::mt19937_64 gen(1);
    std::normal_distribution<float> normal;
    Tensor x({16, 6}, tandem::DType::F32), y({16}, tandem::DType::I32);
    for (float& v : x.values<float>()) v = normal(gen);
    for (int32_t& v : y.values<int32_t>()) v = static_cast<int32_t>(gen() % 3);
    model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0});
    variables = model.weights();
    for (const auto& v : model.optimizer()->variables()) variables.push_back(v);
    original = snapshot();
    for (const Tensor& t : original) {
      Tensor p = t.clone();
      for (std::size_t b = 0; b < p.bytes(); ++b) static_cast<unsigned char*>(p.raw())[b] ^= 0x5a;
      perturbed.push_back(p);
    }
    model.save_weights(dir / "checked.weights.h5");
    tandem::io::save_weights(description(), (dir / "plain.weights.h5").string(), {.checksum = false});
    checked_bytes = read_bytes(dir / "checked.weights.h5");
    plain_bytes = read_bytes(dir / "plain.weights.h5");
  }
  ~Fixture() { fs::remove_all(dir); }

  tandem::io::WeightsModel description() const {
    return {.name = model.name(), .layers = model.layers(), .optimizer = model.optimizer()};
  }
  std::vector<Tensor> snapshot() const {
    std::vector<Tensor> out;
    for (const auto& v : variables) out.push_back(v->value().clone());
    return out;
  }

  // Loads `path` into a model holding other values; checks the all-or-nothing rule.
  Outcome load(const fs::path& path, std::string* message = nullptr) {
    for (std::size_t i = 0; i < variables.size(); ++i) variables[i]->assign(perturbed[i]);
    try {
      model.load_weights(path);
    } catch (const tandem::Error& e) {
      if (message) *message = e.what();
      if (!same(snapshot(), perturbed)) FAIL("a failed load changed the model: " << e.what());
      return Outcome::Threw;
    } catch (const std::exception& e) {
      FAIL("not a tandem::Error: " << e.what());
      return Outcome::Crashed;
    }
    return same(snapshot(), original) ? Outcome::LoadedSame : Outcome::LoadedDifferent;
  }
  Outcome load_bytes(const std::string& bytes, std::string* message = nullptr) {
    write_bytes(dir / "damaged.weights.h5", bytes);
    return load(dir / "damaged.weights.h5", message);
  }
};

// The file as a list of groups and datasets, so that tests can change it before writing.
struct Contents {
  std::vector<std::pair<std::string, std::string>> groups;  // vars path, name attribute
  std::vector<std::pair<std::string, Tensor>> datasets;
  void write(const fs::path& path) const {
    auto f = tandem::io::H5File::create(path.string());
    for (const auto& [g, name] : groups) {
      f.create_group(g);
      f.write_string_attribute(g, "name", name);
    }
    for (const auto& [p, t] : datasets) f.write_dataset(p, t);
    f.close();
  }
};

Contents contents_of(const Fixture& fx) {
  Contents c;
  for (const auto& g : tandem::io::weights_layout(fx.description())) {
    c.groups.push_back({g.vars_path(), g.name});
    for (std::size_t i = 0; i < g.variables.size(); ++i)
      c.datasets.push_back({g.vars_path() + "/" + std::to_string(i), g.variables[i]->value().clone()});
  }
  return c;
}

struct Tally {
  int threw = 0, same = 0, different = 0;
  void add(Outcome o) { (o == Outcome::Threw ? threw : o == Outcome::LoadedSame ? same : different)++; }
};

}  // namespace

TEST_CASE("corrupt files: the undamaged files load") {
  Fixture fx;
  CHECK(fx.load(fx.dir / "checked.weights.h5") == Outcome::LoadedSame);
  CHECK(fx.load(fx.dir / "plain.weights.h5") == Outcome::LoadedSame);
  Contents c = contents_of(fx);
  c.write(fx.dir / "rewritten.weights.h5");
  CHECK(fx.load(fx.dir / "rewritten.weights.h5") == Outcome::LoadedSame);
}

TEST_CASE("corrupt files: truncations at every 1/200th of the file and through the first 2 KB") {
  Fixture fx;
  for (const bool checked : {true, false}) {
    const std::string& bytes = checked ? fx.checked_bytes : fx.plain_bytes;
    std::vector<std::size_t> sizes;
    for (std::size_t k = 0; k < 200; ++k) sizes.push_back(bytes.size() * k / 200);
    for (std::size_t n = 0; n < std::min<std::size_t>(2048, bytes.size()); n += checked ? 7 : 1) sizes.push_back(n);
    Tally t;
    for (const std::size_t n : sizes) {
      CAPTURE(checked);
      CAPTURE(n);
      const Outcome o = fx.load_bytes(bytes.substr(0, n));
      CHECK(o == Outcome::Threw);  // a truncated file always loses something that is read
      t.add(o);
    }
    MESSAGE(std::string(checked ? "with" : "without") << " checksum: " << sizes.size() << " truncations, " << t.threw << " refused");
  }
}

TEST_CASE("corrupt files: random byte flips") {
  Fixture fx;
  std::mt19937_64 gen(20240601);
  for (const bool checked : {true, false}) {
    const std::string& bytes = checked ? fx.checked_bytes : fx.plain_bytes;
    Tally t;
    for (int k = 0; k < 400; ++k) {
      std::string damaged = bytes;
      const int flips = k < 300 ? 1 : 1 + static_cast<int>(gen() % 8);  // mostly one byte, some several
      for (int f = 0; f < flips; ++f) damaged[gen() % damaged.size()] ^= static_cast<char>(1 + gen() % 255);
      CAPTURE(checked);
      CAPTURE(k);
      const Outcome o = fx.load_bytes(damaged);
      // With the checksum every change that matters is refused. Without it (files as h5py writes
      // them) a flip inside the raw data can only be seen as different values; HDF5 stores no
      // checksum for contiguous data.
      if (checked) CHECK(o != Outcome::LoadedDifferent);
      t.add(o);
    }
    MESSAGE(std::string(checked ? "with" : "without") << " checksum: 400 damaged files, " << t.threw << " refused, " << t.same
                                          << " loaded the original values, " << t.different << " loaded changed data");
  }
}

TEST_CASE("corrupt files: a damaged checksum block is refused, also when the weights are damaged with it") {
  Fixture fx;
  // A byte of the first weight tensor's data in the file.
  const Tensor& kernel = fx.original[0];
  const std::size_t data = fx.checked_bytes.find(std::string(static_cast<const char*>(kernel.raw()), kernel.bytes()));
  REQUIRE(data != std::string::npos);
  for (const std::size_t at : {std::size_t{0}, std::size_t{7}, std::size_t{25}}) {  // first, middle and last byte of the magic
    for (const bool weights_too : {false, true}) {
      CAPTURE(at);
      CAPTURE(weights_too);
      std::string damaged = fx.checked_bytes;
      damaged[at] ^= 0x20;
      if (weights_too) damaged[data + 5] ^= 0x01;
      std::string message;
      CHECK(fx.load_bytes(damaged, &message) == Outcome::Threw);
      CHECK(message.find("the file's checksum block is damaged") != std::string::npos);
    }
  }
  // Files without a block (as h5py writes them) still load.
  CHECK(fx.load_bytes(fx.plain_bytes) == Outcome::LoadedSame);
}

TEST_CASE("corrupt files: wrong shapes, wrong dtypes, missing and extra datasets and groups") {
  Fixture fx;
  const Contents good = contents_of(fx);
  const fs::path path = fx.dir / "edited.weights.h5";
  int files = 0;
  // Writes the edited contents and expects a refusal whose message contains `expected`.
  auto refused = [&](const Contents& c, const std::string& expected) {
    ++files;
    c.write(path);
    std::string message;
    CHECK(fx.load(path, &message) == Outcome::Threw);
    CHECK_MESSAGE(message.find(expected) != std::string::npos, message);
  };

  for (std::size_t i = 0; i < good.datasets.size(); ++i) {
    const auto& [name, value] = good.datasets[i];
    CAPTURE(name);
    const bool iteration = name == "optimizer/vars/0";
    Contents c = good;
    // One more dimension, one less element, a scalar made rank 1.
    std::vector<int64_t> dims = value.shape().dims();
    dims.push_back(1);
    c.datasets[i].second = Tensor(tandem::Shape(dims), value.dtype());
    refused(c, name + ": expected shape " + value.shape().str() + ", got " + tandem::Shape(dims).str());
    if (value.shape().rank() > 0) {
      dims = value.shape().dims();
      dims[0] += 1;
      c.datasets[i].second = Tensor(tandem::Shape(dims), value.dtype());
      refused(c, name + ": expected shape " + value.shape().str() + ", got " + tandem::Shape(dims).str());
    }
    // Another dtype.
    c.datasets[i].second = value.cast(tandem::DType::F64);
    refused(c, name + ": expected dtype " + tandem::dtype_name(value.dtype()) + ", got float64");
    if (!iteration) {
      c.datasets[i].second = value.cast(tandem::DType::I32);
      refused(c, name + ": expected dtype float32, got int32");
    }
    // Missing.
    c = good;
    c.datasets.erase(c.datasets.begin() + static_cast<std::ptrdiff_t>(i));
    refused(c, name.substr(0, name.rfind('/')) + ": expected ");
    // Renamed.
    c = good;
    c.datasets[i].first = name.substr(0, name.rfind('/') + 1) + "kernel";
    refused(c, name + ": missing dataset");
  }
  for (const auto& [group, attr] : good.groups) {
    CAPTURE(group);
    // One dataset too many in every group, weightless ones included.
    Contents c = good;
    std::size_t count = 0;
    for (const auto& d : good.datasets) count += d.first.rfind(group + "/", 0) == 0;
    c.datasets.push_back({group + "/" + std::to_string(count), Tensor({2}, tandem::DType::F32)});
    refused(c, group + ": expected " + std::to_string(count) + " variables");
    // The group's weights missing altogether (the optimizer's group is optional, below).
    if (count && group != "optimizer/vars") {
      c = good;
      std::erase_if(c.datasets, [&](const auto& d) { return d.first.rfind(group + "/", 0) == 0; });
      std::erase_if(c.groups, [&](const auto& g) { return g.first == group; });
      refused(c, group + ": missing");
      // `vars` a dataset rather than a group.
      c.datasets.push_back({group, Tensor({2}, tandem::DType::F32)});
      refused(c, group + ": missing");
    }
  }
  // A layer the model does not have, and a sublayer of a layer it has.
  Contents c = good;
  c.datasets.push_back({"layers/dense_2/vars/0", Tensor({3, 3}, tandem::DType::F32)});
  refused(c, "layers/dense_2: the file has weights the model has no layer for");
  c = good;
  c.datasets.push_back({"layers/dense/extra/vars/0", Tensor({1}, tandem::DType::F32)});
  refused(c, "layers/dense/extra: the file has weights");
  // Optimizer state of another size.
  c = good;
  c.datasets.push_back({"optimizer/vars/" + std::to_string(good.datasets.size()), Tensor({1}, tandem::DType::F32)});
  refused(c, "optimizer/vars: expected");

  // Harmless differences load: Keras's int32 iteration count, empty groups of weightless layers
  // missing or added, groups Keras adds that Tandem has no use for.
  c = good;
  for (auto& [name, value] : c.datasets)
    if (name == "optimizer/vars/0") value = value.cast(tandem::DType::I32);
  c.write(path);
  CHECK(fx.load(path) == Outcome::LoadedSame);
  c = good;
  std::erase_if(c.groups, [](const auto& g) { return g.first == "layers/dropout/vars"; });
  c.groups.push_back({"layers/input_layer/vars", "input_layer"});
  c.groups.push_back({"layers/dense/extra/vars", "extra"});
  c.datasets.push_back({"metadata/vars/0", Tensor({1}, tandem::DType::F32)});
  c.write(path);
  CHECK(fx.load(path) == Outcome::LoadedSame);
  // A file without optimizer state (saved before compile) loads the weights and leaves the
  // optimizer as it was, as Keras does.
  c = good;
  std::erase_if(c.datasets, [](const auto& d) { return d.first.rfind("optimizer/", 0) == 0; });
  std::erase_if(c.groups, [](const auto& g) { return g.first == "optimizer/vars"; });
  c.write(path);
  CHECK(fx.load(path) == Outcome::LoadedDifferent);
  const auto loaded = fx.snapshot();
  const std::size_t weights = fx.model.weights().size();
  CHECK(same({loaded.begin(), loaded.begin() + weights}, {fx.original.begin(), fx.original.begin() + weights}));
  CHECK(same({loaded.begin() + weights, loaded.end()}, {fx.perturbed.begin() + weights, fx.perturbed.end()}));
  MESSAGE(files << " edited files refused");
}
