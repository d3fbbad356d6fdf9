// bfloat16 and float16 tensors: conversions against closed-form bit patterns (exact values, ties to
// even, subnormals, overflow, infinities, NaN), float64 rounded once rather than through float32,
// Tensor::cast/item/from, and HDF5 datasets of both types.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <tandem/tandem.h>

#include "io/hdf5_file.h"
#include "scratch_dir.h"

using tandem::bfloat16;
using tandem::DType;
using tandem::float16;
using tandem::Shape;
using tandem::Tensor;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Bit patterns of the converted value, from float and from double (the same number).
uint16_t bf(float x) { return bfloat16(x).bits; }
uint16_t bf(double x) { return bfloat16(x).bits; }
uint16_t hf(float x) { return float16(x).bits; }
uint16_t hf(double x) { return float16(x).bits; }

bool bf_is_nan(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0; }
bool hf_is_nan(uint16_t b) { return (b & 0x7C00) == 0x7C00 && (b & 0x03FF) != 0; }

}  // namespace

TEST_CASE("dtype names and sizes of the 16-bit floats are Keras's") {
  CHECK(std::string(tandem::dtype_name(DType::BF16)) == "bfloat16");
  CHECK(std::string(tandem::dtype_name(DType::F16)) == "float16");
  CHECK(tandem::dtype_size(DType::BF16) == 2);
  CHECK(tandem::dtype_size(DType::F16) == 2);
  CHECK(tandem::dtype_of<bfloat16>() == DType::BF16);
  CHECK(tandem::dtype_of<float16>() == DType::F16);
  // Appended: the integers earlier dtypes are stored as (graph attributes) do not move.
  CHECK(static_cast<int>(DType::I64) == 3);
  CHECK(static_cast<int>(DType::BF16) == 4);
  CHECK(static_cast<int>(DType::F16) == 5);
}

TEST_CASE("bfloat16: exact values, ties to even, subnormals, overflow, inf and NaN") {
  CHECK(bf(1.0f) == 0x3F80);
  CHECK(bf(-2.0f) == 0xC000);
  CHECK(bf(0.0f) == 0x0000);
  CHECK(bf(-0.0f) == 0x8000);
  CHECK(bf(1.0078125f) == 0x3F81);  // 1 + 2^-7, the next value after 1
  // Halfway between two neighbours: to the one with an even last bit.
  CHECK(bf(1.0f + 0x1p-8f) == 0x3F80);
  CHECK(bf(1.0f + 3 * 0x1p-8f) == 0x3F82);
  CHECK(bf(-(1.0f + 0x1p-8f)) == 0xBF80);
  CHECK(bf(1.0f + 0x1p-8f + 0x1p-20f) == 0x3F81);  // just above halfway: up
  CHECK(bf(1.0f + 0x1p-8f - 0x1p-20f) == 0x3F80);  // just below: down
  // Subnormals: the smallest is 2^-133.
  CHECK(bf(0x1p-133f) == 0x0001);
  CHECK(bf(0x1p-134f) == 0x0000);      // halfway to 0: even
  CHECK(bf(3 * 0x1p-134f) == 0x0002);  // halfway between 1 and 2 ulps: even
  CHECK(bf(0x1p-126f) == 0x0080);      // the smallest normal
  // The largest finite value is 0x7F7F = (2 - 2^-7) 2^127; from halfway above it, infinity.
  CHECK(bf(0x1.fep127f) == 0x7F7F);
  CHECK(bf(0x1.ffp127f) == 0x7F80);
  CHECK(bf(0x1.feffp127f) == 0x7F7F);
  CHECK(bf(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(bf(1e39) == 0x7F80);
  CHECK(bf(-1e39) == 0xFF80);
  CHECK(bf(kInf) == 0x7F80);
  CHECK(bf(-kInf) == 0xFF80);
  CHECK(bf_is_nan(bf(kNaN)));
  CHECK(bf_is_nan(bf(static_cast<double>(kNaN))));
  // Back to float, exactly.
  CHECK(static_cast<float>(bfloat16::from_bits(0x3F81)) == 1.0078125f);
  CHECK(static_cast<float>(bfloat16::from_bits(0x0001)) == 0x1p-133f);
  CHECK(static_cast<float>(bfloat16::from_bits(0x7F7F)) == 0x1.fep127f);
  CHECK(static_cast<float>(bfloat16::from_bits(0xFF80)) == -kInf);
  CHECK(std::isnan(static_cast<float>(bfloat16::from_bits(0x7FC0))));
  // Integers go through double: 257 is halfway between 256 and 258.
  CHECK(bfloat16(257).bits == 0x4380);
  CHECK(bfloat16(int64_t{259}).bits == 0x4382);
}

TEST_CASE("float16: exact values, ties to even, subnormals, overflow past 65504, inf and NaN") {
  CHECK(hf(1.0f) == 0x3C00);
  CHECK(hf(-2.0f) == 0xC000);
  CHECK(hf(-0.0f) == 0x8000);
  CHECK(hf(0.1f) == 0x2E66);  // 0.0999755859375
  CHECK(hf(1.0f + 0x1p-11f) == 0x3C00);
  CHECK(hf(1.0f + 3 * 0x1p-11f) == 0x3C02);
  CHECK(hf(1.0f + 0x1p-11f + 0x1p-22f) == 0x3C01);
  // Subnormals: the smallest is 2^-24; the smallest normal 2^-14.
  CHECK(hf(0x1p-24f) == 0x0001);
  CHECK(hf(0x1p-25f) == 0x0000);
  CHECK(hf(3 * 0x1p-25f) == 0x0002);
  CHECK(hf(0x1p-14f) == 0x0400);
  CHECK(hf(1e-10f) == 0x0000);
  // 65504 is the largest; 65520 is halfway to 65536 (infinity's place) and rounds to infinity.
  CHECK(hf(65504.0f) == 0x7BFF);
  CHECK(hf(65519.0f) == 0x7BFF);
  CHECK(hf(65520.0f) == 0x7C00);
  CHECK(hf(-65520.0f) == 0xFC00);
  CHECK(hf(1e5) == 0x7C00);
  CHECK(hf(kInf) == 0x7C00);
  CHECK(hf(-kInf) == 0xFC00);
  CHECK(hf_is_nan(hf(kNaN)));
  CHECK(static_cast<float>(float16::from_bits(0x7BFF)) == 65504.0f);
  CHECK(static_cast<float>(float16::from_bits(0x0001)) == 0x1p-24f);
  CHECK(static_cast<float>(float16::from_bits(0x2E66)) == 0.0999755859375f);
  CHECK(std::isnan(static_cast<float>(float16::from_bits(0x7E00))));
}

TEST_CASE("float64 rounds once to the 16-bit floats, not through float32") {
  // Each double lies just above a 16-bit tie, but so close that float32 rounds it onto the tie,
  // which would then round to even (down): once rounded, it goes up.
  const double bf_tie_above = 1.0 + 0x1p-8 + 0x1p-40;
  REQUIRE(static_cast<float>(bf_tie_above) == 1.0f + 0x1p-8f);
  CHECK(bf(bf_tie_above) == 0x3F81);
  CHECK(bf(-bf_tie_above) == 0xBF81);
  CHECK(bf(0x1p-134 + 0x1p-160) == 0x0001);  // in the subnormals too
  const double hf_tie_above = 1.0 + 0x1p-11 + 0x1p-40;
  REQUIRE(static_cast<float>(hf_tie_above) == 1.0f + 0x1p-11f);
  CHECK(hf(hf_tie_above) == 0x3C01);
  CHECK(hf(0x1p-25 + 0x1p-60) == 0x0001);
  // And just below a tie: down, though float32 would round onto the tie from below.
  CHECK(bf(1.0 + 3 * 0x1p-8 - 0x1p-40) == 0x3F81);
  CHECK(hf(1.0 + 3 * 0x1p-11 - 0x1p-40) == 0x3C01);
  // Exact ties in float64 still go to even.
  CHECK(bf(1.0 + 0x1p-8) == 0x3F80);
  CHECK(hf(65520.0) == 0x7C00);
  CHECK(hf(65519.999) == 0x7BFF);
  // Beyond float32's range: infinity for both; far below: zero, keeping the sign.
  CHECK(bf(1e300) == 0x7F80);
  CHECK(hf(-1e300) == 0xFC00);
  CHECK(bf(1e-300) == 0x0000);
  CHECK(bf(-1e-300) == 0x8000);
}

TEST_CASE("Tensor::from, item and cast with the 16-bit floats") {
  const std::vector<bfloat16> b = {bfloat16(1.5f), bfloat16(-0.25f), bfloat16::from_bits(0x7F80)};
  const Tensor tb = Tensor::from(Shape{3}, std::span<const bfloat16>(b));
  CHECK(tb.dtype() == DType::BF16);
  CHECK(tb.bytes() == 6);
  CHECK(tb.item(0) == 1.5);
  CHECK(tb.item(1) == -0.25);
  CHECK(std::isinf(tb.item(2)));
  CHECK(tb.values<bfloat16>()[1].bits == 0xBE80);
  CHECK_THROWS_WITH_AS((void)tb.data<float16>(), "Tensor::data: tensor holds bfloat16, asked for float16", tandem::ValueError);

  // float64 -> bfloat16 / float16: each value rounded once.
  const std::vector<double> d = {1.0 + 0x1p-8 + 0x1p-40, 1.0 + 0x1p-8, 65520.0, -3.0, 0x1p-25 + 0x1p-60};
  const Tensor td = Tensor::from(Shape{5}, std::span<const double>(d));
  const Tensor to_bf = td.cast(DType::BF16);
  CHECK(to_bf.values<bfloat16>()[0].bits == 0x3F81);
  CHECK(to_bf.values<bfloat16>()[1].bits == 0x3F80);
  CHECK(to_bf.values<bfloat16>()[3].bits == 0xC040);
  const Tensor to_hf = td.cast(DType::F16);
  CHECK(to_hf.values<float16>()[0].bits == 0x3C04);  // 1 + 2^-8 is exact in float16
  CHECK(to_hf.values<float16>()[2].bits == 0x7C00);
  CHECK(to_hf.values<float16>()[4].bits == 0x0001);

  // Back up to float32/float64 exactly, and down to integers by truncation.
  const std::vector<float16> h = {float16(2.75f), float16(-2.75f), float16(65504.0f)};
  const Tensor th = Tensor::from(Shape{3}, std::span<const float16>(h));
  CHECK(th.cast(DType::F32).values<float>()[0] == 2.75f);
  CHECK(th.cast(DType::F64).values<double>()[2] == 65504.0);
  CHECK(th.cast(DType::I32).values<int32_t>()[0] == 2);
  CHECK(th.cast(DType::I64).values<int64_t>()[1] == -2);
  CHECK(th.cast(DType::BF16).values<bfloat16>()[0].bits == 0x4030);  // 2.75 exactly
  CHECK(th.cast(DType::BF16).values<bfloat16>()[2].bits == 0x4780);  // 65504 -> 65536 (7 mantissa bits)
  const std::vector<int32_t> ints = {257, -259, 1 << 30};
  const Tensor ti = Tensor::from(Shape{3}, std::span<const int32_t>(ints));
  CHECK(ti.cast(DType::BF16).values<bfloat16>()[0].bits == 0x4380);
  CHECK(ti.cast(DType::BF16).values<bfloat16>()[1].bits == 0xC382);
  CHECK(ti.cast(DType::F16).values<float16>()[2].bits == 0x7C00);  // 2^30 overflows float16
}

TEST_CASE("HDF5 datasets of bfloat16 and float16: written, described, read back and converted") {
  const ScratchRoot root("tandem_low_float");
  const std::string path = (root.fresh("h5") / "low.h5").string();
  const std::vector<float16> h = {float16(0.1f), float16(-65504.0f), float16::from_bits(0x0001), float16::from_bits(0x7C00)};
  const std::vector<bfloat16> b = {bfloat16(3.0f), bfloat16::from_bits(0x0001), bfloat16::from_bits(0xFF80)};
  const std::vector<float> ties = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-8f, 70000.0f};
  {
    auto f = tandem::io::H5File::create(path);
    f.write_dataset("h", Tensor::from(Shape{2, 2}, std::span<const float16>(h)));
    f.write_dataset("b", Tensor::from(Shape{3}, std::span<const bfloat16>(b)));
    f.write_dataset("ties", Tensor::from(Shape{4}, std::span<const float>(ties)));
    f.close();
  }
  const auto f = tandem::io::H5File::open(path);
  const auto hi = f.dataset_info("h");
  CHECK(hi.type_name == "float16");
  CHECK(hi.dtype == DType::F16);
  CHECK(f.dataset_info("b").type_name == "bfloat16");
  const Tensor rh = f.read_dataset("h");
  REQUIRE(rh.dtype() == DType::F16);
  for (int i = 0; i < 4; ++i) CHECK(rh.values<float16>()[static_cast<std::size_t>(i)].bits == h[static_cast<std::size_t>(i)].bits);
  const Tensor rb = f.read_dataset("b");
  REQUIRE(rb.dtype() == DType::BF16);
  for (int i = 0; i < 3; ++i) CHECK(rb.values<bfloat16>()[static_cast<std::size_t>(i)].bits == b[static_cast<std::size_t>(i)].bits);
  // Widened by HDF5: exact.
  Tensor wide(Shape{2, 2}, DType::F32);
  f.read_dataset_into("h", wide);
  CHECK(wide.values<float>()[0] == 0.0999755859375f);
  CHECK(wide.values<float>()[1] == -65504.0f);
  CHECK(wide.values<float>()[2] == 0x1p-24f);
  CHECK(std::isinf(wide.values<float>()[3]));
  Tensor bwide(Shape{3}, DType::F64);
  f.read_dataset_into("b", bwide);
  CHECK(bwide.values<double>()[1] == 0x1p-133);
  // Narrowed from float32: ties to even, overflow to infinity.
  Tensor narrow(Shape{4}, DType::F16);
  f.read_dataset_into("ties", narrow);
  CHECK(narrow.values<float16>()[0].bits == 0x3C00);
  CHECK(narrow.values<float16>()[1].bits == 0x3C02);
  CHECK(narrow.values<float16>()[3].bits == 0x7C00);
  std::vector<bfloat16> rows(2);
  f.read_rows_into("ties", 1, 2, DType::BF16, rows.data());
  CHECK(rows[0].bits == 0x3F80);  // 1 + 3 2^-11 -> 1 (below bfloat16's halfway 1 + 2^-8)
  CHECK(rows[1].bits == 0x3F80);  // 1 + 2^-8: the tie, to even
}
