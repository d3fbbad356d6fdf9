// Initializers: Constant, Identity and Orthogonal exactly; the random classes by the statistics of
// a large draw against Keras 3's draw of the same initializer and shape (the fans of a conv kernel
// as Keras's compute_fans gives them); seeds; configs as Keras serialises them
// (tests/data/initializer_refs.json, made by tests/data/make_regularizer_refs.py).
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config/config_reader.h"
#include "layer_base/initializers.h"

namespace fs = std::filesystem;
namespace I = tandem::initializers;
namespace tl = tandem::layers;
using tandem::DType;
using tandem::Initializer;
using tandem::Shape;
using tandem::Tensor;
using Json = tandem::config::Json;

namespace {

Json refs() {
  std::ifstream in(fs::path(TANDEM_TEST_DATA) / "initializer_refs.json");
  REQUIRE(in.good());
  return Json::parse(in);
}

Tensor draw(const Initializer& init, const Shape& shape) { return tandem::initialize(init, shape, DType::F64, "test"); }

struct Stats {
  double mean = 0, sd = 0, min = INFINITY, max = -INFINITY;
};
Stats stats(const Tensor& t) {
  Stats s;
  const auto v = t.values<double>();
  for (double x : v) s.mean += x, s.min = std::min(s.min, x), s.max = std::max(s.max, x);
  s.mean /= double(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(s.sd / double(v.size()));
  return s;
}

// The same initializers as make_regularizer_refs.py's INITIALIZERS.
std::vector<std::pair<std::string, Initializer>> initializers() {
  return {{"constant", I::Constant(0.25)},
          {"zeros", I::Zeros()},
          {"ones", I::Ones()},
          {"identity", I::Identity(2.0)},
          {"orthogonal", I::Orthogonal(1.5, 3)},
          {"variance_fan_out_uniform", I::VarianceScaling(2.0, "fan_out", "uniform", 1)},
          {"variance_fan_avg_untruncated", I::VarianceScaling(0.5, "fan_avg", "untruncated_normal")},
          {"variance_fan_in_truncated", I::VarianceScaling(3.0, "fan_in", "truncated_normal", 4)},
          {"truncated_normal", I::TruncatedNormal(0.5, 0.1, 5)},
          {"random_normal", I::RandomNormal(1.0, 2.0, 6)},
          {"random_uniform", I::RandomUniform(-1.0, 3.0, 7)},
          {"glorot_uniform", I::GlorotUniform(8)},
          {"glorot_normal", I::GlorotNormal()},
          {"he_uniform", I::HeUniform()},
          {"he_normal", I::HeNormal(9)},
          {"lecun_uniform", I::LecunUniform(10)},
          {"lecun_normal", I::LecunNormal()}};
}

}  // namespace

TEST_CASE("initializers: every class draws as Keras 3's does: mean, standard deviation and range of a large draw") {
  const Json r = refs();
  for (const auto& [name, init] : initializers()) {
    for (const Json& d : r.at("initializers").at(name).at("draws")) {
      const Shape shape(d.at("shape").get<std::vector<int64_t>>());
      INFO(name << " " << shape.str());
      const Stats s = stats(draw(init, shape));
      const double sd = d.at("std").get<double>(), n = double(shape.num_elements());
      // Sampling error: the mean within 5 standard errors, the deviation within 3 %.
      CHECK(std::abs(s.mean - d.at("mean").get<double>()) <= 5 * sd / std::sqrt(n) + 1e-12);
      CHECK(s.sd == doctest::Approx(sd).epsilon(0.03));
      // Uniform and truncated draws have hard bounds, which a large draw almost reaches.
      const bool bounded = name.find("uniform") != std::string::npos || (name.find("truncated") != std::string::npos && name.find("untruncated") == std::string::npos) ||
                           name == "glorot_normal" || name == "he_normal" || name == "lecun_normal";
      if (bounded || sd == 0) {
        CHECK(std::abs(s.min - d.at("min").get<double>()) <= 0.05 * sd + 1e-12);
        CHECK(std::abs(s.max - d.at("max").get<double>()) <= 0.05 * sd + 1e-12);
      }
    }
  }
}

TEST_CASE("initializers: VarianceScaling's fans are Keras's compute_fans (a conv kernel multiplies by its receptive field)") {
  const Json r = refs();
  for (const Json& f : r.at("fans")) {
    const Shape shape(f.at("shape").get<std::vector<int64_t>>());
    const double fan_in = f.at("fans")[0].get<double>(), fan_out = f.at("fans")[1].get<double>();
    INFO(shape.str());
    // Uniform draws span ±sqrt(3·scale/fan): their largest magnitude tells the fan.
    for (const auto& [mode, fan] : {std::pair{"fan_in", fan_in}, {"fan_out", fan_out}, {"fan_avg", (fan_in + fan_out) / 2}}) {
      const Tensor t = draw(I::VarianceScaling(1.0, mode, "uniform", 11), shape);
      const double limit = std::sqrt(3.0 / fan);
      const Stats s = stats(t);
      CHECK(s.max <= limit);
      CHECK(s.min >= -limit);
      if (shape.num_elements() > 1000) CHECK(std::max(s.max, -s.min) >= 0.99 * limit);
    }
  }
}

TEST_CASE("initializers: Constant, Zeros, Ones, Identity and Orthogonal give their exact values") {
  const Tensor constant = draw(I::Constant(-1.5), {3, 4}), ones = draw("ones", {5}), zeros = draw(I::Zeros(), {2, 2});
  for (double x : constant.values<double>()) CHECK(x == -1.5);
  for (double x : ones.values<double>()) CHECK(x == 1.0);
  for (double x : zeros.values<double>()) CHECK(x == 0.0);
  const Tensor eye = draw(I::Identity(2.0), {2, 3});
  const std::vector<double> expected{2, 0, 0, 0, 2, 0};
  for (std::size_t i = 0; i < 6; ++i) CHECK(eye.values<double>()[i] == expected[i]);
  CHECK_THROWS_WITH_AS((draw(I::Identity(), Shape{2, 3, 4})), doctest::Contains("test: the Identity initializer needs a 2-D weight"), tandem::ValueError);
  // Orthogonal: the columns (more rows than columns) or the rows are orthonormal, times the gain;
  // a conv kernel is flattened to (every axis but the last, the last).
  for (const Shape& shape : {Shape{5, 3}, Shape{3, 5}, Shape{2, 2, 3, 4}}) {
    INFO(shape.str());
    const double gain = 1.5;
    const Tensor q = draw(I::Orthogonal(gain, 2), shape);
    const int64_t cols = shape[-1], rows = shape.num_elements() / cols;
    const bool by_columns = rows >= cols;
    const int64_t n = by_columns ? cols : rows, len = by_columns ? rows : cols;
    auto at = [&](int64_t vec, int64_t k) { return q.values<double>()[by_columns ? k * cols + vec : vec * cols + k]; };
    for (int64_t a = 0; a < n; ++a)
      for (int64_t b = 0; b < n; ++b) {
        double dot = 0;
        for (int64_t k = 0; k < len; ++k) dot += at(a, k) * at(b, k);
        CHECK(dot == doctest::Approx(a == b ? gain * gain : 0.0).epsilon(1e-12).scale(1.0));
      }
  }
}

TEST_CASE("initializers: a seeded initializer draws from its seed alone, an unseeded one from the global seed") {
  tandem::set_random_seed(1);
  const Tensor a = draw(I::HeNormal(42), {4, 5});
  draw("glorot_uniform", {3, 3});  // draws from the global stream
  tandem::set_random_seed(2);
  const Tensor b = draw(I::HeNormal(42), {4, 5});
  const Tensor c = draw(I::HeNormal(43), {4, 5});
  for (int64_t i = 0; i < 20; ++i) CHECK(a.values<double>()[i] == b.values<double>()[i]);
  CHECK(a.values<double>()[0] != c.values<double>()[0]);
  tandem::set_random_seed(7);
  const Tensor u = draw(I::HeNormal(), {4, 5});
  tandem::set_random_seed(7);
  const Tensor v = draw(I::HeNormal(), {4, 5});
  const Tensor w = draw(I::HeNormal(), {4, 5});
  for (int64_t i = 0; i < 20; ++i) CHECK(u.values<double>()[i] == v.values<double>()[i]);
  CHECK(u.values<double>()[0] != w.values<double>()[0]);
  // A layer takes them as its options: two layers with one seeded initializer start equal.
  auto x = tandem::Input({3});
  auto d1 = tl::Dense(4, "", {.kernel_initializer = I::RandomUniform(-1, 1, 5)});
  auto d2 = tl::Dense(4, "", {.kernel_initializer = I::RandomUniform(-1, 1, 5)});
  tandem::Model m(x, tl::Add()({d1(x), d2(x)}));
  const std::vector<Tensor> weights = m.get_weights();
  for (int64_t i = 0; i < 12; ++i) CHECK(weights[0].values<float>()[i] == weights[2].values<float>()[i]);
}

TEST_CASE("initializers: configs are Keras 3's for every class, and Keras's configs read back to the same initializer") {
  const Json r = refs();
  for (const auto& [name, init] : initializers()) {
    INFO(name);
    const Json keras = r.at("initializers").at(name).at("config");
    Json ours = tandem::config::initializer_json(init);
    if (name == "identity") ours.at("config").erase("gain");  // Keras 3.15 writes no gain (and loses it); Tandem keeps it
    CHECK(ours.dump() == keras.dump());
    const Json config = {{"k", keras}};
    const tandem::config::ConfigReader c("Dense", config);
    const Initializer back = c.initializer("k", "zeros");
    if (name == "identity") CHECK(back == I::Identity(1.0));
    else CHECK(back == init);
  }
  // Names, as Keras's initializers.get takes them.
  CHECK(Initializer("random_uniform") == I::RandomUniform());
  CHECK(Initializer("uniform") == I::RandomUniform());
  CHECK(Initializer("HeNormal") == I::HeNormal());
  CHECK(Initializer("variance_scaling") == I::VarianceScaling());
  // Arguments Keras refuses.
  CHECK_THROWS_WITH_AS(I::VarianceScaling(0.0), doctest::Contains("scale must be positive"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(I::VarianceScaling(1.0, "fan_sum"), doctest::Contains("mode must be"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(I::VarianceScaling(1.0, "fan_in", "cauchy"), doctest::Contains("distribution must be"), tandem::ValueError);
  const Json bad = {{"k", {{"class_name", "VarianceScaling"}, {"config", {{"input_axes", {0}}}}}}};
  CHECK_THROWS_WITH_AS(tandem::config::ConfigReader("Dense", bad).initializer("k", "zeros"), doctest::Contains("input_axes null"), tandem::ValueError);
}
