// tandem::batches: a Dataset's batches without a model, as fit stages them — the rows in order
// (or a seeded permutation of them), the same bits from memory, from a streamed source at any
// decode thread count, and from a source of whole batches.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "strategy_helpers.h"

using tandem::Dataset;
using tandem::Tensor;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && (a.bytes() == 0 || std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
}

std::vector<tandem::Batch> all(tandem::BatchStream stream) {
  std::vector<tandem::Batch> out;
  for (const tandem::Batch& b : stream) out.push_back(b);
  return out;
}

// The x rows of every batch, each as its first feature's value (blobs' rows are distinct).
std::vector<float> first_features(const std::vector<tandem::Batch>& batches) {
  std::vector<float> v;
  for (const auto& b : batches)
    for (int64_t r = 0; r < b.x[0].shape()[0]; ++r) v.push_back(b.x[0].data<float>()[r * 20]);
  return v;
}

}  // namespace

TEST_CASE("batches: in order, the dataset's rows in slices, the last partial") {
  const Dataset memory = blobs(70, 20, 5);
  tandem::BatchStream stream = tandem::batches(memory, {.batch_size = 32});
  CHECK(stream.size() == 3);
  const auto got = all(std::move(stream));
  REQUIRE(got.size() == 3);
  for (int64_t b = 0; b < 3; ++b) {
    CHECK(got[b].index == b);
    const int64_t begin = b * 32, end = std::min<int64_t>(70, begin + 32);
    CHECK(same_bits(got[b].x[0], memory.x().rows(begin, end)));
    CHECK(same_bits(got[b].y[0], memory.y().rows(begin, end)));
  }
  CHECK(got[2].x[0].shape() == tandem::Shape{6, 20});
}

TEST_CASE("batches: shuffled, a permutation fixed by (seed, epoch), the same bits streamed at any thread count") {
  const Dataset memory = blobs(100, 20, 5);
  const auto shuffled = all(tandem::batches(memory, {.batch_size = 16, .shuffle = true, .seed = 3, .epoch = 1}));
  std::vector<float> order = first_features(shuffled), rows = first_features(all(tandem::batches(memory, {.batch_size = 100})));
  CHECK(order != rows);
  std::vector<float> sorted_order = order, sorted_rows = rows;
  std::sort(sorted_order.begin(), sorted_order.end()), std::sort(sorted_rows.begin(), sorted_rows.end());
  CHECK(sorted_order == sorted_rows);  // every row once
  CHECK(first_features(all(tandem::batches(memory, {.batch_size = 16, .shuffle = true, .seed = 3, .epoch = 2}))) != order);
  CHECK(first_features(all(tandem::batches(memory, {.batch_size = 16, .shuffle = true, .seed = 4, .epoch = 1}))) != order);

  const Tensor x = memory.x(), y = memory.y();
  for (const int threads : {1, 4}) {
    CAPTURE(threads);
    const Dataset streamed = tandem::datasets::from_function<float, int32_t>(
        100, {20}, {},
        [&](int64_t i, std::span<float> row, std::span<int32_t> label) {
          std::copy_n(x.data<float>() + i * 20, 20, row.begin());
          label[0] = y.data<int32_t>()[i];
        },
        {.num_parallel_calls = threads});
    const auto got = all(tandem::batches(streamed, {.batch_size = 16, .shuffle = true, .seed = 3, .epoch = 1}));
    REQUIRE(got.size() == shuffled.size());
    for (std::size_t b = 0; b < got.size(); ++b) {
      CHECK(same_bits(got[b].x[0], shuffled[b].x[0]));
      CHECK(same_bits(got[b].y[0], shuffled[b].y[0]));
    }
  }
}

TEST_CASE("batches: transforms and row maps apply as in fit; a source of whole batches gives its own batches") {
  const Dataset memory = blobs(40, 20, 5);
  auto shift = [](std::span<float> x, const tandem::Shape&, std::mt19937_64&) { x[0] += 1000.f; };
  const auto mapped = all(tandem::batches(memory.map_y(tandem::datasets::one_hot(5)), {.batch_size = 40, .transforms = {shift}}));
  REQUIRE(mapped.size() == 1);
  CHECK(mapped[0].y[0].shape() == tandem::Shape{40, 5});
  for (int64_t r = 0; r < 40; ++r) {
    CHECK(mapped[0].x[0].data<float>()[r * 20] == memory.x().data<float>()[r * 20] + 1000.f);
    CHECK(mapped[0].y[0].data<float>()[r * 5 + memory.y().data<int32_t>()[r]] == 1.f);
  }
  const Dataset made = tandem::datasets::from_batch_function<float, int32_t>(
      40, 15, {20}, {}, [&](int64_t batch, int64_t rows, std::span<float> xs, std::span<int32_t> ys) {
        std::copy_n(memory.x().data<float>() + batch * 15 * 20, rows * 20, xs.begin());
        std::copy_n(memory.y().data<int32_t>() + batch * 15, rows, ys.begin());
      });
  const auto got = all(tandem::batches(made, {.batch_size = 8, .shuffle = true}));  // neither is used: the source's batches
  REQUIRE(got.size() == 3);
  CHECK(same_bits(got[1].x[0], memory.x().rows(15, 30)));
  CHECK(same_bits(got[2].y[0], memory.y().rows(30, 40)));
}

TEST_CASE("batches: next() after the last batch gives none; a bad batch_size is refused") {
  tandem::BatchStream stream = tandem::batches(blobs(10, 20, 5), {.batch_size = 10});
  CHECK(stream.next().has_value());
  CHECK_FALSE(stream.next().has_value());
  CHECK_FALSE(stream.next().has_value());
  CHECK_THROWS_WITH_AS(tandem::batches(blobs(10, 20, 5), {.batch_size = 0}), "batches: batch_size must be >= 1, got 0", tandem::ValueError);
}
