// The CUDA backend. Without a usable GPU (the CUDA runtime reports no device or no driver) the
// tests that train on one print why and skip; the rest check what a machine without a GPU can:
// every op with a CPU kernel has a CUDA kernel for the same dtypes, device names, and the error a
// missing GPU raises. On a GPU, models train on gpu:0 and on the CPU from the same seed and must
// end at the same weights: float64 within 1e-10 (a different summation order is all that differs),
// float32 within 1e-5; the strategies over two logical GPUs of one chip equal Default on gpu:0.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <tuple>

#if TANDEM_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include "autodiff/autodiff.h"
#include "backend/device.h"
#include "backend/kernel_registry.h"
#include "data/batcher.h"
#include "data/prefetcher.h"
#include "distribute/strategy.h"
#include "model/feeder.h"
#include "ops/activation_functions.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/image.h"
#include "ops/ops.h"
#include "ops/recurrent.h"
#include "ops/resize.h"
#include "runtime/executable.h"
#include "tests/op_runner.h"
#include "tests/strategy_helpers.h"
#include "lower_with.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
using tandem::DType;
using tandem::Tensor;

namespace {

const std::string& gpu_missing() {
  static const std::string why = tandem::backend::unavailable_reason("gpu:0");
  return why;
}

// True (after printing the reason) when this machine cannot run the test.
bool skip_without_gpu() {
  if (gpu_missing().empty()) return false;
  MESSAGE("skipped: " << gpu_missing());
  return true;
}

// Rows of `features` normal values, class r mod 3 shifted apart, in float32 or float64.
std::pair<Tensor, Tensor> classes(int64_t rows, int64_t features, DType dtype, uint64_t seed = 3) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<double> x(static_cast<std::size_t>(rows * features));
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    y[static_cast<std::size_t>(r)] = static_cast<int32_t>(r % 3);
    for (int64_t f = 0; f < features; ++f) x[static_cast<std::size_t>(r * features + f)] = normal(gen) + (f % 3 == r % 3 ? 1.5 : 0.0);
  }
  Tensor xt = Tensor::from({rows, features}, std::span<const double>(x));
  if (dtype == DType::F32) xt = xt.cast(DType::F32);
  return {xt, Tensor::from({rows}, std::span<const int32_t>(y))};
}

struct Trained {
  std::vector<Tensor> weights;
  std::map<std::string, std::vector<double>> history;
  Tensor predictions;
};

// An MLP with dropout, trained for one epoch of 5 steps: three classes, or class 0 against the
// rest with a sigmoid head (`binary`).
Trained train_mlp(const std::string& device, DType dtype, tandem::OptimizerPtr optimizer, std::vector<std::string> metrics = {"accuracy"},
                  bool binary = false) {
  auto [x, y] = classes(160, 12, dtype);
  if (binary) {
    std::vector<double> is_zero(static_cast<std::size_t>(y.size()));
    for (int64_t r = 0; r < y.size(); ++r) is_zero[static_cast<std::size_t>(r)] = y.item(r) == 0 ? 1.0 : 0.0;
    y = Tensor::from({y.size(), 1}, std::span<const double>(is_zero)).cast(dtype);
  }
  tandem::set_random_seed(4);
  auto in = tandem::Input({12}, dtype);
  auto h = tl::Dense(24, "relu")(in);
  h = tl::Dropout(0.2)(h);
  h = tl::Dense(16, "tanh")(h);
  tandem::Model model(in, binary ? tl::Dense(1, "sigmoid")(h) : tl::Dense(3, "softmax")(h));
  model.compile({.optimizer = optimizer, .loss = binary ? "binary_crossentropy" : "sparse_categorical_crossentropy", .metrics = metrics,
                 .strategy = dist::Default(device)});
  const tandem::History h1 = model.fit(x, y, {.epochs = 1, .batch_size = 32, .verbose = 0});
  return {model.get_weights(), h1.history, model.predict(x, {.verbose = 0})};
}

// A small CNN: convolution, batch normalisation, both poolings, padding "same", dense head.
Trained train_cnn(const std::string& device, DType dtype) {
  std::mt19937_64 gen(8);
  std::normal_distribution<double> normal;
  const int64_t rows = 64;
  std::vector<double> x(static_cast<std::size_t>(rows * 8 * 8 * 2));
  for (double& v : x) v = normal(gen);
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (std::size_t r = 0; r < y.size(); ++r) y[r] = static_cast<int32_t>(r % 4);
  Tensor xt = Tensor::from({rows, 8, 8, 2}, std::span<const double>(x));
  if (dtype == DType::F32) xt = xt.cast(DType::F32);
  const Tensor yt = Tensor::from({rows}, std::span<const int32_t>(y));
  tandem::set_random_seed(9);
  auto in = tandem::Input({8, 8, 2}, dtype);
  auto h = tl::Conv2D(6, 3, {.padding = "same", .activation = "relu"})(in);
  h = tl::BatchNormalization()(h);
  h = tl::MaxPooling2D(2)(h);
  h = tl::Conv2D(8, 3, {.activation = "relu"})(h);
  h = tl::AveragePooling2D(2)(h);
  h = tl::Flatten()(h);
  tandem::Model model(in, tl::Dense(4)(h));
  model.compile({.optimizer = tandem::optimizers::SGD(0.05, {.momentum = 0.9}),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"},
                 .strategy = dist::Default(device)});
  const tandem::History h1 = model.fit(xt, yt, {.epochs = 1, .batch_size = 16, .verbose = 0});
  return {model.get_weights(), h1.history, model.predict(xt, {.verbose = 0})};
}

void check_same(const Trained& gpu, const Trained& cpu, double tolerance) {
  CHECK(max_relative_difference(gpu.weights, cpu.weights) <= tolerance);
  CHECK(max_relative_difference({gpu.predictions}, {cpu.predictions}) <= tolerance);
  REQUIRE(gpu.history.size() == cpu.history.size());
  for (const auto& [key, values] : cpu.history) {
    INFO(key);
    REQUIRE(gpu.history.count(key));
    for (std::size_t e = 0; e < values.size(); ++e) CHECK(gpu.history.at(key)[e] == doctest::Approx(values[e]).epsilon(tolerance));
  }
}

// One op's graph on float64 placeholders, run on the CPU and on gpu:0 with the same values: the
// op's outputs and the gradients of a weighted sum of them (so every output's gradient op runs
// too) must agree within 1e-10 of their largest magnitude (only the order of summation differs).
class DeviceComparison {
 public:
  tandem::graph::Graph g;

  tandem::graph::Value uniform(const tandem::Shape& s, double lo, double hi) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> x(static_cast<std::size_t>(s.num_elements()));
    for (double& v : x) v = u(rng_);
    return given(s, std::move(x));
  }
  tandem::graph::Value given(const tandem::Shape& s, std::vector<double> x) {
    const std::string name = "in" + std::to_string(inputs_.size());
    inputs_.push_back({g.placeholder(name, {s, DType::F64}), name, std::move(x)});
    return inputs_.back().value;
  }

  // Compares `outputs` and their weighted sum's gradients with respect to `wrt` between the devices.
  void check(const std::vector<tandem::graph::Value>& outputs, const std::vector<tandem::graph::Value>& wrt) {
    tandem::graph::Value loss;
    for (const tandem::graph::Value y : outputs) {
      const tandem::Shape shape = g.type(y).shape;
      std::vector<int64_t> axes(static_cast<std::size_t>(shape.rank()));
      for (int i = 0; i < shape.rank(); ++i) axes[static_cast<std::size_t>(i)] = i;
      const auto term = tandem::ops::reduce_sum(g, tandem::ops::mul(g, y, uniform(shape, -1, 1)), axes);
      loss = loss.valid() ? tandem::ops::add(g, loss, term) : term;
    }
    std::vector<tandem::graph::Value> fetches = outputs;
    for (const tandem::graph::Value d : tandem::autodiff::gradients(g, loss, wrt)) {
      REQUIRE(d.valid());
      fetches.push_back(d);
    }
    const auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
    const auto cpu = run(plan, "cpu:0", fetches), gpu = run(plan, "gpu:0", fetches);
    for (std::size_t f = 0; f < fetches.size(); ++f) {
      double worst = 0, scale = 1e-8;
      for (std::size_t i = 0; i < cpu[f].size(); ++i)
        worst = std::max(worst, std::abs(gpu[f][i] - cpu[f][i])), scale = std::max(scale, std::abs(cpu[f][i]));
      INFO((f < outputs.size() ? "output " + std::to_string(f) : "gradient " + std::to_string(f - outputs.size()))
           << ": max difference " << worst << ", max |value| " << scale);
      CHECK(worst / scale <= 1e-10);
    }
  }

 private:
  struct Input {
    tandem::graph::Value value;
    std::string name;
    std::vector<double> x;
  };

  std::vector<std::vector<double>> run(const std::shared_ptr<const tandem::compile::Plan>& plan, const std::string& device,
                                       const std::vector<tandem::graph::Value>& fetches) {
    tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device(device)},
                                    [](int, int) -> void* { return nullptr; });
    for (const Input& in : inputs_)
      if (void* p = exe.feed(0, in.name)) exe.device(0).copy_in(p, in.x.data(), in.x.size() * sizeof(double));
    exe.run();
    std::vector<std::vector<double>> got;
    for (std::size_t f = 0; f < fetches.size(); ++f) {
      got.emplace_back(static_cast<std::size_t>(g.type(fetches[f]).shape.num_elements()));
      exe.copy_fetch(0, static_cast<int>(f), got.back().data(), got.back().size() * sizeof(double));
    }
    return got;
  }

  std::mt19937_64 rng_{12};
  std::vector<Input> inputs_;
};

// The variations every recurrent op is compared in.
struct RecurrentCase {
  const char* name;
  bool go_backwards, masked, zero_output, scaled;
  const char* activation;
};
const RecurrentCase kRecurrentCases[] = {
    {"plain", false, false, false, false, "tanh"},
    {"go_backwards, masked", true, true, false, false, "tanh"},
    {"masked, zero_output_for_mask, recurrent_scale", false, true, true, true, "tanh"},
    {"go_backwards, masked, recurrent_scale, relu", true, true, false, true, "relu"},
};
constexpr int64_t kBatch = 3, kSteps = 5, kUnits = 3;

// Row 0 runs every step; row 1 skips its first step (the output repeats the initial 0, not h0)
// and one in the middle; row 2 skips its last steps (the final states come from earlier).
tandem::graph::Value recurrent_mask(DeviceComparison& c, bool masked) {
  std::vector<double> m(kBatch * kSteps, 1.0);
  if (masked) m[5] = m[7] = m[13] = m[14] = 0.0;
  return c.given({kBatch, kSteps}, m);
}

tandem::ops::RecurrentAttrs recurrent_attrs(const RecurrentCase& rc) {
  tandem::ops::RecurrentAttrs a;
  a.activation = rc.activation;
  a.go_backwards = rc.go_backwards;
  a.zero_output_for_mask = rc.zero_output;
  return a;
}

}  // namespace

TEST_CASE("cuda: every op with a CPU kernel has a CUDA kernel for the same dtypes") {
  if (!TANDEM_WITH_CUDA) {
    MESSAGE("skipped: this build has no CUDA backend");
    return;
  }
  std::set<std::tuple<std::string, DType>> cuda;
  std::vector<std::string> missing;
  const auto& entries = tandem::backend::kernels().entries();
  for (const auto& [key, slot] : entries)
    if (key.kind == tandem::backend::DeviceKind::Cuda) cuda.insert({key.op, key.dtype});
  for (const auto& [key, slot] : entries)
    if (key.kind == tandem::backend::DeviceKind::Cpu && !cuda.count({key.op, key.dtype})) missing.push_back(tandem::backend::describe(key));
  std::string list;
  for (const std::string& m : missing) list += m + "\n";
  INFO("CPU kernels without a CUDA twin:\n" << list);
  CHECK(missing.empty());
}

TEST_CASE("cuda: device names, logical GPUs and the error on a machine without a GPU") {
  using tandem::backend::parse_device;
  CHECK_THROWS_WITH_AS(parse_device("cpu:0/1"), doctest::Contains("unknown device 'cpu:0/1'"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(parse_device("gpu:0/x"), doctest::Contains("gpu:N/L"), tandem::ValueError);
  if (!TANDEM_WITH_CUDA) {
    CHECK_THROWS_WITH_AS(parse_device("gpu:0"), doctest::Contains("no GPU backend"), tandem::ValueError);
    return;
  }
  const auto n = parse_device("gpu:0/1");
  CHECK(n.kind == "gpu");
  CHECK(n.index == 0);
  CHECK(n.logical == 1);
  CHECK(n.str() == "gpu:0/1");
  CHECK(parse_device("gpu:2").str() == "gpu:2");
  if (gpu_missing().empty()) {
    CHECK_THROWS_WITH_AS(tandem::backend::open_device("gpu:99"), doctest::Contains("does not exist: this machine has"), tandem::backend::DeviceUnavailable);
    return;
  }
  // No GPU here: the reason is the CUDA runtime's, and a model asked to train there says so.
  CHECK(gpu_missing().find("no usable GPU: the CUDA runtime reports") != std::string::npos);
  auto in = tandem::Input({4});
  tandem::Model model(in, tl::Dense(2)(in));
  model.compile({.loss = "mse", .strategy = dist::Default("gpu:0")});
  CHECK_THROWS_WITH_AS(model.fit(Tensor(tandem::Shape{8, 4}, DType::F32), Tensor(tandem::Shape{8, 2}, DType::F32), {.epochs = 1, .verbose = 0}), doctest::Contains("no usable GPU"),
                       tandem::backend::DeviceUnavailable);
}

TEST_CASE("cuda: an MLP with dropout trains on gpu:0 to the CPU's weights, History and predictions") {
  if (skip_without_gpu()) return;
  SUBCASE("float64") { check_same(train_mlp("gpu:0", DType::F64, tandem::optimizers::Adam(0.01)), train_mlp("cpu:0", DType::F64, tandem::optimizers::Adam(0.01)), 1e-10); }
  SUBCASE("float32") { check_same(train_mlp("gpu:0", DType::F32, tandem::optimizers::Adam(0.01)), train_mlp("cpu:0", DType::F32, tandem::optimizers::Adam(0.01)), 1e-5); }
}

TEST_CASE("cuda: every optimizer, with weight decay and clipping, updates as on the CPU") {
  if (skip_without_gpu()) return;
  namespace opt = tandem::optimizers;
  const std::vector<std::pair<std::string, std::function<tandem::OptimizerPtr()>>> optimizers{
      {"SGD", [] { return opt::SGD(0.1, {.momentum = 0.9, .nesterov = true}); }},
      {"Adam", [] { return opt::Adam(0.01, {.weight_decay = 0.01}); }},
      {"AdamW", [] { return opt::AdamW(0.01); }},
      {"RMSprop", [] { return opt::RMSprop(0.01, {.momentum = 0.5}); }},
      {"Adagrad", [] { return opt::Adagrad(0.05); }},
      {"Nadam", [] { return opt::Nadam(0.01); }},
      {"Lion", [] { return opt::Lion(0.001, {.weight_decay = 0.01}); }},
      {"Adamax", [] { return opt::Adamax(0.01, {.weight_decay = 0.01}); }},
      {"Adam + global_clipnorm", [] { return opt::Adam(0.01, {.clipping = {.global_clipnorm = 0.5}}); }},
      {"SGD + clipvalue", [] { return opt::SGD(0.1, {.clipping = {.clipvalue = 0.01}}); }},
  };
  for (const auto& [name, make] : optimizers) {
    INFO(name);
    check_same(train_mlp("gpu:0", DType::F64, make()), train_mlp("cpu:0", DType::F64, make()), 1e-10);
  }
}

TEST_CASE("cuda: precision, recall, AUC, top-k accuracy and MeanIoU evaluate on gpu:0 as on the CPU") {
  if (skip_without_gpu()) return;
  SUBCASE("three classes") {
    const std::vector<std::string> metrics{"accuracy", "sparse_top_k_categorical_accuracy",
                                           tandem::metrics::MeanIoU(3, {.sparse_y_pred = false, .name = "cuda_mean_io_u"})};
    check_same(train_mlp("gpu:0", DType::F64, tandem::optimizers::SGD(0.1), metrics), train_mlp("cpu:0", DType::F64, tandem::optimizers::SGD(0.1), metrics), 1e-10);
  }
  SUBCASE("binary") {
    const std::vector<std::string> metrics{"accuracy", "precision", "recall", "auc"};
    check_same(train_mlp("gpu:0", DType::F64, tandem::optimizers::SGD(0.1), metrics, true),
               train_mlp("cpu:0", DType::F64, tandem::optimizers::SGD(0.1), metrics, true), 1e-10);
  }
}

TEST_CASE("cuda: a CNN with batch normalisation and pooling trains on gpu:0 to the CPU's weights") {
  if (skip_without_gpu()) return;
  SUBCASE("float64") { check_same(train_cnn("gpu:0", DType::F64), train_cnn("cpu:0", DType::F64), 1e-9); }
  SUBCASE("float32") { check_same(train_cnn("gpu:0", DType::F32), train_cnn("cpu:0", DType::F32), 1e-4); }
}

TEST_CASE("cuda: the Transformer blocks train on gpu:0 to the CPU's weights") {
  if (skip_without_gpu()) return;
  CHECK(max_relative_difference(train_transformer(dist::Default("gpu:0")), train_transformer(dist::Default("cpu:0"))) <= 1e-4);
}

TEST_CASE("cuda: the same seed on the same GPU gives bitwise the same weights") {
  if (skip_without_gpu()) return;
  const Trained a = train_cnn("gpu:0", DType::F32), b = train_cnn("gpu:0", DType::F32);
  CHECK(max_relative_difference(a.weights, b.weights, 1e-30) == 0.0);
}

TEST_CASE("cuda: Mirrored, Pipeline and ModelSplit over two logical GPUs equal Default on gpu:0") {
  if (skip_without_gpu()) return;
  const std::vector<std::string> gpus{"gpu:0/0", "gpu:0/1"};
  const auto single = train_transformer(dist::Default("gpu:0"));
  SUBCASE("Mirrored") { CHECK(max_relative_difference(train_transformer(dist::Mirrored(gpus)), single) <= 1e-5); }
  SUBCASE("Pipeline") {
    CHECK(max_relative_difference(train_transformer(dist::Pipeline(gpus, {.micro_batches = 2})), single) <= 1e-5);
  }
  SUBCASE("ModelSplit") { CHECK(max_relative_difference(train_transformer(dist::ModelSplit(gpus)), single) <= 1e-5); }
}

TEST_CASE("cuda: lstm and lstm_grad on gpu:0 equal the CPU's (float64)") {
  if (skip_without_gpu()) return;
  for (const RecurrentCase& rc : kRecurrentCases) {
    INFO(rc.name);
    DeviceComparison c;
    const auto xw = c.uniform({kBatch, kSteps, 4 * kUnits}, -1, 1), h0 = c.uniform({kBatch, kUnits}, -1, 1),
               c0 = c.uniform({kBatch, kUnits}, -1, 1), u = c.uniform({kUnits, 4 * kUnits}, -0.8, 0.8);
    const auto scale = rc.scaled ? c.uniform({kBatch, 4, kUnits}, 0, 2) : tandem::graph::Value{};
    const auto r = tandem::ops::lstm(c.g, xw, h0, c0, u, recurrent_mask(c, rc.masked), scale, recurrent_attrs(rc));
    c.check({r.y, r.h, r.c}, {xw, h0, c0, u});
  }
}

TEST_CASE("cuda: gru and gru_grad, reset_after both ways, on gpu:0 equal the CPU's (float64)") {
  if (skip_without_gpu()) return;
  for (const bool reset_after : {true, false})
    for (const RecurrentCase& rc : kRecurrentCases) {
      INFO(rc.name << ", reset_after " << reset_after);
      DeviceComparison c;
      const auto xw = c.uniform({kBatch, kSteps, 3 * kUnits}, -1, 1), h0 = c.uniform({kBatch, kUnits}, -1, 1),
                 u = c.uniform({kUnits, 3 * kUnits}, -0.8, 0.8), bias = c.uniform({3 * kUnits}, -0.5, 0.5);
      const auto scale = rc.scaled ? c.uniform({kBatch, 3, kUnits}, 0, 2) : tandem::graph::Value{};
      const auto r = tandem::ops::gru(c.g, xw, h0, u, bias, recurrent_mask(c, rc.masked), scale, recurrent_attrs(rc), reset_after);
      c.check({r.y, r.h}, {xw, h0, u, bias});
    }
}

TEST_CASE("cuda: simple_rnn and simple_rnn_grad on gpu:0 equal the CPU's (float64)") {
  if (skip_without_gpu()) return;
  for (const RecurrentCase& rc : kRecurrentCases) {
    INFO(rc.name);
    DeviceComparison c;
    const auto xw = c.uniform({kBatch, kSteps, kUnits}, -1, 1), h0 = c.uniform({kBatch, kUnits}, -1, 1),
               u = c.uniform({kUnits, kUnits}, -0.8, 0.8);
    const auto scale = rc.scaled ? c.uniform({kBatch, 1, kUnits}, 0, 2) : tandem::graph::Value{};
    const auto r = tandem::ops::simple_rnn(c.g, xw, h0, u, recurrent_mask(c, rc.masked), scale, recurrent_attrs(rc));
    c.check({r.y, r.h}, {xw, h0, u});
  }
}

TEST_CASE("cuda: the further activations and their gradients on gpu:0 equal the CPU's (float64)") {
  if (skip_without_gpu()) return;
  using tandem::graph::Graph;
  using tandem::graph::Value;
  namespace ops = tandem::ops;
  const std::vector<std::pair<const char*, std::function<Value(Graph&, Value)>>> activations{
      {"silu", ops::silu}, {"selu", ops::selu}, {"softplus", ops::softplus}, {"softsign", ops::softsign},
      {"hard_sigmoid", ops::hard_sigmoid}, {"hard_silu", ops::hard_silu}, {"mish", ops::mish}, {"relu6", ops::relu6},
      {"elu", [](Graph& g, Value x) { return ops::elu(g, x, 0.5); }},
      {"leaky_relu", [](Graph& g, Value x) { return ops::leaky_relu(g, x, 0.3); }},
      {"relu_general", [](Graph& g, Value x) { return ops::relu_general(g, x, {.negative_slope = 0.2, .max_value = 4.0, .threshold = 1.0}); }}};
  for (const auto& [name, op] : activations) {
    INFO(name);
    DeviceComparison c;
    const Value x = c.uniform({6, 8}, -8, 8);
    c.check({op(c.g, x)}, {x});
  }
}

TEST_CASE("cuda: image_affine_transform, its gradient and random_image_params on gpu:0 equal the CPU's (float64)") {
  if (skip_without_gpu()) return;
  for (const char* interpolation : {"nearest", "bilinear"})
    for (const char* fill_mode : {"reflect", "wrap", "constant", "nearest"}) {
      INFO(interpolation << ", " << fill_mode);
      DeviceComparison c;
      const auto x = c.uniform({3, 7, 6, 2}, -1, 1);
      // A rotation with zoom, a shift mostly out of the image, and a projective transform.
      const auto t = c.given({3, 8}, {0.9, -0.45, 1.7, 0.4, 1.1, -0.8, 0, 0, 1.0, 0.0, -4.3, 0.0, 1.0, 5.6, 0, 0,
                                      1.2, 0.1, -0.5, -0.2, 0.9, 0.7, 0.05, -0.03});
      const auto step = tandem::ops::fill(c.g, {tandem::Shape{}, DType::I64}, 7);
      const auto params = tandem::ops::random_image_params(c.g, x, step, {.kind = "rotation", .h_lower = -0.2, .h_upper = 0.3, .seed = 5});
      c.check({tandem::ops::image_affine_transform(c.g, x, t, interpolation, fill_mode, 0.5),
               tandem::ops::image_affine_transform(c.g, x, params, interpolation, fill_mode, 0.0)},
              {x});
    }
}

TEST_CASE("cuda: depthwise_conv2d, conv2d_transpose and spatial_dropout with their gradients on gpu:0 equal the CPU's (float64)") {
  if (skip_without_gpu()) return;
  SUBCASE("depthwise_conv2d, multiplier 2, stride 2, same (grouped cuDNN convolution)") {
    DeviceComparison c;
    const auto x = c.uniform({3, 7, 6, 3}, -1, 1), k = c.uniform({3, 3, 3, 2}, -1, 1);
    c.check({tandem::ops::depthwise_conv2d(c.g, x, k, {2, 2}, {1, 1}, "same")}, {x, k});
  }
  SUBCASE("depthwise_conv2d, dilation 2, valid") {
    DeviceComparison c;
    const auto x = c.uniform({2, 8, 7, 4}, -1, 1), k = c.uniform({2, 3, 4, 1}, -1, 1);
    c.check({tandem::ops::depthwise_conv2d(c.g, x, k, {1, 1}, {2, 2}, "valid")}, {x, k});
  }
  SUBCASE("conv2d_transpose, even kernel, same (cropped)") {
    DeviceComparison c;
    const auto x = c.uniform({2, 3, 4, 2}, -1, 1), k = c.uniform({4, 4, 3, 2}, -1, 1);
    c.check({tandem::ops::conv2d_transpose(c.g, x, k, {2, 2}, {1, 1}, "same", tandem::ops::Pair{0, 1})}, {x, k});
  }
  SUBCASE("spatial_dropout: the same channels drop") {
    DeviceComparison c;
    const auto x = c.uniform({4, 3, 3, 5}, -1, 1);
    const auto step = tandem::ops::fill(c.g, {tandem::Shape{}, DType::I64}, 3);
    c.check({tandem::ops::spatial_dropout(c.g, x, step, 0.4, 9)}, {x});
  }
}

TEST_CASE("cuda: resize2d and resize2d_grad, nearest and bilinear, on gpu:0 equal the CPU's (float64)") {
  if (skip_without_gpu()) return;
  for (const auto method : {tandem::ops::ResizeMethod::nearest, tandem::ops::ResizeMethod::bilinear})
    for (const auto& [in, out] : std::vector<std::pair<tandem::Shape, tandem::Shape>>{
             {{2, 3, 4, 5}, {7, 9}}, {{3, 17, 13, 2}, {5, 6}}, {{1, 2, 31, 3}, {9, 4}}, {{2, 1, 1, 4}, {3, 2}}}) {
      INFO((method == tandem::ops::ResizeMethod::nearest ? "nearest " : "bilinear ") << in.str() << " -> " << out.str());
      DeviceComparison c;
      const auto x = c.uniform(in, -1, 1);
      // resize2d's gradient is resize2d_grad; resize2d_grad's own forward runs on a second input.
      const auto dy = c.uniform({in[0], out[0], out[1], in[3]}, -1, 1);
      c.check({tandem::ops::resize2d(c.g, x, out[0], out[1], method), tandem::ops::resize2d_grad(c.g, dy, in[1], in[2], method)}, {x, dy});
    }
}

TEST_CASE("cuda: integer_lookup (IntegerLookup, forwards with OOV buckets and a mask, and inverted) on gpu:0 equals the CPU's") {
  if (skip_without_gpu()) return;
  std::vector<int64_t> ids(64 * 5);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919) % 53) - 3;  // in and out of the vocabulary, some negative
  const Tensor x = Tensor::from({64, 5}, std::span<const int64_t>(ids));
  std::vector<int64_t> vocab;
  for (int64_t v = 0; v < 40; v += 3) vocab.push_back(v * 11 % 47);
  auto predict_on = [&](const std::string& device, const tl::IntegerLookupOptions& o) {
    const tandem::Symbol in = tandem::Input({5}, DType::I64);
    tandem::Model model(in, tl::IntegerLookup(o)(in));
    model.compile({.optimizer = "sgd", .loss = "mse", .strategy = dist::Default(device)});
    return model.predict(x);
  };
  for (const tl::IntegerLookupOptions& o : {tl::IntegerLookupOptions{.num_oov_indices = 3, .mask_token = 5, .vocabulary = vocab},
                                            tl::IntegerLookupOptions{.vocabulary = vocab, .invert = true}}) {
    const Tensor cpu = predict_on("cpu:0", o), gpu = predict_on("gpu:0", o);
    CHECK(std::equal(cpu.values<int64_t>().begin(), cpu.values<int64_t>().end(), gpu.values<int64_t>().begin()));
  }
}

// Both devices sum exact products in float32, in different orders, and round to the 16-bit type
// (the GPU's fused epilogues once more than the CPU's), so each output agrees within a few units of
// the type's rounding relative to the output's scale: 4u, u = 2⁻⁸ for bfloat16 and 2⁻¹¹ for float16.
TEST_CASE("cuda: bfloat16 and float16 matmul, fused_matmul, batch_matmul, conv2d with both gradients, pooling and the elementwise kernels agree with the CPU's") {
  if (skip_without_gpu()) return;
  namespace ops = tandem::ops;
  for (const DType dtype : {DType::BF16, DType::F16}) {
    INFO(tandem::dtype_name(dtype));
    tandem::graph::Graph g;
    std::mt19937 rng(21);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<std::pair<std::string, Tensor>> inputs;
    const auto input = [&](const tandem::Shape& s) {
      const std::string name = "in" + std::to_string(inputs.size());
      std::vector<double> values(static_cast<std::size_t>(s.num_elements()));
      for (double& v : values) v = u(rng);
      inputs.push_back({name, Tensor::from(s, std::span<const double>(values)).cast(dtype)});
      return g.placeholder(name, {s, dtype});
    };
    const auto a = input({64, 96}), w = input({96, 48}), bias = input({48}), qa = input({4, 32, 40}), qb = input({4, 40, 24});
    const auto x = input({3, 10, 10, 8}), k = input({3, 3, 8, 12}), dy = input({3, 10, 10, 12});
    const tandem::ops::Pair one{1, 1};
    std::vector<tandem::graph::Value> outputs{
        ops::matmul(g, a, w),
        g.add("fused_matmul", {a, w, bias}, {{"transpose_a", false}, {"transpose_b", false}, {"activation", std::string("relu")}}),
        ops::batch_matmul(g, qa, qb, false, false),
        ops::conv2d(g, x, k, one, one, "same"),
        ops::conv2d_backprop_input(g, dy, k, {3, 10, 10, 8}, one, one, "same"),
        ops::conv2d_backprop_filter(g, x, dy, {3, 3, 8, 12}, one, one, "same"),
        ops::sigmoid(g, ops::add(g, ops::mul(g, a, a), a)),
        ops::bias_add(g, ops::relu(g, a), input({96}))};
    // Weight gradients kept as float32 sums (output_dtype), and pooling with its gradients.
    const tandem::graph::Attrs wide{{"output_dtype", static_cast<int64_t>(DType::F32)}};
    tandem::graph::Attrs filter = wide;
    filter.set("kernel_shape", std::vector<int64_t>{3, 3, 8, 12}).set("strides", std::vector<int64_t>{1, 1});
    filter.set("dilation", std::vector<int64_t>{1, 1}).set("padding", std::string("same"));
    outputs.push_back(g.add("conv2d_backprop_filter", {x, dy}, filter));
    tandem::graph::Attrs fused_grad = wide;
    fused_grad.set("activation", std::string("tanh"));
    for (const auto& v : g.add_multi("activation_bias_grad", {ops::mul(g, a, a), a}, fused_grad)) outputs.push_back(v);
    const auto pooled = ops::max_pool2d(g, x, {2, 2}, {2, 2}, "valid"), averaged = ops::avg_pool2d(g, x, {3, 3}, {1, 1}, "same");
    const auto dpool = input({3, 5, 5, 8});
    const tandem::graph::Attrs pool2{{"pool", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}, {"padding", std::string("valid")},
                                     {"relu", true}};
    const tandem::graph::Attrs pool3{{"pool", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{1, 1}}, {"padding", std::string("same")},
                                     {"input_shape", std::vector<int64_t>{3, 10, 10, 8}}};
    outputs.insert(outputs.end(), {pooled, averaged, g.add("max_pool2d_grad", {x, dpool}, pool2), g.add("avg_pool2d_grad", {input({3, 10, 10, 8})}, pool3)});
    const auto cpu = op_runner::run(g, inputs, outputs, "cpu:0"), gpu = op_runner::run(g, inputs, outputs, "gpu:0");
    const double unit = dtype == DType::BF16 ? 0x1p-8 : 0x1p-11;
    for (std::size_t f = 0; f < outputs.size(); ++f) {
      double worst = 0, scale = 1e-8;
      for (int64_t i = 0; i < cpu[f].size(); ++i)
        worst = std::max(worst, std::abs(gpu[f].item(i) - cpu[f].item(i))), scale = std::max(scale, std::abs(cpu[f].item(i)));
      INFO("output " << f << ": max difference " << worst << ", max |value| " << scale);
      CHECK(worst <= 4 * unit * scale);
    }
  }
}

TEST_CASE("cuda: cast to and from bfloat16 and float16 on gpu:0 equals the CPU's, bit for bit") {
  if (skip_without_gpu()) return;
  // Exact values, ties of both 16-bit types, values just beside a tie (below float32's precision),
  // float16's subnormals and overflow, infinities, NaN, and random values. Not float32's subnormals:
  // the CPU kernels flush them (backend/cpu/denormals.h), the GPU's do not.
  std::vector<double> x = {1.0, -2.0, 0.1, 1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8, 1.0 + 0x1p-8 + 0x1p-40, 1.0 + 3 * 0x1p-8 - 0x1p-40,
                           1.0 + 0x1p-11, 1.0 + 0x1p-11 + 0x1p-40, 0x1p-24, 0x1p-25, 0x1p-25 + 0x1p-60, 65504.0, 65520.0,
                           -1e6, 1e39, 3e38, -0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(), 257.0, -259.0, 2.75, -2.75};
  std::mt19937_64 gen(7);
  std::normal_distribution<double> normal(0.0, 100.0);
  for (int i = 0; i < 1000; ++i) x.push_back(normal(gen));
  const int64_t n = static_cast<int64_t>(x.size());
  const Tensor x64 = Tensor::from({n}, std::span<const double>(x));
  auto same = [](const Tensor& a, const Tensor& b) {
    REQUIRE(a.dtype() == b.dtype());
    int64_t differ = 0;
    for (int64_t i = 0; i < a.size(); ++i) {
      const bool both_nan = std::isnan(a.item(i)) && std::isnan(b.item(i));
      const std::size_t size = tandem::dtype_size(a.dtype());
      if (!both_nan && std::memcmp(static_cast<const std::byte*>(a.raw()) + i * size, static_cast<const std::byte*>(b.raw()) + i * size, size) != 0) ++differ;
    }
    return differ;
  };
  for (DType from : {DType::F64, DType::F32, DType::BF16, DType::F16, DType::I32}) {
    Tensor fed;
    if (from == DType::I32) {  // whole numbers in int32's range
      std::vector<int32_t> ints;
      for (double v : x) ints.push_back(std::isfinite(v) && std::abs(v) < 2e9 ? static_cast<int32_t>(v) : 0);
      fed = Tensor::from({n}, std::span<const int32_t>(ints));
    } else {
      fed = x64.cast(from);
    }
    for (DType to : {DType::F64, DType::F32, DType::BF16, DType::F16, DType::I32}) {
      if (to == from || (to == DType::I32 && from != DType::BF16 && from != DType::F16)) continue;
      INFO(tandem::dtype_name(from) << " -> " << tandem::dtype_name(to));
      tandem::graph::Graph g;
      const auto in = g.placeholder("x", fed.type());
      const auto y = tandem::ops::cast(g, in, to);
      const Tensor cpu = op_runner::run(g, {{"x", fed}}, {y}, "cpu:0").at(0), gpu = op_runner::run(g, {{"x", fed}}, {y}, "gpu:0").at(0);
      CHECK(same(cpu, gpu) == 0);
    }
  }
}

// Input copies to a GPU: the staging slots are page-locked, batches are copied asynchronously
// into the step's inboxes (the next one while the step runs) and moved in by the step. None of it
// may change a result: the same training on gpu:0 through the inboxes, without them, and from a
// streamed dataset ends at bitwise the same weights.
namespace {
// The rows of `data` read by decode threads as batches are staged (two threads, two ahead).
tandem::Dataset streamed_rows(const Tensor& x, const Tensor& y) {
  const int64_t features = x.shape()[1];
  return tandem::datasets::from_function<float, int32_t>(
      x.shape()[0], {features}, {},
      [x, y, features](int64_t i, std::span<float> xs, std::span<int32_t> ys) {
        std::memcpy(xs.data(), static_cast<const float*>(x.raw()) + i * features, static_cast<std::size_t>(features) * sizeof(float));
        ys[0] = static_cast<const int32_t*>(y.raw())[i];
      },
      {.num_parallel_calls = 2, .prefetch = 2});
}

// Two epochs of batches of 32 over 150 rows (the last of 22: a step of its own), evaluate and
// predict with a partial last batch: the weights, then the predictions.
std::vector<Tensor> train_for_inputs(const dist::StrategyPtr& strategy, bool stream) {
  auto [x, y] = classes(150, 12, DType::F32);
  tandem::set_random_seed(4);
  auto in = tandem::Input({12});
  auto h = tl::Dense(24, "relu")(in);
  h = tl::BatchNormalization()(h);
  h = tl::Dropout(0.2)(h);
  tandem::Model model(in, tl::Dense(3)(h));
  model.compile({.optimizer = tandem::optimizers::Adam(1e-2), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}, .strategy = strategy});
  const tandem::Dataset data = stream ? streamed_rows(x, y) : tandem::Dataset(x, y);
  model.fit(data, {.epochs = 2, .batch_size = 32, .verbose = 0});
  const tandem::Logs logs = model.evaluate(data, {.batch_size = 64, .verbose = 0});
  std::vector<Tensor> out = model.get_weights();
  out.push_back(Tensor::from({1}, std::span<const double>(std::vector<double>{logs.at("loss")})));
  out.push_back(stream ? model.predict(streamed_rows(x, y), {.batch_size = 64, .verbose = 0})[0] : model.predict(x, {.batch_size = 64, .verbose = 0}));
  return out;
}
}  // namespace

TEST_CASE("cuda: the input pipeline stages batches for gpu:0 in page-locked memory") {
  if (skip_without_gpu()) return;
#if TANDEM_WITH_CUDA
  auto [x, y] = classes(64, 12, DType::F32);
  tandem::data::Batcher batches(tandem::Dataset(x, y), 16, false, 0);
  tandem::data::Prefetcher prefetch(batches, {true, true}, tandem::detail::staging_memory(*dist::Default("gpu:0")));
  batches.start_epoch(0);
  prefetch.start_epoch();
  auto memory_type = [](const void* p) {
    cudaPointerAttributes a{};
    REQUIRE(cudaPointerGetAttributes(&a, p) == cudaSuccess);
    return a.type;
  };
  for (std::size_t c = 0; c < 2; ++c) CHECK(memory_type(prefetch.column(0, c)) == cudaMemoryTypeHost);
  // Ordinary memory, for contrast: the runtime does not know it.
  const tandem::backend::HostBuffer plain = tandem::backend::allocate_ordinary_host(1024);
  CHECK(memory_type(plain.data()) == cudaMemoryTypeUnregistered);
  // A request the machine cannot meet names the device and the bytes, and leaves no error behind.
  CHECK_THROWS_WITH(tandem::backend::open_device("gpu:0").allocate_host(std::size_t(1) << 50),
                    doctest::Contains("1125899906842624 bytes of page-locked host memory for gpu:0"));
  CHECK(cudaGetLastError() == cudaSuccess);
#endif
}

TEST_CASE("cuda: a streamed fit, evaluate and predict on gpu:0 equal the in-memory ones, bit for bit") {
  if (skip_without_gpu()) return;
  CHECK(max_relative_difference(train_for_inputs(dist::Default("gpu:0"), true), train_for_inputs(dist::Default("gpu:0"), false), 1e-30) == 0.0);
}

TEST_CASE("cuda: inputs through the inboxes (copied while the previous step runs) equal inputs copied directly") {
  if (skip_without_gpu()) return;
  const auto both = [](const dist::StrategyPtr& strategy) {
    const std::vector<Tensor> inboxes = train_for_inputs(strategy, true);
    tandem::runtime::set_input_overlap(false);
    const std::vector<Tensor> direct = train_for_inputs(strategy, true);
    tandem::runtime::set_input_overlap(true);
    CHECK(max_relative_difference(inboxes, direct, 1e-30) == 0.0);
  };
  SUBCASE("Default") { both(dist::Default("gpu:0")); }
  SUBCASE("Mirrored over two logical GPUs, two batches a step") { both(dist::Mirrored({"gpu:0/0", "gpu:0/1"}, {.sync_every = 2})); }
}

TEST_CASE("cuda: a bfloat16 product with float32 sums kept, and loss scaling's kernels, on gpu:0 equal the CPU's") {
  if (skip_without_gpu()) return;
  std::mt19937_64 gen(11);
  std::normal_distribution<float> normal;
  std::vector<float> a(300 * 7), b(300 * 5);
  for (float& v : a) v = normal(gen);
  for (float& v : b) v = normal(gen);
  const Tensor ta = Tensor::from({300, 7}, std::span<const float>(a)).cast(DType::BF16), tb = Tensor::from({300, 5}, std::span<const float>(b)).cast(DType::BF16);
  {  // a weight's gradient: aᵀ·b over 300 rows, kept as float32 sums (matmul's output_dtype)
    tandem::graph::Graph g;
    const auto x = g.placeholder("a", ta.type()), y = g.placeholder("b", tb.type());
    const auto product = g.add("matmul", {x, y}, {{"transpose_a", true}, {"transpose_b", false}, {"output_dtype", static_cast<int64_t>(DType::F32)}});
    const Tensor cpu = op_runner::run(g, {{"a", ta}, {"b", tb}}, {product}, "cpu:0").at(0), gpu = op_runner::run(g, {{"a", ta}, {"b", tb}}, {product}, "gpu:0").at(0);
    REQUIRE(gpu.dtype() == DType::F32);
    for (int64_t i = 0; i < cpu.size(); ++i) CHECK(gpu.item(i) == doctest::Approx(cpu.item(i)).epsilon(1e-5).scale(1.0));
  }
  // unscale_gradient with and without an inf; then a mixed_float16 fit, whose skipped steps go
  // through the update kernels' flag and loss_scale_update: the same steps skipped and the same
  // scale on gpu:0 as on the CPU.
  for (const bool with_inf : {false, true}) {
    std::vector<float> grad(b);
    if (with_inf) grad[123] = std::numeric_limits<float>::infinity();
    const Tensor tg = Tensor::from({300, 5}, std::span<const float>(grad)), scale = Tensor::from({}, std::span<const float>(std::vector<float>{1024.0f}));
    tandem::graph::Graph g;
    const auto [unscaled, nonfinite] = tandem::ops::unscale_gradient(g, g.placeholder("g", tg.type()), g.placeholder("s", scale.type()));
    const auto cpu = op_runner::run(g, {{"g", tg}, {"s", scale}}, {unscaled, nonfinite}, "cpu:0");
    const auto gpu = op_runner::run(g, {{"g", tg}, {"s", scale}}, {unscaled, nonfinite}, "gpu:0");
    CHECK(gpu[1].item(0) == (with_inf ? 1.0 : 0.0));
    CHECK(cpu[1].item(0) == gpu[1].item(0));
    CHECK(max_relative_difference({gpu[0]}, {cpu[0]}, 1.0) == 0.0);
  }
  auto fit_on = [](const std::string& device) {
    tandem::mixed_precision::set_global_policy("mixed_float16");
    tandem::set_random_seed(5);
    tandem::Sequential m({tl::InputLayer({36}), tl::Dense(32, "relu"), tl::Dense(5)});
    tandem::mixed_precision::set_global_policy("float32");
    const auto scaling = tandem::optimizers::LossScaleOptimizer(tandem::optimizers::SGD(0.05), {.initial_scale = 256.0, .dynamic_growth_steps = 3});
    m.compile({.optimizer = scaling, .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = dist::Default(device)});
    // Batches 4 and 9 hold a NaN: skipped on any device (an overflow near float16's limit could
    // fall either way with another summation order).
    const tandem::Dataset clean = blobs(32 * 16, 36, 5);
    Tensor x = clean.x().clone();
    for (const int64_t batch : {4, 9}) x.data<float>()[(batch * 32 + 7) * 36 + 3] = std::nanf("");
    const tandem::History h = m.fit(tandem::Dataset{x, clean.y()}, {.epochs = 1, .batch_size = 32, .shuffle = false, .verbose = 0});
    return std::tuple{h.history.at("skipped_steps")[0], scaling->dynamic_scale(), scaling->iterations(), m.get_weights()};
  };
  const auto [cpu_skipped, cpu_scale, cpu_iterations, cpu_weights] = fit_on("cpu:0");
  const auto [gpu_skipped, gpu_scale, gpu_iterations, gpu_weights] = fit_on("gpu:0");
  CHECK(cpu_skipped == 2);
  CHECK(gpu_skipped == cpu_skipped);
  CHECK(gpu_scale == cpu_scale);
  CHECK(gpu_iterations == cpu_iterations);
  CHECK(max_relative_difference(gpu_weights, cpu_weights, 1e-2) <= 1e-2);  // float16 products summed in other orders
}
