// Convolution at the Fashion-MNIST CNN's shapes (batch 128, 3×3 "valid", channels-last): Tandem's
// CPU kernels (im2col + GEMM, images split over the device's threads) against oneDNN's convolution
// primitives on the same channels-last activations (forward with ReLU as a post-op, backward data,
// backward weights), their weights channels-last too or in the layout oneDNN picks, each on 1 and
// 2 threads (oneDNN's on OpenMP's), in ms per call (best of 30 after a warm-up).
//
// Usage: MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296 build/bench_conv
//        (glibc's malloc kept from unmapping oneDNN's per-call scratch, as the other benchmarks do)
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cpu/context.h"
#include "backend/kernel_registry.h"
#include "graph/graph.h"
#include "ops/conv.h"

namespace {
using tandem::Shape;
using tandem::TensorType;
namespace backend = tandem::backend;
namespace graph = tandem::graph;

double best_ms(const std::function<void()>& f) {
  f();
  double best = 1e30;
  for (int run = 0; run < 30; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

struct Conv {
  const char* what;
  int64_t n, h, w, c, f;
  int64_t oh() const { return h - 2; }
  int64_t ow() const { return w - 2; }
};

// Tandem's three kernels for `s`, as a compiled program would run them.
struct TandemConv {
  graph::Graph g;
  std::vector<float> x, k, y, dy, dx, dk;
  std::vector<backend::KernelFn> kernels;

  TandemConv(const Conv& s, backend::cpu::Context& ctx)
      : x(size_t(s.n * s.h * s.w * s.c), 0.5f), k(size_t(9 * s.c * s.f), 0.25f), y(size_t(s.n * s.oh() * s.ow() * s.f)),
        dy(y.size(), 0.125f), dx(x.size()), dk(k.size()) {
    const TensorType xt{Shape{s.n, s.h, s.w, s.c}}, kt{Shape{3, 3, s.c, s.f}}, yt{Shape{s.n, s.oh(), s.ow(), s.f}};
    const graph::Value xv = g.placeholder("x", xt), kv = g.placeholder("k", kt), dyv = g.placeholder("dy", yt);
    const graph::Value yv = tandem::ops::conv2d(g, xv, kv);
    const graph::Value dxv = tandem::ops::conv2d_backprop_input(g, dyv, kv, xt.shape, {1, 1}, {1, 1}, "valid");
    const graph::Value dkv = tandem::ops::conv2d_backprop_filter(g, xv, dyv, kt.shape, {1, 1}, {1, 1}, "valid");
    const auto make = [&](graph::Value v, std::vector<TensorType> types, std::vector<void*> in, void* out) {
      const graph::Node& node = g.node(v.node);
      const backend::KernelInit init{node, std::move(types), std::move(in), {out}, &ctx};
      kernels.push_back(backend::find_kernel(node.op, backend::DeviceKind::Cpu, tandem::DType::F32)(init));
    };
    make(yv, {xt, kt}, {x.data(), k.data()}, y.data());
    make(dxv, {yt, kt}, {dy.data(), k.data()}, dx.data());
    make(dkv, {xt, yt}, {x.data(), dy.data()}, dk.data());
  }
};

// oneDNN's three primitives for `s` on channels-last tensors and (kh, kw, C, F) weights.
struct OneDnnConv {
  using tag = dnnl::memory::format_tag;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  dnnl::memory::desc xd, yd, kd;
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::primitive fwd{fwd_pd}, bwd_data{data_pd}, bwd_weights{weights_pd};
  // Filled as Tandem's are: left uninitialised, a reused allocation can hold denormals.
  dnnl::memory x = filled(xd, 0.5f), y = filled(yd, 0), dy = filled(yd, 0.125f), dx = filled(xd, 0);
  dnnl::memory k = filled(fwd_pd.weights_desc(), 0.25f), k_for_data = filled(data_pd.weights_desc(), 0.25f),
               dk = filled(weights_pd.diff_weights_desc(), 0);

  // `blocked_weights`: the weights in the layout each primitive picks (format `any`), where the
  // activations stay channels-last; a framework would reorder its weights once a step.
  OneDnnConv(const Conv& s, bool blocked_weights)
      : xd({s.n, s.c, s.h, s.w}, dnnl::memory::data_type::f32, tag::nhwc),
        yd({s.n, s.f, s.oh(), s.ow()}, dnnl::memory::data_type::f32, tag::nhwc),
        kd({s.f, s.c, 3, 3}, dnnl::memory::data_type::f32, blocked_weights ? tag::any : tag::hwio),
        fwd_pd({dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, xd, kd, yd, kStrides, kPad, kPad}, relu(), eng),
        data_pd({dnnl::algorithm::convolution_direct, xd, kd, yd, kStrides, kPad, kPad}, eng, fwd_pd),
        weights_pd({dnnl::algorithm::convolution_direct, xd, kd, yd, kStrides, kPad, kPad}, eng, fwd_pd) {}

  std::string implementations() const {
    return std::string(fwd_pd.impl_info_str()).append(" / ").append(data_pd.impl_info_str()).append(" / ").append(weights_pd.impl_info_str());
  }
  void forward() { run(fwd, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, k}, {DNNL_ARG_DST, y}}); }
  void backward_data() { run(bwd_data, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, k_for_data}, {DNNL_ARG_DIFF_SRC, dx}}); }
  void backward_weights() { run(bwd_weights, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dk}}); }

 private:
  static inline const dnnl::memory::dims kStrides{1, 1}, kPad{0, 0};
  static dnnl::primitive_attr relu() {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    return attr;
  }
  dnnl::memory filled(const dnnl::memory::desc& d, float value) {
    dnnl::memory m(d, eng);
    float* p = static_cast<float*>(m.get_data_handle());
    std::fill(p, p + d.get_size() / sizeof(float), value);
    return m;
  }
  void run(dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
    p.execute(stream, args);
    stream.wait();
  }
};
}  // namespace

int main() {
  const Conv shapes[] = {{"conv1 28x28x1 -> 32", 128, 28, 28, 1, 32}, {"conv2 13x13x32 -> 64", 128, 13, 13, 32, 64}};
  struct Row {
    std::string what;
    double ms[3];
  };
  std::vector<Row> rows;
  // All of Tandem's timings first: OpenMP's threads, once oneDNN has started them, spin a while
  // after each parallel region and would take cores from the device's pool.
  for (const Conv& s : shapes)
    for (int threads : {1, 2}) {
      backend::cpu::Context ctx(threads);
      TandemConv tandem(s, ctx);
      Row row{std::string(s.what).append(" | ").append(std::to_string(threads)).append(" | Tandem, im2col + GEMM"), {}};
      for (int kernel = 0; kernel < 3; ++kernel) row.ms[kernel] = best_ms(tandem.kernels[size_t(kernel)]);
      rows.push_back(row);
    }
  for (const Conv& s : shapes)
    for (int threads : {1, 2})
      for (bool blocked : {false, true}) {
        omp_set_num_threads(threads);
        OneDnnConv onednn(s, blocked);
        Row row{std::string(s.what).append(" | ").append(std::to_string(threads)).append(blocked ? " | oneDNN, weights in its own layout, "
                                                                                                 : " | oneDNN, channels-last weights, ")
                    .append(onednn.implementations()),
                {}};
        row.ms[0] = best_ms([&] { onednn.forward(); });
        row.ms[1] = best_ms([&] { onednn.backward_data(); });
        row.ms[2] = best_ms([&] { onednn.backward_weights(); });
        rows.push_back(row);
      }
  std::printf("| convolution, batch 128 | threads | kernels | forward (oneDNN: + ReLU) | backward data | backward weights |\n"
              "|---|---:|---|---:|---:|---:|\n");
  for (const Row& r : rows) std::printf("| %s | %.2f | %.2f | %.2f |\n", r.what.c_str(), r.ms[0], r.ms[1], r.ms[2]);
  return 0;
}
