// Keras's LossScaleOptimizer: an overflowing float16 step is skipped (no weight, slot or count
// moves) and the scale halves, then grows again after dynamic_growth_steps finite steps, by
// Keras's rule; with finite gradients the scaling is exact (powers of two), so the weights equal
// the inner optimizer's alone bit for bit; compile wraps the optimizer under mixed_float16 as Keras
// does, and saves and loads its state in Keras's layout; every strategy skips the same steps.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <filesystem>

#include "io/hdf5_file.h"
#include "global_policy.h"
#include "scratch_dir.h"
#include "strategy_helpers.h"
#include "tests/keras_file_helpers.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
namespace dist = tandem::distribute;
namespace mp = tandem::mixed_precision;
using tandem::LossScaleOptimizer;
using tandem::Tensor;

namespace {

const ScratchRoot scratch_root("test_loss_scale");

std::unique_ptr<tandem::Model> mlp() {
  tandem::set_random_seed(5);
  return std::make_unique<tandem::Sequential>(
      std::vector<tandem::LayerRef>{tl::InputLayer({36}), tl::Dense(32, "relu"), tl::Dense(16, "relu"), tl::Dense(5)});
}

void compile(tandem::Model& m, tandem::OptimizerPtr optimizer, dist::StrategyPtr strategy = dist::Default()) {
  m.compile({.optimizer = std::move(optimizer), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) { return max_relative_difference(a, b, 1.0) == 0.0; }

// What one epoch of one step did: whether it was skipped (from the logs), the scale and count after it.
struct StepRecord {
  bool skipped;
  double scale;
  int64_t counter, iterations;
  std::vector<Tensor> weights;
};

// Trains `steps` one-batch epochs, recording each.
std::vector<StepRecord> record_steps(tandem::Model& m, int steps) {
  std::vector<StepRecord> out;
  const auto& scaling = dynamic_cast<const LossScaleOptimizer&>(*m.optimizer());
  auto record = tandem::callbacks::Lambda([&](int, const tandem::Logs& logs) {
    out.push_back({logs.at("skipped_steps") == 1.0, scaling.dynamic_scale(), scaling.step_counter(), scaling.iterations(), m.get_weights()});
  });
  const tandem::Dataset data = blobs(32, 36, 5);
  m.fit(data, {.epochs = steps, .batch_size = 32, .shuffle = false, .verbose = 0, .callbacks = {record}});
  return out;
}

}  // namespace

TEST_CASE("LossScaleOptimizer: an overflowing float16 step is skipped and the scale halved, then it grows again") {
  const GlobalPolicy policy("mixed_float16");
  auto m = mlp();
  // 2^40: the loss's gradient times the scale overflows float16 (65504) at the logits, so the
  // first steps have inf gradients until the halvings bring the scale down.
  const double initial = std::ldexp(1.0, 40);
  compile(*m, tandem::optimizers::LossScaleOptimizer(tandem::optimizers::SGD(0.05), {.initial_scale = initial, .dynamic_growth_steps = 3}));
  const std::vector<Tensor> start = m->get_weights();
  const std::vector<StepRecord> steps = record_steps(*m, 40);

  // Keras's rule, replayed from the skips the steps report.
  double scale = initial;
  int64_t counter = 0, iterations = 0, skipped = 0, doublings = 0;
  const std::vector<Tensor>* before = &start;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    CAPTURE(s);
    const StepRecord& r = steps[s];
    if (r.skipped) {
      scale /= 2, counter = 0, ++skipped;
      CHECK(same_bits(r.weights, *before));  // nothing moved
    } else {
      ++iterations;
      if (counter == 2) scale *= 2, counter = 0, ++doublings;
      else ++counter;
      CHECK_FALSE(same_bits(r.weights, *before));
    }
    CHECK(r.scale == scale);
    CHECK(r.counter == counter);
    CHECK(r.iterations == iterations);
    before = &r.weights;
  }
  // The first step overflows for sure; the halvings reach a scale that fits, and growth follows.
  CHECK(steps[0].skipped);
  CHECK(steps[0].scale == std::ldexp(1.0, 39));
  CHECK(skipped >= 20);
  CHECK(doublings >= 1);
  CHECK(iterations >= 5);
  for (const Tensor& w : steps.back().weights) {
    CHECK(w.dtype() == tandem::DType::F32);
    for (int64_t i = 0; i < w.size(); ++i) REQUIRE(std::isfinite(w.item(i)));
  }
}

TEST_CASE("LossScaleOptimizer: with finite gradients, the weights equal the inner optimizer's bit for bit (float32)") {
  // Multiplying the loss by 2^10 and dividing the gradients by it is exact in float32.
  for (const bool adam : {false, true}) {
    CAPTURE(adam);
    auto inner = [&] { return adam ? tandem::optimizers::Adam(1e-2) : tandem::optimizers::SGD(0.1, {.momentum = 0.9}); };
    auto plain = mlp(), scaled = mlp();
    compile(*plain, inner());
    compile(*scaled, tandem::optimizers::LossScaleOptimizer(inner(), {.initial_scale = 1024.0}));
    const tandem::Dataset data = blobs(96, 36, 5);
    const tandem::FitOptions o{.epochs = 2, .batch_size = 32, .shuffle = false, .verbose = 0};
    const tandem::History a = plain->fit(data, o), b = scaled->fit(data, o);
    CHECK(same_bits(scaled->get_weights(), plain->get_weights()));
    CHECK(a.history.at("loss") == b.history.at("loss"));  // the reported loss is not scaled
    CHECK(b.history.at("skipped_steps") == std::vector<double>{0.0, 0.0});
    CHECK(a.history.count("skipped_steps") == 0);
    CHECK(scaled->optimizer()->iterations() == 6);
  }
}

TEST_CASE("mixed_float16: compile wraps the optimizer as Keras does, and saves and loads its state in Keras's layout") {
  const fs::path dir = scratch_root.fresh("saved");
  {
    const GlobalPolicy policy("mixed_float16");
    auto m = mlp();
    compile(*m, tandem::optimizers::Adam(1e-3));
    const auto* scaling = dynamic_cast<const LossScaleOptimizer*>(m->optimizer().get());
    REQUIRE(scaling != nullptr);
    CHECK(scaling->made_by_compile);
    CHECK(scaling->dynamic_scale() == 32768.0);
    CHECK(scaling->options().dynamic_growth_steps == 2000);
    CHECK(scaling->inner_optimizer()->name() == "adam");
    m->fit(blobs(64, 36, 5), {.epochs = 1, .batch_size = 32, .verbose = 0});
    CHECK(scaling->step_counter() == 2);
    m->save((dir / "m.keras").string());
    m->save_weights((dir / "m.weights.h5").string());
  }
  // Keras's layout: optimizer/vars holds the wrapper's iteration, learning_rate, step_counter and
  // dynamic_scale, then the inner optimizer's variables; optimizer/inner_optimizer/vars these again.
  const tandem::io::H5File f = tandem::io::H5File::open((dir / "m.weights.h5").string());
  CHECK(f.read_string_attribute("optimizer/vars", "name").value_or("") == "loss_scale_optimizer");
  CHECK(f.read_string_attribute("optimizer/inner_optimizer/vars", "name").value_or("") == "adam");
  const std::size_t inner = 2 + 2 * 6;  // iteration, learning_rate, m and v of 6 weights
  CHECK(f.children("optimizer/vars").size() == 4 + inner);
  CHECK(f.children("optimizer/inner_optimizer/vars").size() == inner);

  // A model under float32 that loads the file keeps its own optimizer; one compiled under
  // mixed_float16 gets the saved scale and count back.
  const GlobalPolicy policy("mixed_float16");
  auto loaded = tandem::load_model((dir / "m.keras").string());
  const auto* scaling = dynamic_cast<const LossScaleOptimizer*>(loaded->optimizer().get());
  REQUIRE(scaling != nullptr);
  CHECK(scaling->inner_optimizer()->name() == "adam");  // the config names Adam, compile wraps it again
  CHECK(scaling->step_counter() == 2);
  CHECK(scaling->iterations() == 2);
}

TEST_CASE("LossScaleOptimizer: a model Keras trained under mixed_float16 loads with Keras's loss-scale state") {
  // tests/data/make_loss_scale_files.py: Keras's compile wrapped Adam; its state after 3 steps.
  const fs::path data = fs::path(TANDEM_TEST_DATA) / "keras";
  const keras_file_helpers::Json refs = keras_file_helpers::read_json(data / "loss_scale_refs.json");
  auto m = tandem::load_model((data / "loss_scale_mlp.keras").string());
  const auto* scaling = dynamic_cast<const LossScaleOptimizer*>(m->optimizer().get());
  REQUIRE(scaling != nullptr);
  CHECK(scaling->made_by_compile);
  CHECK(scaling->inner_optimizer()->name() == "adam");
  CHECK(scaling->step_counter() == refs.at("step_counter").get<int64_t>());
  CHECK(scaling->dynamic_scale() == refs.at("dynamic_scale").get<double>());
  CHECK(scaling->iterations() == refs.at("iterations").get<int64_t>());
  // Its float16 predictions, within float16's rounding of outputs of order 1.
  std::vector<float> x;
  for (const auto& v : refs.at("x").at("values")) x.push_back(static_cast<float>(v.get<double>() * refs.at("x").at("scale").get<double>()));
  const Tensor rows = Tensor::from({96, 36}, std::span<const float>(x));
  const Tensor predicted = m->predict(rows.rows(0, 8), {.verbose = 0});
  const std::vector<double> keras = refs.at("predictions").get<std::vector<double>>();
  REQUIRE(predicted.size() == static_cast<int64_t>(keras.size()));
  for (int64_t i = 0; i < predicted.size(); ++i) CHECK(predicted.item(i) == doctest::Approx(keras[static_cast<std::size_t>(i)]).epsilon(1e-2).scale(1.0));
}

// Where a float16 gradient overflows depends on how a strategy splits it (a micro-batch's part of
// a gradient is half the whole), so a scale near the limit may be skipped by one strategy and not
// by another. A NaN in the data is not finite anywhere: batches 4 and 9 hold one, and every
// strategy must skip exactly those steps, on all its devices alike, and otherwise train as Default
// within 1e-3 (weight gradients are float32 sums of the float16 products; activations' gradients
// still round to float16 per micro-batch).
TEST_CASE("mixed_float16: Mirrored, Pipeline and ModelSplit skip the steps Default skips and end at its weights") {
  const GlobalPolicy policy("mixed_float16");
  const tandem::Dataset clean = blobs(32 * 16, 36, 5);
  Tensor x = clean.x().clone();
  for (const int64_t batch : {4, 9}) x.data<float>()[(batch * 32 + 7) * 36 + 3] = std::nanf("");
  const tandem::Dataset data{x, clean.y()};
  auto run = [&](dist::StrategyPtr strategy) {
    auto m = mlp();
    compile(*m, tandem::optimizers::LossScaleOptimizer(tandem::optimizers::SGD(0.05), {.initial_scale = 256.0, .dynamic_growth_steps = 3}),
            strategy);
    const tandem::History h = m->fit(data, {.epochs = 1, .batch_size = 32, .shuffle = false, .verbose = 0});
    const auto& scaling = dynamic_cast<const LossScaleOptimizer&>(*m->optimizer());
    return std::tuple{m->get_weights(), h.history.at("skipped_steps")[0], scaling.dynamic_scale(), scaling.iterations()};
  };
  const auto [weights, skipped, scale, iterations] = run(dist::Default());
  CHECK(skipped == 2);
  CHECK(iterations == 14);
  // Keras's rule: steps 0-3 grow it once (at the third), 4 halves, 5-8 once more, 9 halves, 10-15 twice.
  CHECK(scale == 256.0 * 2 / 2 * 2 / 2 * 4);
  for (const auto& [name, strategy] : {std::pair{std::string("Mirrored"), dist::Mirrored(cpus(2))},
                                       {"Pipeline", dist::Pipeline(cpus(2), {.micro_batches = 2})},
                                       {"ModelSplit", dist::ModelSplit(cpus(2))}}) {
    CAPTURE(name);
    const auto [w, s, sc, it] = run(strategy);
    CHECK(s == skipped);
    CHECK(sc == scale);
    CHECK(it == iterations);
    const double apart = max_relative_difference(w, weights, 1e-2);
    MESSAGE(name << ": weights within " << apart << " of Default's");
    CHECK(apart <= 1e-3);
  }
}

TEST_CASE("LossScaleOptimizer: bad arguments give errors naming them") {
  CHECK_THROWS_WITH_AS(tandem::optimizers::LossScaleOptimizer(nullptr), doctest::Contains("inner_optimizer is empty"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::optimizers::LossScaleOptimizer(tandem::optimizers::SGD(), {.initial_scale = 0.0}),
                       doctest::Contains("initial_scale must be a finite number > 0, got 0"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::optimizers::LossScaleOptimizer(tandem::optimizers::SGD(), {.dynamic_growth_steps = 0}),
                       doctest::Contains("dynamic_growth_steps must be >= 1, got 0"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::optimizers::LossScaleOptimizer(tandem::optimizers::LossScaleOptimizer(tandem::optimizers::SGD())),
                       doctest::Contains("already a LossScaleOptimizer"), tandem::ValueError);
}
