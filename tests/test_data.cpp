#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/batcher.h"
#include "data/idx.h"
#include "tandem/data.h"
#include "tandem/tandem.h"
#include "tandem/errors.h"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("tandem_data_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == int(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

std::vector<uint8_t> idx_images(uint32_t n, uint32_t rows, uint32_t cols, const std::vector<uint8_t>& pixels) {
  std::vector<uint8_t> out{0, 0, 8, 3};
  put_u32(out, n);
  put_u32(out, rows);
  put_u32(out, cols);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

std::vector<uint8_t> idx_labels(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> out{0, 0, 8, 1};
  put_u32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// x holds each row's original index, so gathered x values reveal the visiting order.
Dataset indexed_dataset(int n) {
  std::vector<int32_t> ids(static_cast<std::size_t>(n));
  std::vector<float> y(static_cast<std::size_t>(n) * 2);
  for (int i = 0; i < n; ++i) {
    ids[static_cast<std::size_t>(i)] = i;
    y[2 * static_cast<std::size_t>(i)] = float(i);
    y[2 * static_cast<std::size_t>(i) + 1] = -float(i);
  }
  return Dataset(Tensor::from({n}, std::span<const int32_t>(ids)), Tensor::from({n, 2}, std::span<const float>(y)));
}

std::vector<int32_t> epoch_order(data::Batcher& b, int epoch) {
  b.start_epoch(epoch);
  std::vector<int32_t> order;
  for (int64_t i = 0; i < b.num_batches(); ++i) {
    std::vector<int32_t> x(static_cast<std::size_t>(b.batch_rows(i)));
    std::vector<float> y(x.size() * 2);
    b.gather(i, x.data(), y.data());
    for (std::size_t r = 0; r < x.size(); ++r) {
      CHECK(y[2 * r] == float(x[r]));  // x and y rows stay paired
      CHECK(y[2 * r + 1] == -float(x[r]));
    }
    order.insert(order.end(), x.begin(), x.end());
  }
  return order;
}

}  // namespace

TEST_CASE("Dataset rejects x and y of different lengths") {
  const std::string msg = error_of([] { Dataset(Tensor({5, 3}, DType::F32), Tensor({4}, DType::I32)); });
  CHECK(msg == "Dataset: x has 5 rows but y has 4; they must match");
  CHECK(Dataset(Tensor({5, 3}, DType::F32), Tensor({5}, DType::I32)).size() == 5);
  CHECK_THROWS_AS(Dataset(Tensor(Shape{}, DType::F32), Tensor({1}, DType::I32)), ValueError);
}

TEST_CASE("Dataset::slice copies the requested rows") {
  Dataset d = indexed_dataset(6);
  Dataset s = d.slice(2, 5);
  REQUIRE(s.size() == 3);
  CHECK(s.x().shape() == Shape{3});
  CHECK(s.y().shape() == Shape{3, 2});
  CHECK(s.x().item(0) == 2);
  CHECK(s.x().item(2) == 4);
  CHECK(s.y().item(5) == -4);
  CHECK(d.slice(3, 3).size() == 0);
  CHECK_THROWS_AS(d.slice(4, 7), ValueError);
  CHECK_THROWS_AS(d.slice(-1, 2), ValueError);
}

TEST_CASE("read_idx decodes images and labels") {
  TempDir dir;
  write_gz(dir.file("img.gz"), idx_images(2, 2, 3, {0, 51, 102, 153, 204, 255, 1, 2, 3, 4, 5, 6}));
  write_gz(dir.file("lbl.gz"), idx_labels({7, 0, 9}));

  Tensor img = data::read_idx(dir.file("img.gz"));
  CHECK(img.dtype() == DType::F32);
  CHECK(img.shape() == Shape{2, 2, 3});
  CHECK(img.item(0) == 0.0);
  CHECK(img.item(1) == doctest::Approx(0.2));
  CHECK(img.item(5) == doctest::Approx(1.0));
  CHECK(img.item(11) == doctest::Approx(6.0 / 255));

  Tensor lbl = data::read_idx(dir.file("lbl.gz"));
  CHECK(lbl.dtype() == DType::I32);
  CHECK(lbl.shape() == Shape{3});
  CHECK(lbl.values<int32_t>()[0] == 7);
  CHECK(lbl.values<int32_t>()[2] == 9);
}

TEST_CASE("read_idx reports truncated, malformed and missing files") {
  TempDir dir;
  write_gz(dir.file("short.gz"), idx_images(2, 2, 2, {1, 2, 3, 4, 5}));
  std::string msg = error_of([&] { data::read_idx(dir.file("short.gz")); });
  CHECK(contains(msg, dir.file("short.gz")));
  CHECK(contains(msg, "8 bytes"));
  CHECK(contains(msg, "has 5"));

  write_gz(dir.file("short_header.gz"), {0, 0, 8, 3, 0, 0});
  msg = error_of([&] { data::read_idx(dir.file("short_header.gz")); });
  CHECK(contains(msg, dir.file("short_header.gz")));
  CHECK(contains(msg, "expected 12 bytes"));

  write_gz(dir.file("magic.gz"), {0, 0, 8, 2, 0, 0, 0, 1, 5});
  msg = error_of([&] { data::read_idx(dir.file("magic.gz")); });
  CHECK(contains(msg, dir.file("magic.gz")));
  CHECK(contains(msg, "00 00 08 03"));
  CHECK(contains(msg, "got 00 00 08 02"));

  auto extra = idx_labels({1, 2});
  extra.push_back(3);
  write_gz(dir.file("long.gz"), extra);
  CHECK(contains(error_of([&] { data::read_idx(dir.file("long.gz")); }), "more"));

  msg = error_of([&] { data::read_idx(dir.file("absent.gz")); });
  CHECK(contains(msg, dir.file("absent.gz")));
}

TEST_CASE("fashion_mnist names the package when files are missing") {
  TempDir dir;
  const std::string msg = error_of([&] { datasets::fashion_mnist(dir.path.string()); });
  CHECK(contains(msg, "dataset-fashion-mnist"));
  CHECK(contains(msg, "apt-get install dataset-fashion-mnist"));
  CHECK(contains(msg, dir.file("train-images-idx3-ubyte.gz")));
}

TEST_CASE("fashion_mnist loads small files from a directory") {
  TempDir dir;
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_images(3, 1, 2, {0, 255, 10, 20, 30, 40}));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_labels({1, 2, 3}));
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), idx_images(1, 1, 2, {5, 6}));
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_labels({4}));
  auto [train, test] = datasets::fashion_mnist(dir.path.string());
  CHECK(train.size() == 3);
  CHECK(test.size() == 1);
  CHECK(train.x().shape() == Shape{3, 1, 2});
  CHECK(test.y().item(0) == 4);

  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_labels({4, 5}));
  CHECK(contains(error_of([&] { datasets::fashion_mnist(dir.path.string()); }), "x has 1 rows but y has 2"));
}

TEST_CASE("Batcher visits every row once per epoch") {
  Dataset d = indexed_dataset(103);
  data::Batcher b(d, 10, true, 42);
  CHECK(b.num_batches() == 11);
  CHECK(b.batch_rows(0) == 10);
  CHECK(b.batch_rows(10) == 3);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int32_t> order = epoch_order(b, epoch);
    REQUIRE(order.size() == 103);
    std::sort(order.begin(), order.end());
    for (int32_t i = 0; i < 103; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
  }
}

TEST_CASE("Batcher order depends only on seed and epoch") {
  Dataset d = indexed_dataset(50);
  data::Batcher a(d, 7, true, 3), b(d, 7, true, 3), other_seed(d, 7, true, 4);
  const auto a1 = epoch_order(a, 1);
  epoch_order(b, 5);  // visiting other epochs first must not matter
  CHECK(epoch_order(b, 1) == a1);
  CHECK(epoch_order(a, 2) != a1);
  CHECK(epoch_order(other_seed, 1) != a1);
  std::vector<int32_t> identity(50);
  for (int32_t i = 0; i < 50; ++i) identity[static_cast<std::size_t>(i)] = i;
  CHECK(a1 != identity);
}

TEST_CASE("Batcher without shuffle keeps the dataset order") {
  Dataset d = indexed_dataset(23);
  data::Batcher b(d, 5, false, 99);
  CHECK(b.num_batches() == 5);
  CHECK(b.batch_rows(4) == 3);
  std::vector<int32_t> identity(23);
  for (int32_t i = 0; i < 23; ++i) identity[static_cast<std::size_t>(i)] = i;
  CHECK(epoch_order(b, 0) == identity);
  CHECK(epoch_order(b, 7) == identity);
}

TEST_CASE("Batcher rejects batch_size below 1") {
  Dataset d = indexed_dataset(4);
  CHECK(contains(error_of([&] { data::Batcher(d, 0, true, 1); }), "batch_size"));
  CHECK_THROWS_AS(data::Batcher(d, -3, false, 1), ValueError);
}

TEST_CASE("Fashion-MNIST from the Debian package") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir)) {
    MESSAGE("skipped: " << dir << " is absent (apt-get install dataset-fashion-mnist)");
    return;
  }
  auto [train, test] = datasets::fashion_mnist(dir);
  CHECK(train.size() == 60000);
  CHECK(test.size() == 10000);
  CHECK(train.x().shape() == Shape{60000, 28, 28});
  CHECK(test.x().shape() == Shape{10000, 28, 28});
  CHECK(train.y().dtype() == DType::I32);
  const auto px = train.x().values<float>();
  const auto [lo, hi] = std::minmax_element(px.begin(), px.end());
  CHECK(*lo >= 0.0f);
  CHECK(*hi <= 1.0f);
  std::vector<int> counts(10, 0);
  for (int32_t label : train.y().values<int32_t>()) {
    REQUIRE(label >= 0);
    REQUIRE(label <= 9);
    ++counts[static_cast<std::size_t>(label)];
  }
  for (int c = 0; c < 10; ++c) CHECK(counts[static_cast<std::size_t>(c)] == 6000);
  for (int32_t label : test.y().values<int32_t>()) CHECK((label >= 0 && label <= 9));
}

TEST_CASE("to_categorical makes one-hot rows as Keras's does, and names a bad id") {
  const int32_t ids[] = {2, 0, 1, 2};
  const tandem::Tensor y = tandem::to_categorical(tandem::Tensor::from({4, 1}, std::span<const int32_t>(ids)), 3);
  CHECK(y.shape() == tandem::Shape{4, 3});
  CHECK(std::vector<float>(y.values<float>().begin(), y.values<float>().end()) == std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK_THROWS_WITH_AS(tandem::to_categorical(tandem::Tensor::from({4}, std::span<const int32_t>(ids)), 2),
                       doctest::Contains("id 2.000000 at index 0 is not a class in [0, 2)"), tandem::ValueError);
}

namespace {
// A small classifier on int32 features and int32 class ids, trained for two epochs.
std::vector<tandem::Tensor> train_classifier(const tandem::Dataset& data, const tandem::FitOptions& options) {
  tandem::set_random_seed(5);
  const auto x = tandem::Input({3});
  tandem::Model model(x, tandem::layers::Dense(4, "softmax")(tandem::layers::Dense(5, "relu")(x)));
  model.compile({.optimizer = "adam", .loss = "categorical_crossentropy", .metrics = {"accuracy"}});
  model.fit(data, options);
  return model.get_weights();
}
}  // namespace

TEST_CASE("row maps one-hot the targets and cast the inputs as batches are staged, as eager conversion would") {
  std::vector<int32_t> xs, ids;
  for (int i = 0; i < 24; ++i) {
    for (int j = 0; j < 3; ++j) xs.push_back((i * 7 + j * 3) % 11 - 5);
    ids.push_back(i % 4);
  }
  const tandem::Tensor x = tandem::Tensor::from({24, 3}, std::span<const int32_t>(xs));
  const tandem::Tensor y = tandem::Tensor::from({24, 1}, std::span<const int32_t>(ids));
  const tandem::Dataset eager(x.cast(tandem::DType::F32), tandem::to_categorical(y, 4));
  const tandem::Dataset lazy = tandem::Dataset(x, y).map_x(datasets::cast(tandem::DType::F32)).map_y(datasets::one_hot(4));
  CHECK(lazy.y_row() == tandem::TensorType{tandem::Shape{4}, tandem::DType::F32});
  CHECK(lazy.x_row() == tandem::TensorType{tandem::Shape{3}, tandem::DType::F32});
  const tandem::FitOptions options{.epochs = 2, .batch_size = 5, .validation_split = 0.25, .verbose = 0};
  const auto a = train_classifier(eager, options), b = train_classifier(lazy, options);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::equal(a[i].values<float>().begin(), a[i].values<float>().end(), b[i].values<float>().begin()));

  CHECK_THROWS_WITH_AS(lazy.map_y(datasets::one_hot(4)), doctest::Contains("mapped already"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::Dataset(x, y).map_x(datasets::one_hot(4)), doctest::Contains("expected one class id per row"), tandem::ShapeError);
  const auto in = tandem::Input({3});
  tandem::Model model(in, tandem::layers::Dense(4)(in));
  model.compile({.optimizer = "sgd", .loss = "mse"});
  CHECK_THROWS_WITH_AS(model.fit(tandem::Dataset(x, y).map_x(datasets::cast(tandem::DType::F64)).map_y(datasets::one_hot(4)), {.verbose = 0}),
                       doctest::Contains("x (as its row map makes it) is float64, the input is float32"), tandem::ValueError);
}
