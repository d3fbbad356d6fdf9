// The f64 finite-difference gradient check shared by the gradient tests.
// the CPU kernels compute) is compared with central finite differences, in float64.
//
// For an op output y = op(x1, ..., xn) the differentiated scalar is L = Σ y ⊙ W, where W is a fixed
// random tensor fed as a placeholder, so every output element is weighted differently. For each
// differentiated input x, the analytic gradient a = dL/dx comes from one run of the compiled graph
// and the numeric one from two runs per element:
//   n_j = (L(x + h·e_j) − L(x − h·e_j)) / 2h,   h = 1e-6,
// and the check passes when
//   max_j |a_j − n_j| / max(max_j |n_j|, 1e-8) <= 1e-6.
// Inputs are kept away from kinks (relu at 0, |p − t| at 0) and clipping ranges so the finite
// differences never straddle one. Where a closed form is easy, the forward value is checked too.
#pragma once

#include <doctest/doctest.h>

#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <numeric>
#include <random>
#include <string>
#include <vector>
#include "autodiff/autodiff.h"
#include "distribute/strategy.h"
#include "ops/ops.h"
#include "backend/device.h"
#include "runtime/executable.h"
#include "lower_with.h"

namespace gradcheck {

using tandem::DType;
using tandem::Shape;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

constexpr double kStep = 1e-6;
constexpr double kTolerance = 1e-6;
constexpr double kFloor = 1e-8;
// The same graph on a GPU against the CPU, in float64: the order of summation may differ.
constexpr double kGpuTolerance = 1e-10;

inline std::vector<int64_t> all_axes(int rank) {
  std::vector<int64_t> axes(static_cast<std::size_t>(rank));
  std::iota(axes.begin(), axes.end(), int64_t{0});
  return axes;
}

// Flat index into `in` of the element that broadcasting maps to flat index `i` of `out`.
inline int64_t broadcast_source(const Shape& out, int64_t i, const Shape& in) {
  int64_t src = 0, stride = 1;
  for (int d = out.rank() - 1, e = in.rank() - 1; e >= 0; --d, --e) {
    const int64_t coord = i % out[d];
    i /= out[d];
    if (in[e] != 1) src += coord * stride;
    stride *= in[e];
  }
  return src;
}

// A placeholder of the graph under test and the host values written into it before every run.
struct Input {
  Value value;
  std::string name;
  DType dtype;
  std::vector<double> x;  // integer labels are held here too, as whole numbers
  bool differentiate;
};

struct Outcome {
  std::vector<double> y;      // the op's output (unperturbed inputs)
  std::vector<double> error;  // relative error per differentiated input, in creation order
};

// Builds one op's graph on placeholders, then checks its gradients (see the top of the file).
class GradCheck {
 public:
  explicit GradCheck(uint64_t seed = 1) : rng_(seed) {}
  Graph g;
  std::shared_ptr<const tandem::compile::Plan> plan;  // the last check's, to see what it ran

  Value uniform(const Shape& s, double lo = -2, double hi = 2) { return add(s, DType::F64, draw(s, lo, hi, false), true); }
  // Magnitudes in [lo, hi] with random signs: away from kinks and poles at zero.
  Value signed_away(const Shape& s, double lo, double hi) { return add(s, DType::F64, draw(s, lo, hi, true), true); }
  Value given(const Shape& s, std::vector<double> x) { return add(s, DType::F64, std::move(x), true); }
  // A float input that is not differentiated.
  Value fixed(const Shape& s, double lo, double hi) { return add(s, DType::F64, draw(s, lo, hi, false), false); }
  Value fixed(const Shape& s, std::vector<double> x) { return add(s, DType::F64, std::move(x), false); }
  // Integer class ids in [0, classes); never differentiated.
  Value labels(const Shape& s, int64_t classes, DType dtype) {
    std::uniform_int_distribution<int64_t> pick(0, classes - 1);
    std::vector<double> x(static_cast<std::size_t>(s.num_elements()));
    for (double& v : x) v = static_cast<double>(pick(rng_));
    return add(s, dtype, std::move(x), false);
  }
  const std::vector<double>& values(Value v) const {
    for (const Input& in : inputs_)
      if (in.value == v) return in.x;
    FAIL("not an input of this check");
    return inputs_.front().x;
  }

  Outcome check(Value y, const std::string& what) {
    INFO(what);
    const Shape shape = g.type(y).shape;
    REQUIRE(g.type(y).dtype == DType::F64);
    const Value w = add(shape, DType::F64, draw(shape, -1, 1, false), false);
    const Value loss = ops::reduce_sum(g, ops::mul(g, y, w), all_axes(shape.rank()));
    std::vector<Input*> diff;
    std::vector<Value> wrt;
    for (Input& in : inputs_)
      if (in.differentiate) diff.push_back(&in), wrt.push_back(in.value);
    const std::vector<Value> grads = tandem::autodiff::gradients(g, loss, wrt);
    std::vector<Value> fetches{loss, y};
    for (Value d : grads) {
      REQUIRE(d.valid());
      fetches.push_back(d);
    }
    plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
    tandem::runtime::Executable exe(
        plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")}, [](int, int) -> void* { return nullptr; });
    auto fetched = [&](int i) { return static_cast<const double*>(exe.fetch(0, i)); };
    // Placeholder buffers may be reused by later nodes, so every run writes every input afresh.
    auto run = [&] {
      for (const Input& in : inputs_) write(exe, in);
      exe.run();
      return *fetched(0);
    };

    run();
    Outcome out;
    out.y.assign(fetched(1), fetched(1) + shape.num_elements());
    std::vector<std::vector<double>> analytic;
    for (std::size_t k = 0; k < diff.size(); ++k)
      analytic.emplace_back(fetched(static_cast<int>(k) + 2), fetched(static_cast<int>(k) + 2) + diff[k]->x.size());
    for (std::size_t k = 0; k < diff.size(); ++k) {
      std::vector<double>& x = diff[k]->x;
      double worst = 0, scale = kFloor;
      for (std::size_t j = 0; j < x.size(); ++j) {
        const double saved = x[j];
        x[j] = saved + kStep;
        const double plus = run();
        x[j] = saved - kStep;
        const double minus = run();
        x[j] = saved;
        const double numeric = (plus - minus) / (2 * kStep);
        worst = std::max(worst, std::abs(analytic[k][j] - numeric));
        scale = std::max(scale, std::abs(numeric));
      }
      INFO("d/d " << diff[k]->name << ": max |analytic - numeric| = " << worst << ", max |numeric| = " << scale);
      CHECK(worst / scale <= kTolerance);
      out.error.push_back(worst / scale);
    }
    compare_on_gpu(plan, out.y, analytic);
    return out;
  }

 private:
  std::vector<double> draw(const Shape& s, double lo, double hi, bool random_sign) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::bernoulli_distribution coin(0.5);
    std::vector<double> x(static_cast<std::size_t>(s.num_elements()));
    for (double& v : x) v = u(rng_) * (random_sign && coin(rng_) ? -1.0 : 1.0);
    return x;
  }

  Value add(const Shape& s, DType dtype, std::vector<double> x, bool differentiate) {
    const std::string name = "in" + std::to_string(inputs_.size());
    const Value v = g.placeholder(name, {s, dtype});
    inputs_.push_back({v, name, dtype, std::move(x), differentiate});
    return v;
  }

  // Through the device's copy: the same code feeds the CPU and a GPU.
  static void write(const tandem::runtime::Executable& exe, const Input& in) {
    void* p = exe.feed(0, in.name);
    if (!p) return;  // the step does not read it
    std::vector<std::byte> bytes(in.x.size() * tandem::dtype_size(in.dtype));
    for (std::size_t i = 0; i < in.x.size(); ++i) {
      switch (in.dtype) {
        case DType::F64: reinterpret_cast<double*>(bytes.data())[i] = in.x[i]; break;
        case DType::I64: reinterpret_cast<int64_t*>(bytes.data())[i] = static_cast<int64_t>(in.x[i]); break;
        case DType::I32: reinterpret_cast<int32_t*>(bytes.data())[i] = static_cast<int32_t>(in.x[i]); break;
        case DType::F32:
        case DType::BF16:
        case DType::F16: FAIL(tandem::dtype_name(in.dtype) << " inputs are not checked here (finite differences need float64)"); break;
      }
    }
    exe.device(0).copy_in(p, bytes.data(), bytes.size());
  }

  // Where this machine has a GPU, the same plan runs on gpu:0 once: the op's output and every
  // gradient must equal the CPU's (float64; only the order of summation may differ), so each
  // gradient check also checks the op's CUDA kernels, forward and backward.
  void compare_on_gpu(const std::shared_ptr<const tandem::compile::Plan>& plan, const std::vector<double>& y,
                      const std::vector<std::vector<double>>& analytic) {
    static const std::string missing = tandem::backend::unavailable_reason("gpu:0");
    if (!missing.empty()) return;  // tests/test_cuda.cpp prints why
    tandem::runtime::Executable gpu(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("gpu:0")},
                                    [](int, int) -> void* { return nullptr; });
    for (const Input& in : inputs_) write(gpu, in);
    gpu.run();
    auto near = [](const std::vector<double>& got, const std::vector<double>& want, const char* what) {
      double worst = 0, scale = kFloor;
      for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i])), scale = std::max(scale, std::abs(want[i]));
      INFO("gpu:0 against the CPU, " << what << ": max difference " << worst << ", max |value| " << scale);
      CHECK(worst / scale <= kGpuTolerance);
    };
    std::vector<double> got(y.size());
    gpu.copy_fetch(0, 1, got.data(), got.size() * sizeof(double));
    near(got, y, "the op's output");
    for (std::size_t k = 0; k < analytic.size(); ++k) {
      got.resize(analytic[k].size());
      gpu.copy_fetch(0, static_cast<int>(k) + 2, got.data(), got.size() * sizeof(double));
      near(got, analytic[k], "a gradient");
    }
  }

  std::mt19937_64 rng_;
  std::vector<Input> inputs_;
};

}  // namespace gradcheck
