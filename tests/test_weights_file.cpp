// Model::save_weights / load_weights: round trips, the exact Keras 3 layout (read back with the HDF5
// wrapper), optimizer state that lets training continue bitwise, atomic writes, and error messages.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <tandem/tandem.h>

#include "io/atomic_file.h"
#include "io/hdf5_file.h"
#include "io/weights_file.h"
#include "run_command.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
using tandem::Tensor;

namespace {

// A fresh, empty folder for one test, under one folder that is removed when the tests end.
const ScratchRoot scratch_root("tandem_weights");
fs::path scratch(const std::string& name) { return scratch_root.fresh(name); }

Tensor random_tensor(tandem::Shape shape, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal;
  Tensor t(shape, tandem::DType::F32);
  for (float& v : t.values<float>()) v = normal(gen);
  return t;
}

Tensor random_labels(int64_t rows, int classes, uint64_t seed) {
  std::mt19937_64 gen(seed);
  Tensor t({rows}, tandem::DType::I32);
  for (int32_t& v : t.values<int32_t>()) v = static_cast<int32_t>(gen() % static_cast<uint64_t>(classes));
  return t;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

bool bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!bitwise_equal(a[i], b[i])) return false;
  return true;
}

// Every weight and optimizer variable of a model, copied.
std::vector<Tensor> state(const tandem::Model& m) {
  std::vector<Tensor> out = m.get_weights();
  if (m.optimizer())
    for (const auto& v : m.optimizer()->variables()) out.push_back(v->value().clone());
  return out;
}

void perturb(tandem::Model& m, uint64_t seed) {
  std::vector<Tensor> w = m.get_weights();
  for (Tensor& t : w) t = random_tensor(t.shape(), seed++);
  m.set_weights(w);
}

std::unique_ptr<tandem::Sequential> mlp() {
  return std::make_unique<tandem::Sequential>(
      std::vector<tandem::LayerRef>{tl::InputLayer({28, 28}), tl::Flatten(), tl::Dense(256, "relu"), tl::Dropout(0.2), tl::Dense(10)});
}

std::unique_ptr<tandem::Sequential> cnn() {
  return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({12, 12, 1}), tl::Conv2D(8, 3, {.padding = "same"}), tl::BatchNormalization(), tl::Activation("relu"),
      tl::MaxPooling2D(), tl::Conv2D(4, 3), tl::Flatten(), tl::Dense(5)});
}

// Two branches. Keras lists the layers deepest first: relu_dense, linear_dense, the normalization,
// add, the output; Tandem's own order (first use from the output) starts with linear_dense.
std::unique_ptr<tandem::Model> functional() {
  auto x = tandem::Input({16});
  auto n = tl::LayerNormalization()(tl::Dense(32, "relu", {.name = "relu_dense"})(x));
  auto d = tl::Dense(32, "", {.name = "linear_dense"})(x);
  auto y = tl::Dense(3)(tl::Add()({d, n}));
  return std::make_unique<tandem::Model>(x, y);
}

tandem::VariablePtr weight(const tandem::Model& m, const std::string& path) {
  for (const auto& w : m.weights())
    if (w->path() == path) return w;
  for (const auto& v : m.optimizer()->variables())
    if (v->path() == path) return v;
  FAIL("no variable " << path);
  return nullptr;
}

void compile(tandem::Model& m, tandem::OptimizerPtr opt) {
  m.compile({.optimizer = std::move(opt), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
}

void train(tandem::Model& m, const Tensor& x, const Tensor& y, int epochs) {
  m.fit(x, y, {.epochs = epochs, .batch_size = 16, .shuffle = false, .verbose = 0});
}

std::string bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tandem::Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> children(const tandem::io::H5File& f, const std::string& group) { return f.children(group); }
using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("weights file: MLP round trip is bitwise") {
  const fs::path dir = scratch("mlp");
  auto m = mlp();
  const auto saved = m->get_weights();
  m->save_weights(dir / "mlp.weights.h5");
  perturb(*m, 7);
  CHECK_FALSE(bitwise_equal(m->get_weights(), saved));
  m->load_weights(dir / "mlp.weights.h5");
  CHECK(bitwise_equal(m->get_weights(), saved));
  // A separately built model of the same architecture predicts the same.
  auto other = mlp();
  other->load_weights(dir / "mlp.weights.h5");
  const Tensor x = random_tensor({5, 28, 28}, 3);
  CHECK(bitwise_equal(other->predict(x), m->predict(x)));
}

TEST_CASE("weights file: CNN with BatchNormalization round trip, moving statistics included") {
  const fs::path dir = scratch("cnn");
  auto m = cnn();
  compile(*m, tandem::optimizers::SGD(0.05));
  train(*m, random_tensor({32, 12, 12, 1}, 1), random_labels(32, 5, 2), 1);  // moves BN's statistics
  const auto saved = state(*m);
  m->save_weights(dir / "cnn.weights.h5");
  perturb(*m, 11);
  m->load_weights(dir / "cnn.weights.h5");
  CHECK(bitwise_equal(state(*m), saved));
}

TEST_CASE("weights file: functional model round trip") {
  const fs::path dir = scratch("functional");
  auto m = functional();
  const auto saved = m->get_weights();
  m->save_weights(dir / "f.weights.h5");
  perturb(*m, 5);
  m->load_weights(dir / "f.weights.h5");
  CHECK(bitwise_equal(m->get_weights(), saved));
}

TEST_CASE("weights file: the layout is Keras 3's") {
  const fs::path dir = scratch("layout");
  SUBCASE("Sequential MLP") {
    tandem::Sequential m({tl::InputLayer({128}), tl::Dense(256, "relu"), tl::Dropout(0.5), tl::Dense(10)}, "my_mlp");
    m.save_weights(dir / "m.weights.h5");
    const auto f = tandem::io::H5File::open(dir / "m.weights.h5");
    CHECK(children(f, "/") == Names{"layers", "vars"});  // not compiled: no optimizer
    CHECK(children(f, "/vars").empty());
    CHECK(f.read_string_attribute("/vars", "name") == "my_mlp");
    CHECK(children(f, "/layers") == Names{"dense", "dense_1", "dropout"});  // by class, not by layer name
    CHECK(children(f, "/layers/dense/vars") == Names{"0", "1"});
    CHECK(f.dataset_info("/layers/dense/vars/0").dims == std::vector<int64_t>{128, 256});
    CHECK(f.dataset_info("/layers/dense/vars/1").dims == std::vector<int64_t>{256});
    CHECK(f.dataset_info("/layers/dense_1/vars/0").dims == std::vector<int64_t>{256, 10});
    CHECK(f.dataset_info("/layers/dense_1/vars/0").type_name == "float32");
    CHECK(children(f, "/layers/dropout/vars").empty());
    CHECK(f.read_string_attribute("/layers/dense_1/vars", "name") == m.layers()[2]->name());
    // The values are the kernel's, row-major (in, out).
    CHECK(bitwise_equal(f.read_dataset("/layers/dense_1/vars/0"), m.layers()[2]->weights()[0]->value()));
  }
  SUBCASE("CNN: conv kernels (kh, kw, in, out); BatchNormalization gamma, beta, moving mean, moving variance") {
    auto m = cnn();
    m->save_weights(dir / "c.weights.h5");
    const auto f = tandem::io::H5File::open(dir / "c.weights.h5");
    CHECK(children(f, "/layers") ==
          Names{"activation", "batch_normalization", "conv2d", "conv2d_1", "dense", "flatten", "max_pooling2d"});
    CHECK(f.dataset_info("/layers/conv2d/vars/0").dims == std::vector<int64_t>{3, 3, 1, 8});
    CHECK(f.dataset_info("/layers/conv2d_1/vars/0").dims == std::vector<int64_t>{3, 3, 8, 4});
    CHECK(children(f, "/layers/batch_normalization/vars") == Names{"0", "1", "2", "3"});
    const auto& bn = m->layers()[1]->weights();
    for (int i = 0; i < 4; ++i) CHECK(bitwise_equal(f.read_dataset("/layers/batch_normalization/vars/" + std::to_string(i)), bn[i]->value()));
    CHECK(bn[2]->name() == "moving_mean");
  }
  SUBCASE("Functional: an empty input_layer group, as Keras lists its InputLayer") {
    auto m = functional();
    m->save_weights(dir / "f.weights.h5");
    const auto f = tandem::io::H5File::open(dir / "f.weights.h5");
    CHECK(children(f, "/layers") == Names{"add", "dense", "dense_1", "dense_2", "input_layer", "layer_normalization"});
    CHECK(children(f, "/layers/input_layer/vars").empty());
    CHECK(f.dataset_info("/layers/dense_2/vars/0").dims == std::vector<int64_t>{32, 3});
    // Keras's order of layers, not Tandem's: the deeper relu_dense comes first.
    CHECK(bitwise_equal(f.read_dataset("/layers/dense/vars/0"), weight(*m, "relu_dense/kernel")->value()));
    CHECK(bitwise_equal(f.read_dataset("/layers/dense_1/vars/0"), weight(*m, "linear_dense/kernel")->value()));
  }
  SUBCASE("Functional: optimizer slots follow Keras's order of weights") {
    auto m = functional();
    compile(*m, tandem::optimizers::RMSprop(1e-3, {.momentum = 0.5}));
    train(*m, random_tensor({16, 16}, 1), random_labels(16, 3, 1), 1);
    m->save_weights(dir / "f.weights.h5");
    const auto f = tandem::io::H5File::open(dir / "f.weights.h5");
    // 8 trainable weights in Keras order: relu_dense kernel, bias, linear_dense kernel, bias, gamma, ...
    CHECK(bitwise_equal(f.read_dataset("/optimizer/vars/2"), weight(*m, "optimizer/relu_dense/kernel/velocity")->value()));
    CHECK(bitwise_equal(f.read_dataset("/optimizer/vars/4"), weight(*m, "optimizer/linear_dense/kernel/velocity")->value()));
    CHECK(bitwise_equal(f.read_dataset("/optimizer/vars/10"), weight(*m, "optimizer/relu_dense/kernel/momentum")->value()));
  }
  SUBCASE("MultiHeadAttention: Keras's query_dense, key_dense, value_dense, output_dense sublayers") {
    auto x = tandem::Input({5, 6});
    auto y = tl::MultiHeadAttention(2, 3)({x, x});
    tandem::Model m(x, y);
    m.save_weights(dir / "a.weights.h5");
    const auto f = tandem::io::H5File::open(dir / "a.weights.h5");
    const std::string mha = "/layers/multi_head_attention";
    CHECK(children(f, mha) == Names{"_dropout_layer", "_softmax", "key_dense", "output_dense", "query_dense", "value_dense", "vars"});
    CHECK(children(f, mha + "/vars").empty());
    CHECK(f.dataset_info(mha + "/query_dense/vars/0").dims == std::vector<int64_t>{6, 2, 3});
    CHECK(f.dataset_info(mha + "/query_dense/vars/1").dims == std::vector<int64_t>{2, 3});
    CHECK(f.dataset_info(mha + "/output_dense/vars/0").dims == std::vector<int64_t>{2, 3, 6});
    CHECK(f.read_string_attribute(mha + "/output_dense/vars", "name") == "attention_output");
    const auto before = m.get_weights();
    perturb(m, 3);
    m.load_weights(dir / "a.weights.h5");
    CHECK(bitwise_equal(m.get_weights(), before));
  }
}

TEST_CASE("weights file: optimizer variables in Keras's order") {
  const fs::path dir = scratch("optimizer_layout");
  const Tensor x = random_tensor({32, 28, 28}, 1);
  const Tensor y = random_labels(32, 10, 2);
  SUBCASE("Adam: iteration, learning rate, then momentum and velocity per weight") {
    auto m = mlp();
    compile(*m, tandem::optimizers::Adam(1e-3));
    train(*m, x, y, 1);
    m->save_weights(dir / "adam.weights.h5");
    const auto f = tandem::io::H5File::open(dir / "adam.weights.h5");
    CHECK(f.read_string_attribute("/optimizer/vars", "name") == "adam");
    CHECK(children(f, "/optimizer/vars").size() == 2 + 2 * 4);
    const auto it = f.dataset_info("/optimizer/vars/0");
    CHECK(it.dims.empty());
    CHECK(it.type_name == "int64");
    CHECK(f.read_dataset("/optimizer/vars/0").item(0) == 2);  // 32 rows / batch 16
    CHECK(f.read_dataset("/optimizer/vars/1").item(0) == doctest::Approx(1e-3));
    CHECK(f.dataset_info("/optimizer/vars/2").dims == std::vector<int64_t>{784, 256});  // kernel m
    CHECK(f.dataset_info("/optimizer/vars/3").dims == std::vector<int64_t>{784, 256});  // kernel v
    CHECK(f.dataset_info("/optimizer/vars/4").dims == std::vector<int64_t>{256});
    CHECK(f.dataset_info("/optimizer/vars/8").dims == std::vector<int64_t>{10});
  }
  SUBCASE("RMSprop with momentum: every velocity, then every momentum") {
    auto m = mlp();
    compile(*m, tandem::optimizers::RMSprop(1e-3, {.momentum = 0.5}));
    train(*m, x, y, 1);
    m->save_weights(dir / "rms.weights.h5");
    const auto f = tandem::io::H5File::open(dir / "rms.weights.h5");
    CHECK(f.read_string_attribute("/optimizer/vars", "name") == "rm_sprop");
    const std::vector<std::vector<int64_t>> shapes{{784, 256}, {256}, {256, 10}, {10}};
    for (int block = 0; block < 2; ++block)
      for (int j = 0; j < 4; ++j) CHECK(f.dataset_info("/optimizer/vars/" + std::to_string(2 + block * 4 + j)).dims == shapes[j]);
    // Velocity of the first kernel is Tandem's slot "velocity" of that kernel.
    const auto& vars = m->optimizer()->variables();
    CHECK(vars[2]->name() == "velocity");
    CHECK(bitwise_equal(f.read_dataset("/optimizer/vars/2"), vars[2]->value()));
    CHECK(vars[3]->name() == "momentum");
    CHECK(bitwise_equal(f.read_dataset("/optimizer/vars/6"), vars[3]->value()));
  }
}

TEST_CASE("weights file: a loaded functional model continues training bitwise like the original") {
  const fs::path dir = scratch("continue_functional");
  const Tensor x = random_tensor({32, 16}, 4);
  const Tensor y = random_labels(32, 3, 5);
  auto a = functional();
  compile(*a, tandem::optimizers::Adam(1e-2));
  train(*a, x, y, 1);
  a->save_weights(dir / "f.weights.h5");
  train(*a, x, y, 2);
  auto b = functional();
  compile(*b, tandem::optimizers::Adam(1e-2));
  b->load_weights(dir / "f.weights.h5");
  train(*b, x, y, 2);
  CHECK(bitwise_equal(state(*b), state(*a)));
}

TEST_CASE("weights file: a loaded model continues training bitwise like the original") {
  const fs::path dir = scratch("continue");
  const Tensor x = random_tensor({48, 12, 12, 1}, 4);
  const Tensor y = random_labels(48, 5, 5);
  const std::vector<std::pair<std::string, std::function<tandem::OptimizerPtr()>>> optimizers{
      {"adam", [] { return tandem::optimizers::Adam(1e-2); }},
      {"rmsprop", [] { return tandem::optimizers::RMSprop(1e-3, {.momentum = 0.9}); }},
      {"sgd", [] { return tandem::optimizers::SGD(1e-2, {.momentum = 0.9, .nesterov = true}); }}};
  for (const auto& [name, make] : optimizers) {
    CAPTURE(name);
    tandem::set_random_seed(42);
    auto a = cnn();
    compile(*a, make());
    train(*a, x, y, 2);
    const fs::path file = dir / (name + ".weights.h5");
    a->save_weights(file);
    train(*a, x, y, 2);

    for (bool built : {false, true}) {  // an optimizer with no slots yet is built by load_weights
      CAPTURE(built);
      tandem::set_random_seed(7);
      auto b = cnn();
      compile(*b, make());
      if (built) train(*b, random_tensor({16, 12, 12, 1}, 9), random_labels(16, 5, 9), 1);
      b->load_weights(file);
      train(*b, x, y, 2);
      CHECK(b->optimizer()->iterations() == a->optimizer()->iterations());
      CHECK(bitwise_equal(state(*b), state(*a)));
    }
  }
}

TEST_CASE("weights file: a failed write leaves the previous file intact") {
  const fs::path dir = scratch("atomic");
  auto m = mlp();
  const fs::path file = dir / "keep.weights.h5";
  m->save_weights(file);
  const std::string original = bytes(file);
  const auto folder_entries = [&] { return std::distance(fs::directory_iterator(dir), fs::directory_iterator()); };

  SUBCASE("the writer fails half way") {
    CHECK_THROWS_WITH_AS(tandem::io::write_atomically(file.string(), [](const std::string& temp) {
      std::ofstream(temp) << "half a file";
      throw tandem::Error("disk full");
    }), (file.string() + ": not saved (the file there is unchanged): disk full").c_str(), tandem::Error);
    CHECK(bytes(file) == original);
    CHECK(folder_entries() == 1);  // the temporary is gone
  }
  SUBCASE("the path is a directory") {
    fs::create_directories(dir / "d.weights.h5");
    CHECK(error_of([&] { m->save_weights(dir / "d.weights.h5"); }).find("is a directory") != std::string::npos);
    CHECK(fs::is_directory(dir / "d.weights.h5"));
    CHECK(folder_entries() == 2);
  }
  SUBCASE("the folder does not exist") {
    const std::string e = error_of([&] { m->save_weights(dir / "missing" / "x.weights.h5"); });
    CHECK(e.find("cannot create a temporary file") != std::string::npos);
    CHECK(e.find("No such file or directory") != std::string::npos);
  }
  SUBCASE("a successful save replaces the file and keeps its permissions") {
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    perturb(*m, 2);
    m->save_weights(file);
    CHECK(bytes(file) != original);
    CHECK(fs::status(file).permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
    CHECK(folder_entries() == 1);
  }
}

// Its own test case: as root, permission bits do not stop a write, and the case reports itself
// skipped (ctest counts it so) instead of passing without checking anything.
TEST_CASE("weights file: a save into a folder without write permission leaves the file intact") {
  if (::geteuid() == 0) {
    MESSAGE("skipped: running as root, which writes into any folder whatever its permission bits");
    return;
  }
  const fs::path dir = scratch("read_only");
  auto m = mlp();
  const fs::path file = dir / "keep.weights.h5";
  m->save_weights(file);
  const std::string original = bytes(file);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  perturb(*m, 1);
  const std::string e = error_of([&] { m->save_weights(file); });
  fs::permissions(dir, fs::perms::owner_all);
  CHECK(e.find("Permission denied") != std::string::npos);
  CHECK(bytes(file) == original);
}

TEST_CASE("weights file: errors say what was expected, what came, and where") {
  const fs::path dir = scratch("errors");
  tandem::Sequential small({tl::InputLayer({20}), tl::Dense(128, "relu"), tl::Dense(10)});
  tandem::Sequential big({tl::InputLayer({20}), tl::Dense(256, "relu"), tl::Dense(10)});
  small.save_weights(dir / "small.weights.h5");
  const auto before = big.get_weights();

  CHECK(error_of([&] { big.save_weights(dir / "x.h5"); }) ==
        "The filename must end in `.weights.h5`. Received: filepath=" + (dir / "x.h5").string());
  CHECK(error_of([&] { big.load_weights(dir / "x.keras"); }).find("must end in `.weights.h5`") != std::string::npos);
  CHECK(error_of([&] { big.load_weights(dir / "none.weights.h5"); }).find("No such file or directory") != std::string::npos);

  fs::create_directories(dir / "folder.weights.h5");
  CHECK(error_of([&] { big.load_weights(dir / "folder.weights.h5"); }).find("is a directory") != std::string::npos);
  std::ofstream(dir / "empty.weights.h5").close();
  CHECK(error_of([&] { big.load_weights(dir / "empty.weights.h5"); }).find("the file is empty") != std::string::npos);
  std::ofstream(dir / "text.weights.h5") << "this is not HDF5\n";
  CHECK(error_of([&] { big.load_weights(dir / "text.weights.h5"); }) == (dir / "text.weights.h5").string() + ": not an HDF5 file");

  // The first mismatch in file order, with the dataset's path and both shapes.
  const std::string shape = error_of([&] { big.load_weights(dir / "small.weights.h5"); });
  CHECK(shape.find("layers/dense/vars/0: expected shape (20, 256), got (20, 128)") != std::string::npos);
  CHECK(shape.find("kernel of Dense") != std::string::npos);
  CHECK(bitwise_equal(big.get_weights(), before));  // nothing was loaded

  tandem::Sequential three({tl::InputLayer({20}), tl::Dense(128, "relu"), tl::Dense(10), tl::Dense(4)});
  const std::string missing = error_of([&] { three.load_weights(dir / "small.weights.h5"); });
  CHECK(missing.find("layers/dense_2/vars: missing; expected 2 variables for Dense") != std::string::npos);

  tandem::Sequential one({tl::InputLayer({20}), tl::Dense(128, "relu")});
  const std::string extra = error_of([&] { one.load_weights(dir / "small.weights.h5"); });
  CHECK(extra.find("layers/dense_1: the file has weights the model has no layer for") != std::string::npos);

  tandem::Sequential nobias({tl::InputLayer({20}), tl::Dense(128, "relu", {.use_bias = false}), tl::Dense(10)});
  CHECK(error_of([&] { nobias.load_weights(dir / "small.weights.h5"); }).find("layers/dense/vars: expected 1 variables for Dense") !=
        std::string::npos);

  // Truncated: the checksum block knows the size.
  {
    std::ifstream in(dir / "small.weights.h5", std::ios::binary);
    std::string all(std::istreambuf_iterator<char>(in), {});
    std::ofstream(dir / "cut.weights.h5", std::ios::binary) << all.substr(0, all.size() / 2);
    std::ofstream(dir / "flip.weights.h5", std::ios::binary) << (all.back() ^= 0x10, all);
  }
  CHECK(error_of([&] { small.load_weights(dir / "cut.weights.h5"); }).find("the file is truncated: expected") != std::string::npos);
  CHECK(error_of([&] { small.load_weights(dir / "flip.weights.h5"); }).find("checksum mismatch") != std::string::npos);

  // Optimizer state of another optimizer.
  auto a = mlp(), b = mlp();
  compile(*a, tandem::optimizers::Adam());
  compile(*b, tandem::optimizers::RMSprop());
  train(*a, random_tensor({16, 28, 28}, 1), random_labels(16, 10, 1), 1);
  train(*b, random_tensor({16, 28, 28}, 1), random_labels(16, 10, 1), 1);
  a->save_weights(dir / "adam.weights.h5");
  CHECK(error_of([&] { b->load_weights(dir / "adam.weights.h5"); })
            .find("optimizer/vars: the optimizer state was saved by optimizer \"adam\", but the model's optimizer is \"rm_sprop\"") !=
        std::string::npos);

  tandem::Sequential unbuilt({tl::Dense(3)});
  CHECK(error_of([&] { unbuilt.save_weights(dir / "u.weights.h5"); }).find("needs a built model") != std::string::npos);
}

TEST_CASE("weights file: files without a checksum block (as h5py writes them) load too") {
  const fs::path dir = scratch("plain");
  auto m = mlp();
  const auto saved = m->get_weights();
  tandem::io::save_weights({.name = m->name(), .layers = m->layers()}, (dir / "plain.weights.h5").string(), {.checksum = false});
  std::ifstream in(dir / "plain.weights.h5", std::ios::binary);
  char head[4] = {};
  in.read(head, 4);
  CHECK(std::string(head + 1, 3) == "HDF");  // the HDF5 signature at offset 0
  perturb(*m, 3);
  m->load_weights(dir / "plain.weights.h5");
  CHECK(bitwise_equal(m->get_weights(), saved));
}

TEST_CASE("weights file: Keras's snake_case names") {
  using tandem::io::to_snake_case;
  CHECK(to_snake_case("Dense") == "dense");
  CHECK(to_snake_case("Conv2D") == "conv2d");
  CHECK(to_snake_case("BatchNormalization") == "batch_normalization");
  CHECK(to_snake_case("MaxPooling2D") == "max_pooling2d");
  CHECK(to_snake_case("GlobalAveragePooling2D") == "global_average_pooling2d");
  CHECK(to_snake_case("MultiHeadAttention") == "multi_head_attention");
  CHECK(to_snake_case("RMSprop") == "rm_sprop");
  CHECK(to_snake_case("ReLU") == "re_lu");
  CHECK(to_snake_case("Conv2DTranspose") == "conv2d_transpose");
}

TEST_CASE("weights file: after writes fail for lack of space the process keeps its last good file, saves elsewhere and exits 0") {
  // full_disk_child saves under a file size limit (its writes fail as on a full disk), then
  // without it. The files are built in memory and written by Tandem's own checked writes, so
  // HDF5 never sees the failure; before, every such process crashed in HDF5's exit handler.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tandem_full_disk_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const CommandResult child = run_command(std::string(FULL_DISK_CHILD) + " " + dir.string());
  const std::string& output = child.output;
  INFO(output);
  REQUIRE(child.exited);
  CHECK(child.exit_code == 0);
  CHECK(output.find("refused: " + (dir / "good.weights.h5").string() + ": not saved (the file there is unchanged): ") != std::string::npos);
  CHECK(output.find(": cannot write the file (8192 of ") != std::string::npos);
  CHECK(output.find("File too large") != std::string::npos);
  CHECK(output.find("refused: " + (dir / "model.h5").string() + ": not saved: ") != std::string::npos);
  CHECK(output.find("refused: " + (dir / "model.keras").string() + ": not saved: ") != std::string::npos);
  CHECK(output.find("saved elsewhere") != std::string::npos);
  // The good file is the one from before the failures, whole; no temporary is left behind.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"good.weights.h5", "later.weights.h5"});
  namespace tl = tandem::layers;
  tandem::Sequential a({tl::InputLayer({64}), tl::Dense(128, "relu"), tl::Dense(10)});
  tandem::Sequential b({tl::InputLayer({64}), tl::Dense(128, "relu"), tl::Dense(10)});
  a.load_weights((dir / "good.weights.h5").string());
  b.load_weights((dir / "later.weights.h5").string());
  const auto wa = a.get_weights(), wb = b.get_weights();
  REQUIRE(wa.size() == wb.size());
  int differ = 0;
  for (std::size_t i = 0; i < wa.size(); ++i)
    for (int64_t j = 0; j < wa[i].size(); ++j) differ += wa[i].item(j) != wb[i].item(j);
  CHECK(differ == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("weights file: optimizer state saved by another optimizer class is refused, even with as many variables") {
  // SGD with momentum and RMSprop both keep one slot per weight: the counts match, the file's
  // optimizer name does not.
  const fs::path dir = scratch("other_optimizer");
  auto sgd = mlp();
  sgd->compile({.optimizer = tandem::optimizers::SGD(0.1, {.momentum = 0.9}), .loss = "mse"});
  sgd->fit(tandem::Tensor({8, 28, 28}, tandem::DType::F32), tandem::Tensor({8, 10}, tandem::DType::F32), {.epochs = 1, .batch_size = 8, .verbose = 0});
  sgd->save_weights(dir / "sgd.weights.h5");
  auto rms = mlp();
  rms->compile({.optimizer = "rmsprop", .loss = "mse"});
  const std::string e = error_of([&] { rms->load_weights(dir / "sgd.weights.h5"); });
  CHECK(e.find("the optimizer state was saved by optimizer \"sgd\", but the model's optimizer is \"rm_sprop\"") != std::string::npos);
  auto plain = mlp();  // not compiled: the layers' weights load
  CHECK_NOTHROW(plain->load_weights(dir / "sgd.weights.h5"));
  fs::remove_all(dir);
}
