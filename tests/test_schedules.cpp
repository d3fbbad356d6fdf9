// Learning-rate schedules: each against its closed form (Keras 3's formulas), fit applying the
// rate of each update on every device, and schedules saved and loaded with the optimizer.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numbers>
#include <tandem/tandem.h>

#include "strategy_helpers.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
namespace sch = tandem::schedules;
using tandem::Tensor;

namespace {

double f32(double v) { return static_cast<double>(static_cast<float>(v)); }

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int64_t j = 0; j < a[i].size(); ++j)
      if (a[i].item(j) != b[i].item(j)) return false;
  return a.size() == b.size();
}

std::unique_ptr<tandem::Sequential> small_model(const tandem::LearningRate& lr, tandem::distribute::StrategyPtr strategy = nullptr,
                                                double momentum = 0.5) {
  tandem::set_random_seed(3);
  auto model = std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{tl::InputLayer({20}), tl::Dense(8, "relu"), tl::Dense(5)});
  tandem::CompileOptions options{.optimizer = tandem::optimizers::SGD(lr, {.momentum = momentum}),
                                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})};
  if (strategy) options.strategy = strategy;
  model->compile(options);
  return model;
}

}  // namespace

TEST_CASE("schedules: ExponentialDecay, CosineDecay (with warmup) and PiecewiseConstantDecay give their closed forms") {
  const auto exp = sch::ExponentialDecay(0.1, 10, 0.5), stairs = sch::ExponentialDecay(0.1, 10, 0.5, true);
  for (int64_t k : {0, 5, 10, 11, 19, 20, 21, 50, 200}) {
    CHECK((*exp)(k) == doctest::Approx(0.1 * std::pow(0.5, k / 10.0)).epsilon(1e-12));
    CHECK((*stairs)(k) == doctest::Approx(0.1 * std::pow(0.5, std::floor(k / 10.0))).epsilon(1e-12));
  }
  const auto cosine = sch::CosineDecay(1.0, 100, {.alpha = 0.1});
  CHECK((*cosine)(0) == doctest::Approx(1.0));
  CHECK((*cosine)(50) == doctest::Approx(0.55));  // half way: (1 - 0.1) * 0.5 + 0.1
  CHECK((*cosine)(100) == doctest::Approx(0.1));
  CHECK((*cosine)(150) == doctest::Approx(0.1));  // held after decay_steps
  CHECK((*cosine)(25) == doctest::Approx(0.9 * 0.5 * (1 + std::cos(std::numbers::pi / 4)) + 0.1));
  const auto warm = sch::CosineDecay(0.0, 100, {.warmup_target = 1.0, .warmup_steps = 10});
  CHECK((*warm)(0) == 0.0);
  CHECK((*warm)(5) == doctest::Approx(0.5));   // linear warmup
  CHECK((*warm)(10) == doctest::Approx(1.0));
  CHECK((*warm)(60) == doctest::Approx(0.5));  // cosine from the warmup target over 100 steps
  CHECK((*warm)(200) == doctest::Approx(0.0));
  const auto piecewise = sch::PiecewiseConstantDecay({10, 20}, {1.0, 0.5, 0.1});
  const std::vector<std::pair<int64_t, double>> expected{{0, 1.0}, {10, 1.0}, {11, 0.5}, {20, 0.5}, {21, 0.1}, {1000, 0.1}};
  for (const auto& [k, v] : expected) CHECK((*piecewise)(k) == v);

  CHECK_THROWS_WITH_AS(sch::PiecewiseConstantDecay({10}, {1.0}), doctest::Contains("1 less than the length of values"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(sch::ExponentialDecay(0.1, 0, 0.5), "ExponentialDecay: decay_steps must be >= 1, got 0", tandem::ValueError);
  CHECK_THROWS_WITH_AS(sch::CosineDecay(0.1, 10, {.warmup_steps = 5}), "CosineDecay: warmup_steps needs a warmup_target", tandem::ValueError);
}

TEST_CASE("schedules: fit uses the rate of each update, counted across epochs and fits, on every device") {
  for (int devices : {1, 2}) {
    INFO(devices << " device(s)");
    const auto schedule = sch::ExponentialDecay(0.1, 3, 0.5);
    auto model = small_model(schedule, devices == 1 ? nullptr : tandem::distribute::Mirrored(cpus(devices)));
    std::vector<double> rates;
    struct Recorder : tandem::Callback {
      std::vector<double>* rates = nullptr;
      void on_train_batch_end(int64_t, const tandem::Logs&) override { rates->push_back(model_->optimizer()->learning_rate()); }
    };
    auto recorder = std::make_shared<Recorder>();
    recorder->rates = &rates;
    model->fit(blobs(64, 20, 5), {.epochs = 2, .batch_size = 16, .verbose = 0, .callbacks = {recorder}});
    model->fit(blobs(64, 20, 5), {.epochs = 1, .batch_size = 16, .verbose = 0, .callbacks = {recorder}});
    REQUIRE(rates.size() == 12);
    for (int64_t k = 0; k < 12; ++k) CHECK(rates[static_cast<std::size_t>(k)] == f32(0.1 * std::pow(0.5, k / 3.0)));
    CHECK(model->optimizer()->iterations() == 12);
    CHECK_THROWS_WITH_AS(model->optimizer()->set_learning_rate(0.5), doctest::Contains("the learning rate follows a schedule"), tandem::ValueError);

    // Plain SGD at a rate of 0 from the third update on: only the first two updates move the
    // weights (momentum would carry on moving them).
    auto frozen = small_model(sch::PiecewiseConstantDecay({1}, {0.1, 0.0}), devices == 1 ? nullptr : tandem::distribute::Mirrored(cpus(devices)), 0.0);
    frozen->build({20});
    const std::vector<Tensor> initial = frozen->get_weights();
    frozen->fit(blobs(64, 20, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
    const std::vector<Tensor> after_one_epoch = frozen->get_weights();
    CHECK_FALSE(same(initial, after_one_epoch));
    frozen->fit(blobs(64, 20, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
    CHECK(same(after_one_epoch, frozen->get_weights()));
  }
}

TEST_CASE("schedules: an optimizer's schedule is saved in Keras's form and loaded back") {
  const ScratchRoot scratch_root("tandem_schedules");
  const fs::path dir = scratch_root.fresh("save");
  auto model = small_model(sch::CosineDecay(0.05, 40, {.alpha = 0.2, .warmup_target = 0.1, .warmup_steps = 4}));
  model->fit(blobs(32, 20, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
  for (const char* name : {"m.keras", "m.h5"}) {
    INFO(name);
    const std::string path = (dir / name).string();
    model->save(path);
    std::unique_ptr<tandem::Model> loaded = tandem::load_model(path);
    REQUIRE(loaded->optimizer()->schedule());
    for (int64_t k : {0, 2, 4, 10, 44, 100}) CHECK((*loaded->optimizer()->schedule())(k) == (*model->optimizer()->schedule())(k));
    const nlohmann::json config = nlohmann::json::parse(loaded->optimizer()->config_json());
    CHECK(config.at("learning_rate") == nlohmann::json::parse(R"({"module": "keras.optimizers.schedules", "class_name": "CosineDecay",
        "config": {"initial_learning_rate": 0.05, "decay_steps": 40, "alpha": 0.2, "name": "CosineDecay", "warmup_target": 0.1,
                   "warmup_steps": 4}, "registered_name": null})"));
    // Training continues on the schedule: the next update is number 2.
    CHECK(loaded->optimizer()->iterations() == 2);
  }
}
