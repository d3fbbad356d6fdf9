// Runs one layer on float32 inputs and returns its output and the gradients of L = Σ y ⊙ w, for
// tests that compare layers with reference values (PyTorch's, Keras's).
#pragma once

#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "layer_base/call_context.h"
#include "tests/gradient_check.h"
#include "lower_with.h"

namespace layer_run {

using tandem::DType;
using tandem::Shape;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

// The largest |got − want| / max(1, |want|); fails above `tol`.
inline void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(1.0, std::abs(want[i])));
  INFO("max relative difference " << worst);
  CHECK(worst <= tol);
}

// Builds y = layer(x) on float32 placeholders, and L = Σ y ⊙ w; returns y and the gradients of L
// with respect to x and to each of the layer's weights, in order.
struct LayerResult {
  Shape y_shape;
  std::vector<std::vector<double>> values;  // y, dx, dweight...
};

inline LayerResult run_layer(const tandem::LayerRef& layer, const Shape& xs, const std::vector<double>& x, const std::vector<double>& w) {
  layer->build_for({xs.without_batch()});
  Graph g;
  const Value xv = g.placeholder("x", {xs, DType::F32});
  tandem::CallContext ctx(g, true, ops::fill(g, {Shape{}, DType::I64}, 0));
  const Value y = layer->emit(ctx, {xv});
  const Value wv = g.placeholder("w", {g.type(y).shape, DType::F32});
  const Value loss = ops::reduce_sum(g, ops::mul(g, y, wv), gradcheck::all_axes(g.type(y).shape.rank()));
  std::vector<Value> wrt{xv};
  for (const auto& v : layer->weights()) wrt.push_back(ctx.variable(*v));
  std::vector<Value> fetches{y};
  for (Value d : tandem::autodiff::gradients(g, loss, wrt)) fetches.push_back(d);
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
  tandem::runtime::Executable exe(
      plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")},
      [&](int, int id) -> void* {
        for (const auto& v : layer->weights())
          if (v->id() == id) return v->value().raw();
        return nullptr;
      });
  auto write = [&](const char* name, const std::vector<double>& v) {
    auto* p = static_cast<float*>(exe.feed(0, name));
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = static_cast<float>(v[i]);
  };
  write("x", x);
  write("w", w);
  exe.run();
  LayerResult r{g.type(y).shape, {}};
  for (std::size_t i = 0; i < fetches.size(); ++i) {
    const auto* p = static_cast<const float*>(exe.fetch(0, static_cast<int>(i)));
    r.values.emplace_back(p, p + g.type(fetches[i]).shape.num_elements());
  }
  return r;
}

}  // namespace layer_run
