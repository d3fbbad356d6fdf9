// Row transforms in fit: each built-in against its closed form on a generator seeded as the
// contract says, and the draws a row gets in fit independent of batch size and device count.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

#include "data/batcher.h"
#include "strategy_helpers.h"

namespace td = tandem::datasets;
namespace tl = tandem::layers;
using tandem::Shape;

namespace {
std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 1.f);
  return v;
}
double first_uniform(uint64_t seed) {
  std::mt19937_64 g(seed);
  return static_cast<double>(g() >> 11) * 0x1.0p-53;
}
}  // namespace

TEST_CASE("random_flip mirrors the width axis exactly when the first draw is below 1/2") {
  const Shape row{2, 3, 2};
  int flipped = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::vector<float> x = ramp(12);
    std::mt19937_64 g(seed);
    td::random_flip()(x, row, g);
    const bool flip = first_uniform(seed) < 0.5;
    flipped += flip;
    for (int64_t y = 0; y < 2; ++y)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t ch = 0; ch < 2; ++ch) {
          const int64_t src = flip ? 2 - c : c;
          CHECK(x[std::size_t((y * 3 + c) * 2 + ch)] == float((y * 3 + src) * 2 + ch + 1));
        }
  }
  CHECK(flipped > 5);
  CHECK(flipped < 35);
  std::vector<float> x = ramp(6);
  std::mt19937_64 g(1);
  CHECK_THROWS_WITH_AS(td::random_flip()(x, Shape{6}, g), doctest::Contains("expected rows of shape (height, width, channels), got (6,)"),
                       tandem::ShapeError);
  CHECK_THROWS_WITH_AS(td::random_flip("diagonal"), doctest::Contains("got \"diagonal\""), tandem::ValueError);
}

TEST_CASE("random_flip \"vertical\" mirrors the height axis (an odd middle row stays) on the first draw") {
  const Shape row{3, 2, 1};
  for (uint64_t seed = 0; seed < 10; ++seed) {
    std::vector<float> x = ramp(6);
    std::mt19937_64 g(seed);
    td::random_flip("vertical")(x, row, g);
    const bool flip = first_uniform(seed) < 0.5;
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t c = 0; c < 2; ++c) CHECK(x[std::size_t(y * 2 + c)] == float(((flip ? 2 - y : y) * 2 + c) + 1));
  }
}

TEST_CASE("random_translation shifts by round((2u - 1) · factor · size) whole pixels and fills with 0") {
  const Shape row{4, 5, 1};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> x = ramp(20);
    std::mt19937_64 g(seed), check(seed);
    td::random_translation(0.5, 0.4)(x, row, g);
    const double uy = static_cast<double>(check() >> 11) * 0x1.0p-53, ux = static_cast<double>(check() >> 11) * 0x1.0p-53;
    const auto dy = static_cast<int64_t>(std::lround((2 * uy - 1) * 0.5 * 4)), dx = static_cast<int64_t>(std::lround((2 * ux - 1) * 0.4 * 5));
    for (int64_t y = 0; y < 4; ++y)
      for (int64_t c = 0; c < 5; ++c) {
        const int64_t sy = y - dy, sx = c - dx;
        const float want = (sy < 0 || sy >= 4 || sx < 0 || sx >= 5) ? 0.f : float(sy * 5 + sx + 1);
        CHECK(x[std::size_t(y * 5 + c)] == want);
      }
  }
  CHECK_THROWS_WITH_AS(td::random_translation(1.5, 0), doctest::Contains("factors must be in [0, 1], got 1.5"), tandem::ValueError);
}

TEST_CASE("normalization is (x - mean) / sqrt(variance) per last-axis element") {
  std::vector<float> x{1, 2, 3, 4, 5, 6};
  std::mt19937_64 g(0);
  td::normalization({1, 2, 3}, {4, 1, 0.25})(x, Shape{2, 3}, g);
  const std::vector<float> want{0, 0, 0, 1.5f, 3, 6};
  CHECK(x == want);
  CHECK_THROWS_WITH_AS(td::normalization({1, 2}, {1, 1})(x, Shape{2, 3}, g), doctest::Contains("expected 1 or 3"), tandem::ShapeError);
  CHECK_THROWS_WITH_AS(td::normalization({1}, {0}), doctest::Contains("every variance must be positive"), tandem::ValueError);
}

namespace {
// Which draw each (epoch, row) got in a fit: x's first feature holds the row's index.
struct Recorded {
  std::map<std::pair<int, int64_t>, uint64_t> draws;
  std::vector<tandem::Tensor> weights;
};

Recorded fit_recording(int64_t batch_size, tandem::distribute::StrategyPtr strategy, uint64_t seed) {
  tandem::set_random_seed(seed);
  const int64_t rows = 24;
  std::vector<float> x(static_cast<std::size_t>(rows * 2 * 2 * 1));
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < 4; ++i) x[std::size_t(r * 4 + i)] = i == 0 ? float(r) : float((r * 7 + i) % 5) - 2.f;
    y[std::size_t(r)] = int32_t(r % 2);
  }
  const tandem::Dataset data(tandem::Tensor::from({rows, 2, 2, 1}, std::span<const float>(x)),
                             tandem::Tensor::from({rows}, std::span<const int32_t>(y)));
  auto recorded = std::make_shared<Recorded>();
  auto mutex = std::make_shared<std::mutex>();
  std::map<int64_t, int> epoch_of_row;  // counts visits per row: a row's nth visit is epoch n
  const td::RowTransform record = [recorded, mutex, epoch_of_row](std::span<float> v, const Shape&, std::mt19937_64& g) mutable {
    std::lock_guard lock(*mutex);
    const auto row = static_cast<int64_t>(v[0]);
    recorded->draws[{epoch_of_row[row]++, row}] = g();
    v[0] = 0.f;  // the index is not a feature
  };
  tandem::Sequential model({tl::InputLayer({2, 2, 1}), tl::Flatten(), tl::Dense(2)});
  model.compile({.optimizer = tandem::optimizers::SGD(0.1),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
  model.fit(data, {.epochs = 3, .batch_size = batch_size, .verbose = 0, .transforms = {record, td::random_flip("horizontal_and_vertical")}});
  recorded->weights = model.get_weights();
  return std::move(*recorded);
}
}  // namespace

TEST_CASE("fit: a row's draws depend on (seed, epoch, row) alone, whatever the batch size and the devices") {
  const Recorded one = fit_recording(8, nullptr, 5);
  CHECK(one.draws.size() == 3 * 24);
  const Recorded bigger = fit_recording(12, nullptr, 5);
  CHECK(bigger.draws == one.draws);
  const Recorded mirrored = fit_recording(8, tandem::distribute::Mirrored(cpus(2)), 5);
  CHECK(mirrored.draws == one.draws);
  CHECK(max_relative_difference(mirrored.weights, one.weights) <= 1e-5);
  const Recorded again = fit_recording(8, nullptr, 5);
  CHECK(again.weights.size() == one.weights.size());
  for (std::size_t i = 0; i < one.weights.size(); ++i)
    CHECK(std::memcmp(again.weights[i].raw(), one.weights[i].raw(), one.weights[i].bytes()) == 0);
  const Recorded other = fit_recording(8, nullptr, 6);
  CHECK(other.draws != one.draws);
  // Epochs draw anew.
  CHECK(one.draws.at({0, 3}) != one.draws.at({1, 3}));
}

TEST_CASE("transforms need float32 x") {
  const tandem::Dataset data(tandem::Tensor(Shape{4, 2}, tandem::DType::F64), tandem::Tensor(Shape{4}, tandem::DType::I32));
  CHECK_THROWS_WITH_AS(tandem::data::Batcher(data, 2, false, 0, {td::normalization({0}, {1})}),
                       doctest::Contains("transforms: they change float32 x, but x is float64"), tandem::ValueError);
}

TEST_CASE("random_crop takes the window at a corner uniform in 0 … 2·padding of the zero-padded image") {
  const Shape row{4, 5, 1};
  std::map<int64_t, int> tops;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::vector<float> x = ramp(20);
    std::mt19937_64 g(seed), check(seed);
    td::random_crop(2)(x, row, g);
    const double ut = static_cast<double>(check() >> 11) * 0x1.0p-53, ul = static_cast<double>(check() >> 11) * 0x1.0p-53;
    const auto top = static_cast<int64_t>(ut * 5), left = static_cast<int64_t>(ul * 5);
    ++tops[top];
    for (int64_t y = 0; y < 4; ++y)
      for (int64_t c = 0; c < 5; ++c) {
        // Output (y, c) is padded-image pixel (y + top, c + left), which is source (y + top − 2, c + left − 2).
        const int64_t sy = y + top - 2, sx = c + left - 2;
        const float want = (sy < 0 || sy >= 4 || sx < 0 || sx >= 5) ? 0.f : float(sy * 5 + sx + 1);
        CHECK(x[std::size_t(y * 5 + c)] == want);
      }
  }
  CHECK(tops.size() == 5);  // every corner 0 … 4 was drawn
  CHECK_THROWS_WITH_AS(td::random_crop(-1), doctest::Contains("padding must be >= 0, got -1"), tandem::ValueError);
}
