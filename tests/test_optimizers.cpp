// Optimizers against PyTorch: a tiny MLP trained 3 full-batch steps from the same initial
// weights must end with the weights and per-step losses that PyTorch computed (tests/data/
// optimizer_refs.json, made by tests/data/make_optimizer_refs.py with Keras 3's update rules).
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tl = tandem::layers;
using nlohmann::json;

namespace {
json load_refs() {
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/optimizer_refs.json");
  REQUIRE(in.good());
  return json::parse(in);
}

tandem::Tensor tensor_from(const json& values, tandem::Shape shape) {
  std::vector<float> v;
  for (const auto& x : values) v.push_back(x.get<float>());
  return tandem::Tensor::from(std::move(shape), std::span<const float>(v));
}

tandem::OptimizerPtr optimizer_for(const json& c) {
  const std::string kind = c["optimizer"];
  const double lr = c["learning_rate"];
  if (kind == "sgd") return tandem::optimizers::SGD(lr, {.momentum = c["momentum"], .nesterov = c["nesterov"]});
  if (kind == "adam")
    return tandem::optimizers::Adam(lr, {.beta_1 = c["beta_1"], .beta_2 = c["beta_2"], .epsilon = c["epsilon"]});
  if (kind == "adamw")
    return tandem::optimizers::AdamW(lr, {.weight_decay = c["weight_decay"], .beta_1 = c["beta_1"], .beta_2 = c["beta_2"],
                                          .epsilon = c["epsilon"]});
  if (kind == "rmsprop") return tandem::optimizers::RMSprop(lr, {.rho = c["rho"], .momentum = c["momentum"], .epsilon = c["epsilon"]});
  if (kind == "adagrad")
    return tandem::optimizers::Adagrad(lr, {.initial_accumulator_value = c["initial_accumulator_value"], .epsilon = c["epsilon"]});
  if (kind == "nadam") return tandem::optimizers::Nadam(lr, {.beta_1 = c["beta_1"], .beta_2 = c["beta_2"], .epsilon = c["epsilon"]});
  if (kind == "lion") return tandem::optimizers::Lion(lr, {.beta_1 = c["beta_1"], .beta_2 = c["beta_2"]});
  FAIL("optimizer_refs.json has a case for optimizer \"" << kind << "\" that the test does not know");
  return nullptr;
}

std::vector<std::string> paths(const std::vector<tandem::VariablePtr>& vars) {
  std::vector<std::string> out;
  for (const auto& v : vars) out.push_back(v->path());
  return out;
}
}  // namespace

// Cases marked "reference": "numpy" (Nadam, Lion) come from the script's float64 numpy version of
// Keras's rule instead: PyTorch 1.13 has no exact twin (see make_optimizer_refs.py).
TEST_CASE("optimizers: three steps match PyTorch for every optimizer") {
  const json refs = load_refs();
  std::vector<float> xs;
  for (const auto& row : refs["x"])
    for (const auto& v : row) xs.push_back(v.get<float>());
  std::vector<int32_t> ys;
  for (const auto& v : refs["y"]) ys.push_back(v.get<int32_t>());
  const tandem::Dataset data(tandem::Tensor::from({8, 4}, std::span<const float>(xs)),
                             tandem::Tensor::from({8}, std::span<const int32_t>(ys)));

  for (const json& c : refs["cases"]) {
    const std::string name = c["name"];
    SUBCASE(name.c_str()) {
      auto x = tandem::Input({4});
      auto h = tl::Dense(5, "relu")(x);
      tandem::Model model(x, tl::Dense(3)(h));
      const json& init = refs["init"];
      model.set_weights({tensor_from(init["kernel1"], {4, 5}), tensor_from(init["bias1"], {5}),
                         tensor_from(init["kernel2"], {5, 3}), tensor_from(init["bias2"], {3})});
      model.compile({.optimizer = optimizer_for(c),
                     .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
      // One epoch of one full batch = one step; History's loss is the loss before that update.
      const tandem::History h3 = model.fit(data, {.epochs = 3, .batch_size = 8, .shuffle = false, .verbose = 0});
      for (int step = 0; step < 3; ++step)
        CHECK(h3.history.at("loss")[static_cast<std::size_t>(step)] == doctest::Approx(c["losses"][step].get<double>()).epsilon(1e-5));
      const auto weights = model.get_weights();
      const char* names[] = {"kernel1", "bias1", "kernel2", "bias2"};
      for (int w = 0; w < 4; ++w) {
        const json& expected = c["final"][names[w]];
        REQUIRE(static_cast<std::size_t>(weights[static_cast<std::size_t>(w)].size()) == expected.size());
        double worst = 0;
        for (std::size_t i = 0; i < expected.size(); ++i)
          worst = std::max(worst, std::abs(weights[static_cast<std::size_t>(w)].item(static_cast<int64_t>(i)) - expected[i].get<double>()));
        INFO(name << " " << names[w] << ": max |tandem - pytorch| = " << worst);
        CHECK(worst <= 1e-5);
      }
      CHECK(model.optimizer()->iterations() == 3);
    }
  }
}

TEST_CASE("optimizers: Keras 3 defaults") {
  CHECK(tandem::optimizers::SGD()->learning_rate() == doctest::Approx(0.01));
  CHECK(tandem::optimizers::Adam()->learning_rate() == doctest::Approx(0.001));
  CHECK(tandem::optimizers::AdamW()->learning_rate() == doctest::Approx(0.001));
  CHECK(tandem::optimizers::RMSprop()->learning_rate() == doctest::Approx(0.001));
  CHECK(tandem::optimizers::get("adam")->name() == "adam");
  CHECK_THROWS_WITH_AS(tandem::optimizers::get("adadelta"), doctest::Contains("unknown optimizer 'adadelta'"), tandem::ValueError);
  const tandem::optimizers::AdagradOptions adagrad;
  CHECK(adagrad.initial_accumulator_value == 0.1);
  CHECK(adagrad.epsilon == 1e-7);
  const tandem::optimizers::NadamOptions nadam;
  CHECK((nadam.beta_1 == 0.9 && nadam.beta_2 == 0.999 && nadam.epsilon == 1e-7));
  const tandem::optimizers::LionOptions lion;
  CHECK((lion.beta_1 == 0.9 && lion.beta_2 == 0.99));
  for (const char* name : {"adagrad", "nadam", "lion"}) {
    const tandem::OptimizerPtr o = tandem::optimizers::get(name);
    CHECK(o->name() == name);
    CHECK(o->learning_rate() == doctest::Approx(0.001));
  }
  // Keras's get_config keys, with the values given.
  const json a = json::parse(tandem::optimizers::Adagrad(0.5, {.initial_accumulator_value = 0.25, .epsilon = 1e-6})->config_json());
  CHECK(a["name"] == "adagrad");
  CHECK(a["learning_rate"] == 0.5);
  CHECK(a["initial_accumulator_value"] == 0.25);
  CHECK(a["epsilon"] == 1e-6);
  const json n = json::parse(tandem::optimizers::Nadam(0.5, {.beta_1 = 0.8, .beta_2 = 0.99, .epsilon = 1e-6})->config_json());
  CHECK((n["name"] == "nadam" && n["beta_1"] == 0.8 && n["beta_2"] == 0.99 && n["epsilon"] == 1e-6));
  const json l = json::parse(tandem::optimizers::Lion(0.5, {.beta_1 = 0.8, .beta_2 = 0.9})->config_json());
  CHECK((l["name"] == "lion" && l["beta_1"] == 0.8 && l["beta_2"] == 0.9));
  CHECK(!l.contains("epsilon"));
}

TEST_CASE("optimizers: clipnorm, global_clipnorm and clipvalue match PyTorch's clip_grad_norm_ and clip_grad_value_") {
  // tests/data/clipping_refs.json, made by tests/data/make_clipping_refs.py: one SGD step at rate
  // 1 from the same weights, the gradients clipped first.
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/clipping_refs.json");
  REQUIRE(in.good());
  const json refs = json::parse(in);
  std::vector<int32_t> ys;
  for (const auto& v : refs["y"]) ys.push_back(v.get<int32_t>());
  const tandem::Dataset data(tensor_from(refs["x"], {8, 6}), tandem::Tensor::from({8}, std::span<const int32_t>(ys)));
  for (const char* name : {"none", "clipnorm", "global_clipnorm", "clipvalue"}) {
    INFO("case " << name);
    tandem::GradientClipping clipping;
    if (std::string(name) == "clipnorm") clipping.clipnorm = refs["limits"]["clipnorm"].get<double>();
    if (std::string(name) == "global_clipnorm") clipping.global_clipnorm = refs["limits"]["global_clipnorm"].get<double>();
    if (std::string(name) == "clipvalue") clipping.clipvalue = refs["limits"]["clipvalue"].get<double>();
    auto x = tandem::Input({6});
    tandem::Model model(x, tl::Dense(3)(tl::Dense(4, "tanh")(x)));
    std::vector<tandem::Tensor> start;
    for (std::size_t w = 0; w < 4; ++w) start.push_back(tensor_from(refs["start"][w], tandem::Shape(refs["shapes"][w].get<std::vector<int64_t>>())));
    model.set_weights(start);
    model.compile({.optimizer = tandem::optimizers::SGD(1.0, {.clipping = clipping}),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    model.fit(data, {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
    const auto weights = model.get_weights();
    double worst = 0;
    for (std::size_t w = 0; w < 4; ++w)
      for (std::size_t i = 0; i < refs["cases"][name][w].size(); ++i)
        worst = std::max(worst, std::abs(weights[w].item(static_cast<int64_t>(i)) - refs["cases"][name][w][i].get<double>()));
    INFO("max |tandem - pytorch| = " << worst);
    CHECK(worst <= 1e-5);
  }
  CHECK_THROWS_WITH_AS(tandem::optimizers::SGD(0.1, {.clipping = {.clipnorm = 1.0, .clipvalue = 0.5}}),
                       "optimizer: only one of clipnorm, global_clipnorm and clipvalue can be set", tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::optimizers::Adam(0.1, {.clipping = {.global_clipnorm = 0.0}}), doctest::Contains("global_clipnorm must be > 0"),
                       tandem::ValueError);
}

TEST_CASE("optimizers: Adagrad, Nadam and Lion refuse arguments out of range, naming them") {
  using tandem::ValueError;
  namespace opt = tandem::optimizers;
  CHECK_THROWS_WITH_AS(opt::Adagrad(0.1, {.initial_accumulator_value = -0.5}),
                       "Adagrad: initial_accumulator_value must be >= 0, got -0.500000", ValueError);
  CHECK_THROWS_WITH_AS(opt::Adagrad(-0.1), "optimizer: learning_rate must be >= 0, got -0.100000", ValueError);
  CHECK_THROWS_WITH_AS(opt::Nadam(0.1, {.beta_1 = 1.0}), "Nadam: beta_1 must be in [0, 1), got 1.000000", ValueError);
  CHECK_THROWS_WITH_AS(opt::Nadam(0.1, {.beta_2 = -0.1}), "Nadam: beta_2 must be in [0, 1), got -0.100000", ValueError);
  CHECK_THROWS_WITH_AS(opt::Lion(0.1, {.beta_1 = 0.0}), "Lion: beta_1 must be in (0, 1], got 0.000000", ValueError);
  CHECK_THROWS_WITH_AS(opt::Lion(0.1, {.beta_2 = 1.5}), "Lion: beta_2 must be in [0, 1], got 1.500000", ValueError);
  CHECK_THROWS_WITH_AS(opt::Lion(0.1, {.clipping = {.clipnorm = 1.0, .clipvalue = 0.5}}),
                       "optimizer: only one of clipnorm, global_clipnorm and clipvalue can be set", ValueError);
}

TEST_CASE("optimizers: slot variables have Keras 3's names, starting values and order") {
  // Two weights built in one order, listed by Keras in the other: keras_variables follows the
  // weights given, as a `.weights.h5` file stores Keras's optimizer.variables.
  auto kernel = std::make_shared<tandem::Variable>("dense/kernel", tandem::Tensor({2, 3}, tandem::DType::F32), true);
  auto bias = std::make_shared<tandem::Variable>("dense/bias", tandem::Tensor({3}, tandem::DType::F32), true);
  const std::vector<tandem::VariablePtr> keras_order{kernel, bias};
  const std::vector<std::string> head{"optimizer/iteration", "optimizer/learning_rate"};
  auto expect = [&](std::vector<std::string> tail) {
    tail.insert(tail.begin(), head.begin(), head.end());
    return tail;
  };
  SUBCASE("Adagrad: one accumulator per weight, starting at initial_accumulator_value") {
    const auto o = tandem::optimizers::Adagrad(0.1, {.initial_accumulator_value = 0.25});
    o->build({bias, kernel});
    CHECK(paths(o->keras_variables(keras_order)) == expect({"optimizer/dense/kernel/accumulator", "optimizer/dense/bias/accumulator"}));
    for (std::size_t i = 2; i < o->variables().size(); ++i)
      for (int64_t j = 0; j < o->variables()[i]->value().size(); ++j) CHECK(o->variables()[i]->value().item(j) == 0.25);
  }
  SUBCASE("Nadam: momentum and velocity weight by weight, then u_product = 1 in the weights' dtype") {
    const auto o = tandem::optimizers::Nadam();
    o->build({bias, kernel});
    CHECK(paths(o->keras_variables(keras_order)) ==
          expect({"optimizer/dense/kernel/momentum", "optimizer/dense/kernel/velocity", "optimizer/dense/bias/momentum",
                  "optimizer/dense/bias/velocity", "optimizer/u_product"}));
    const tandem::Variable& u = *o->variables().back();
    CHECK(u.path() == "optimizer/u_product");
    CHECK(u.value().shape().rank() == 0);
    CHECK(u.value().dtype() == tandem::DType::F32);
    CHECK(u.value().item(0) == 1.0);
    // Weights built later get their slots before the state, which stays last.
    auto more = std::make_shared<tandem::Variable>("dense_1/kernel", tandem::Tensor({3, 1}, tandem::DType::F32), true);
    o->build({more});
    CHECK(o->variables().size() == 2 + 3 * 2 + 1);
    CHECK(o->variables().back()->path() == "optimizer/u_product");
    CHECK(o->variables()[o->variables().size() - 2]->path() == "optimizer/dense_1/kernel/velocity");
    // Built for float64 weights (gradient checks), u_product is float64 too.
    const auto f64 = tandem::optimizers::Nadam();
    f64->build({std::make_shared<tandem::Variable>("w", tandem::Tensor({2}, tandem::DType::F64), true)});
    CHECK(f64->variables().back()->value().dtype() == tandem::DType::F64);
  }
  SUBCASE("Lion: one momentum per weight, starting at zero") {
    const auto o = tandem::optimizers::Lion();
    o->build({bias, kernel});
    CHECK(paths(o->keras_variables(keras_order)) == expect({"optimizer/dense/kernel/momentum", "optimizer/dense/bias/momentum"}));
    CHECK(o->variables()[2]->value().item(0) == 0.0);
  }
  SUBCASE("RMSprop with momentum: every velocity, then every momentum, as Keras creates them") {
    const auto o = tandem::optimizers::RMSprop(0.01, {.momentum = 0.5});
    o->build({bias, kernel});
    CHECK(paths(o->keras_variables(keras_order)) == expect({"optimizer/dense/kernel/velocity", "optimizer/dense/bias/velocity",
                                                            "optimizer/dense/kernel/momentum", "optimizer/dense/bias/momentum"}));
  }
  SUBCASE("a weight the optimizer has no slots for is an error naming it") {
    const auto o = tandem::optimizers::Lion();
    o->build({kernel});
    auto other = std::make_shared<tandem::Variable>("other/kernel", tandem::Tensor({2, 3}, tandem::DType::F32), true);
    CHECK_THROWS_WITH_AS(o->keras_variables({other}), "optimizer \"lion\": has no slots for weight \"other/kernel\"", tandem::Error);
  }
}

TEST_CASE("optimizers: Nadam's u_product is the product of Keras's momentum schedule") {
  // After t steps u_product = prod_{s=1..t} beta_1 * (1 - 0.5 * 0.96^s), however many variables
  // each step updates; Keras keeps it in the weights' dtype (float32 here).
  auto x = tandem::Input({4});
  tandem::Model model(x, tl::Dense(2)(tl::Dense(3, "tanh")(x)));
  model.compile({.optimizer = tandem::optimizers::Nadam(0.01, {.beta_1 = 0.8}), .loss = "mse"});
  std::vector<float> xs(16 * 4), ys(16 * 2);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.3f * static_cast<float>(i));
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = std::cos(0.7f * static_cast<float>(i));
  const tandem::Dataset data(tandem::Tensor::from({16, 4}, std::span<const float>(xs)), tandem::Tensor::from({16, 2}, std::span<const float>(ys)));
  model.fit(data, {.epochs = 5, .batch_size = 8, .shuffle = false, .verbose = 0});
  const tandem::Variable& u = *model.optimizer()->variables().back();
  REQUIRE(u.path() == "optimizer/u_product");
  CHECK(u.value().dtype() == tandem::DType::F32);
  double expected = 1.0;
  for (int s = 1; s <= 10; ++s) expected *= 0.8 * (1 - 0.5 * std::pow(0.96, s));
  CHECK(model.optimizer()->iterations() == 10);
  CHECK(u.value().item(0) == doctest::Approx(expected).epsilon(1e-6));
}

TEST_CASE("optimizers: Adagrad, Nadam and Lion end five steps with Default's weights under every strategy") {
  // Replicas, placement, split weights (slots split with them, u_product whole on every device)
  // and pipeline stages all run the same updates as one device.
  namespace dist = tandem::distribute;
  const std::vector<std::string> two{"cpu:0", "cpu:1"};
  const dist::DeviceMesh mesh{{2}, {"model"}, two};
  const dist::LayoutMap megatron = {{"up/kernel", {"", "model"}}, {"up/bias", {"model"}}, {"down/kernel", {"model", ""}}};
  std::vector<float> xs(80 * 8);
  std::vector<int32_t> ys(80);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * static_cast<float>(i)) + (i % 8 == (i / 8) % 3 ? 1.0f : 0.0f);
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int32_t>(i % 3);
  const tandem::Dataset data(tandem::Tensor::from({80, 8}, std::span<const float>(xs)), tandem::Tensor::from({80}, std::span<const int32_t>(ys)));
  auto five_steps = [&](const std::function<tandem::OptimizerPtr()>& make, dist::StrategyPtr strategy) {
    tandem::set_random_seed(3);
    tandem::Sequential model({tl::InputLayer({8}), tl::Dense(16, "relu", {.name = "up"}), tl::Dense(8, "tanh", {.name = "down"}),
                              tl::Dense(3, "", {.name = "out"})});
    model.compile({.optimizer = make(), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
    model.fit(data, {.epochs = 1, .batch_size = 16, .shuffle = false, .verbose = 0});
    CHECK(model.optimizer()->iterations() == 5);
    return model.get_weights();
  };
  const std::pair<const char*, std::function<tandem::OptimizerPtr()>> optimizers[] = {
      {"adagrad", [] { return tandem::optimizers::Adagrad(0.05); }},
      {"nadam", [] { return tandem::optimizers::Nadam(0.01); }},
      {"lion", [] { return tandem::optimizers::Lion(1e-3); }},
  };
  for (const auto& [name, make] : optimizers) {
    const auto reference = five_steps(make, dist::Default());
    const std::pair<const char*, dist::StrategyPtr> strategies[] = {
        {"Mirrored on 2", dist::Mirrored(two)},
        {"ModelSplit by placement", dist::ModelSplit(two, {.placement = {{"down", "cpu:1"}}})},
        {"ModelSplit, Megatron's MLP", dist::ModelSplit(mesh, megatron)},
        {"Pipeline of 2 stages, 2 micro-batches", dist::Pipeline(two, {.micro_batches = 2})},
    };
    for (const auto& [strategy_name, strategy] : strategies) {
      const auto weights = five_steps(make, strategy);
      double worst = 0;  // relative to each tensor's largest value
      for (std::size_t w = 0; w < weights.size(); ++w) {
        double diff = 0, scale = 1e-3;
        for (int64_t i = 0; i < weights[w].size(); ++i) {
          diff = std::max(diff, std::abs(weights[w].item(i) - reference[w].item(i)));
          scale = std::max(scale, std::abs(reference[w].item(i)));
        }
        worst = std::max(worst, diff / scale);
      }
      INFO(name << " under " << strategy_name << ": weights apart by " << worst);
      CHECK(worst <= 1e-5);
    }
  }
}
