// The Model API end to end on small problems with known answers, determinism, and error messages.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

namespace tl = tandem::layers;
using tandem::Tensor;

namespace {
tandem::Dataset random_classification(int64_t rows, int64_t features, int classes, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(rows * features));
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    float s = 0;
    for (int64_t f = 0; f < features; ++f) s += (x[static_cast<std::size_t>(r * features + f)] = normal(gen)) * float(f + 1);
    y[static_cast<std::size_t>(r)] = static_cast<int32_t>(std::abs(static_cast<int>(s * 3)) % classes);
  }
  return {Tensor::from({rows, features}, std::span<const float>(x)), Tensor::from({rows}, std::span<const int32_t>(y))};
}

std::vector<Tensor> train_once(uint64_t seed) {
  tandem::set_random_seed(seed);
  const auto data = random_classification(300, 12, 4, 7);
  tandem::Sequential model({tl::InputLayer({12}), tl::Dense(32, "relu"), tl::Dropout(0.3), tl::Dense(4)});
  model.compile({.optimizer = tandem::optimizers::Adam(1e-2),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  model.fit(data, {.epochs = 3, .batch_size = 32, .verbose = 0});  // shuffled, dropout, partial last batch
  return model.get_weights();
}

bool bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes() != b[i].bytes() || std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) != 0) return false;
  return true;
}
}  // namespace

TEST_CASE("model: same seed gives bitwise-identical weights; another seed does not") {
  const auto a = train_once(123), b = train_once(123), c = train_once(124);
  CHECK(bitwise_equal(a, b));
  CHECK_FALSE(bitwise_equal(a, c));
}

TEST_CASE("model: linear regression with SGD converges to the closed-form solution") {
  // y = 2·x0 − 3·x1 + 0.5 exactly; least squares has this unique solution.
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(400), y(200);
  for (int r = 0; r < 200; ++r) {
    x[2 * r] = u(gen), x[2 * r + 1] = u(gen);
    y[r] = 2 * x[2 * r] - 3 * x[2 * r + 1] + 0.5f;
  }
  auto in = tandem::Input({2});
  tandem::Model model(in, tl::Dense(1)(in));
  model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = "mse", .metrics = {"mae"}});
  const auto h = model.fit(Tensor::from({200, 2}, std::span<const float>(x)), Tensor::from({200}, std::span<const float>(y)),
                           {.epochs = 60, .batch_size = 20, .verbose = 0});
  const auto w = model.get_weights();
  CHECK(w[0].item(0) == doctest::Approx(2.0).epsilon(1e-3));
  CHECK(w[0].item(1) == doctest::Approx(-3.0).epsilon(1e-3));
  CHECK(w[1].item(0) == doctest::Approx(0.5).epsilon(1e-3));
  CHECK(h.history.at("mae").back() < 1e-3);
  CHECK(h.history.at("loss").size() == 60);
}

TEST_CASE("model: evaluate and predict agree with a cross-entropy computed from the predictions") {
  tandem::set_random_seed(5);
  const auto data = random_classification(50, 6, 3, 3);
  tandem::Sequential model({tl::InputLayer({6}), tl::Dense(8, "tanh"), tl::Dense(3)});
  model.compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  const Tensor logits = model.predict(data.x(), {.batch_size = 16});  // 16, 16, 16, 2: partial last batch
  double loss = 0, correct = 0;
  for (int64_t r = 0; r < 50; ++r) {
    double mx = -1e30, sum = 0;
    int64_t best = 0;
    for (int64_t j = 0; j < 3; ++j) {
      mx = std::max(mx, logits.item(r * 3 + j));
      if (logits.item(r * 3 + j) > logits.item(r * 3 + best)) best = j;
    }
    for (int64_t j = 0; j < 3; ++j) sum += std::exp(logits.item(r * 3 + j) - mx);
    const auto label = static_cast<int64_t>(data.y().item(r));
    loss += mx + std::log(sum) - logits.item(r * 3 + label);
    correct += best == label;
  }
  const tandem::Logs logs = model.evaluate(data, {.batch_size = 16, .verbose = 0});
  CHECK(logs.at("loss") == doctest::Approx(loss / 50).epsilon(1e-5));
  CHECK(logs.at("accuracy") == doctest::Approx(correct / 50).epsilon(1e-6));
}

TEST_CASE("model: the last partial batch is a step of its own") {
  const auto data = random_classification(10, 3, 2, 1);
  tandem::Sequential model({tl::InputLayer({3}), tl::Dense(2)});
  model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  model.fit(data, {.epochs = 2, .batch_size = 4, .verbose = 0});
  CHECK(model.optimizer()->iterations() == 6);  // 4 + 4 + 2 rows, twice
  CHECK(model.planned_arena_bytes() > 0);
}

TEST_CASE("model: a layer called twice shares its weights") {
  auto x = tandem::Input({4});
  auto shared = tl::Dense(4, "tanh");
  auto y = shared(shared(x));
  tandem::Model model(x, y);
  CHECK(model.layers().size() == 1);
  CHECK(model.weights().size() == 2);
  // With the identity as kernel and zero bias, the model computes tanh(tanh(x)).
  std::vector<float> eye(16, 0.0f);
  for (int i = 0; i < 4; ++i) eye[static_cast<std::size_t>(i * 5)] = 1.0f;
  model.set_weights({Tensor::from({4, 4}, std::span<const float>(eye)), Tensor({4}, tandem::DType::F32)});
  const std::vector<float> in{0.5f, -1.0f, 2.0f, 0.0f};
  const Tensor out = model.predict(Tensor::from({1, 4}, std::span<const float>(in)));
  for (int i = 0; i < 4; ++i) CHECK(out.item(i) == doctest::Approx(std::tanh(std::tanh(in[static_cast<std::size_t>(i)]))));
}

TEST_CASE("model: dropout is the identity outside training") {
  tandem::set_random_seed(9);
  tandem::Sequential with({tl::InputLayer({5}), tl::Dense(5), tl::Dropout(0.5)});
  const std::vector<float> in{1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
  const Tensor x = Tensor::from({2, 5}, std::span<const float>(in));
  const Tensor y = with.predict(x);
  const auto w = with.layers()[0]->get_weights();  // the Dense layer
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 5; ++c) {
      double expect = w[1].item(c);
      for (int64_t k = 0; k < 5; ++k) expect += x.item(r * 5 + k) * w[0].item(k * 5 + c);
      CHECK(y.item(r * 5 + c) == doctest::Approx(expect).epsilon(1e-5));
    }
}

TEST_CASE("model: summary lists layers, shapes and parameter counts") {
  tandem::Sequential model({tl::InputLayer({28, 28}), tl::Flatten(), tl::Dense(256, "relu"), tl::Dense(10)}, "mlp");
  const std::string s = model.summary_string();
  CHECK(s.find("Model: \"mlp\"") != std::string::npos);
  CHECK(s.find("(None, 784)") != std::string::npos);
  CHECK(s.find("200,960") != std::string::npos);
  CHECK(s.find("Total params: 203,530 (795.04 KB)") != std::string::npos);
}

TEST_CASE("model errors: a sparse loss refuses float labels with a fraction and one-hot targets, naming the loss, value and row") {
  tandem::Sequential model({tl::InputLayer({4}), tl::Dense(3)}, "m");
  model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const Tensor x({6, 4}, tandem::DType::F32);
  const std::vector<float> labels{0, 1, 2, 1.5f, 0, 1};  // 1.5 would have been trained as class 1
  CHECK_THROWS_WITH_AS(model.fit(x, Tensor::from({6}, std::span<const float>(labels)), {.verbose = 0}),
                       "sparse_categorical_crossentropy: label 1.5 at row 3 is not a whole number: class ids are 0, 1, ..., 2", tandem::ValueError);
  const std::vector<double> nan_label{0, 1, 2, 0, std::nan(""), 1};
  CHECK_THROWS_WITH_AS(model.evaluate(x, Tensor::from({6, 1}, std::span<const double>(nan_label)), {.verbose = 0}),
                       doctest::Contains("label nan at row 4 is not a whole number"), tandem::ValueError);
  const std::vector<float> whole{0, 1, 2, 1, 0, 2};  // float class ids without a fraction are fine
  CHECK_NOTHROW(model.fit(x, Tensor::from({6}, std::span<const float>(whole)), {.verbose = 0}));
  CHECK_THROWS_WITH_AS(model.fit(x, Tensor({6, 3}, tandem::DType::F32), {.verbose = 0}),
                       "sparse_categorical_crossentropy: targets of shape (6, 3) look one-hot (the model output is (None, 3)); this loss takes "
                       "class ids of shape (6,). For one-hot targets use losses::CategoricalCrossentropy",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(model.fit(x, Tensor({6, 2}, tandem::DType::I32), {.verbose = 0}),
                       doctest::Contains("targets of shape (6, 2) do not fit (the model output is (None, 3)); this loss takes class ids of shape (6,)"),
                       tandem::ValueError);
}

TEST_CASE("model errors: each names the layer or argument with expected and actual values") {
  tandem::Sequential model({tl::InputLayer({4}), tl::Dense(3, "relu", {.name = "hidden"}), tl::Dense(2)}, "m");
  model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const Tensor y2(tandem::Shape{6}, tandem::DType::I32);

  SUBCASE("wrong input shape") {
    CHECK_THROWS_WITH_AS(model.fit(Tensor({6, 5}, tandem::DType::F32), y2, {.verbose = 0}),
                         "Model \"m\": expected input of shape (None, 4), got x of shape (6, 5)", tandem::ShapeError);
  }
  SUBCASE("label out of range") {
    std::vector<int32_t> labels{0, 1, 2, 0, 1, 0};
    CHECK_THROWS_WITH_AS(model.fit(Tensor({6, 4}, tandem::DType::F32), Tensor::from({6}, std::span<const int32_t>(labels)), {.verbose = 0}),
                         doctest::Contains("label 2 at row 2 is out of range [0, 2)"), tandem::ValueError);
  }
  SUBCASE("mismatched x and y lengths") {
    CHECK_THROWS_WITH_AS(model.fit(Tensor({6, 4}, tandem::DType::F32), Tensor({5}, tandem::DType::I32), {.verbose = 0}),
                         doctest::Contains("x has 6 rows but y has 5"), tandem::ValueError);
  }
  SUBCASE("a layer called on the wrong width") {
    auto x = tandem::Input({7});
    CHECK_THROWS_WITH_AS((*model.layers()[0])(x), "Dense \"hidden\": expected input of last dimension 4, got (None, 7)", tandem::ShapeError);
  }
  SUBCASE("unknown names") {
    CHECK_THROWS_WITH_AS(tl::Dense(3, "swish2"), doctest::Contains("unknown activation 'swish2'"), tandem::ValueError);
    CHECK_THROWS_WITH_AS(tl::Activation("nope"), doctest::Contains("unknown activation 'nope'"), tandem::ValueError);
    CHECK_THROWS_WITH_AS(model.compile({.optimizer = "sgd", .loss = "hinge2"}), doctest::Contains("unknown loss 'hinge2'"), tandem::ValueError);
    CHECK_THROWS_WITH_AS(model.compile({.optimizer = "sgd", .loss = "mse", .metrics = {"auc9"}}),
                         doctest::Contains("unknown metric 'auc9'"), tandem::ValueError);
    CHECK_THROWS_WITH_AS(tl::Dense(3, "", {.kernel_initializer = "bogus"})(tandem::Input({2})),
                         doctest::Contains("unknown initializer 'bogus'"), tandem::ValueError);
  }
  SUBCASE("bad arguments") {
    CHECK_THROWS_WITH_AS(tl::Dense(0), doctest::Contains("units must be positive, got 0"), tandem::ValueError);
    CHECK_THROWS_WITH_AS(tl::Dropout(1.0), doctest::Contains("rate must be in [0, 1), got 1"), tandem::ValueError);
    CHECK_THROWS_WITH_AS(model.fit(Tensor({6, 4}, tandem::DType::F32), y2, {.batch_size = 0, .verbose = 0}),
                         doctest::Contains("batch_size must be >= 1, got 0"), tandem::ValueError);
  }
  SUBCASE("a validation_split that leaves no training rows") {
    CHECK_THROWS_WITH_AS(model.fit(Tensor({6, 4}, tandem::DType::F32), y2, {.validation_split = 0.999, .verbose = 0}),
                         doctest::Contains("validation_split 0.999000 of 6 rows leaves 0 rows for training and 6 for validation"),
                         tandem::ValueError);
  }
  SUBCASE("a negative dimension and an index outside the shape") {
    const std::vector<float> values(4, 0.f);
    CHECK_THROWS_WITH_AS(Tensor::from({-1, 4}, std::span<const float>(values)),
                         doctest::Contains("dimensions must be non-negative, got -1 at axis 0"), tandem::ShapeError);
    const tandem::Shape s{2, 3};
    CHECK(s[-1] == 3);
    CHECK_THROWS_WITH_AS(s[2], "Shape (2, 3): index 2 is outside [-2, 2) for rank 2", tandem::ShapeError);
    CHECK_THROWS_WITH_AS(s[-3], "Shape (2, 3): index -3 is outside [-2, 2) for rank 2", tandem::ShapeError);
  }
  SUBCASE("fit before compile") {
    tandem::Sequential fresh({tl::InputLayer({4}), tl::Dense(2)}, "fresh");
    CHECK_THROWS_WITH_AS(fresh.fit(Tensor({6, 4}, tandem::DType::F32), y2, {.verbose = 0}),
                         doctest::Contains("call compile() before fit()"), tandem::ValueError);
  }
}

TEST_CASE("model: predict shows a progress bar only when asked") {
  tandem::Sequential model({tl::InputLayer({3}), tl::Dense(2)});
  const Tensor x({10, 3}, tandem::DType::F32);
  std::streambuf* saved = std::cout.rdbuf();
  std::ostringstream captured;
  std::cout.rdbuf(captured.rdbuf());
  model.predict(x, {.batch_size = 4});
  const std::string silent = captured.str();
  model.predict(x, {.batch_size = 4, .verbose = 1});
  std::cout.rdbuf(saved);
  CHECK(silent.empty());
  CHECK(captured.str().find("3/3") != std::string::npos);
}

TEST_CASE("model: evaluate(x, y) on arrays equals evaluate on the Dataset") {
  tandem::set_random_seed(3);
  const auto data = random_classification(40, 5, 3, 11);
  tandem::Sequential model({tl::InputLayer({5}), tl::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  const tandem::Logs on_arrays = model.evaluate(data.x(), data.y(), {.batch_size = 16, .verbose = 0});
  const tandem::Logs on_dataset = model.evaluate(data, {.batch_size = 16, .verbose = 0});
  CHECK(on_arrays == on_dataset);
  CHECK(on_arrays.at("loss") > 0);
}

// Under the test runner standard output is a pipe or a file: verbose 1 must print one line per
// epoch there, without the carriage returns that redraw a terminal's bar.
TEST_CASE("model: verbose 1 prints one line per epoch when standard output is not a terminal") {
  if (isatty(fileno(stdout))) {
    MESSAGE("skipped: standard output is a terminal here");
    return;
  }
  const auto data = random_classification(64, 5, 3, 12);
  tandem::Sequential model({tl::InputLayer({5}), tl::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  std::streambuf* saved = std::cout.rdbuf();
  std::ostringstream captured;
  std::cout.rdbuf(captured.rdbuf());
  model.fit(data, {.epochs = 3, .batch_size = 8, .verbose = 1});
  std::cout.rdbuf(saved);
  const std::string text = captured.str();
  CHECK(text.find('\r') == std::string::npos);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 6);  // "Epoch k/3" and its one line, per epoch
  for (int e = 0; e < 3; ++e) {
    CHECK(lines[2 * e] == "Epoch " + std::to_string(e + 1) + "/3");
    CHECK(lines[2 * e + 1].starts_with("8/8 - "));
    CHECK(lines[2 * e + 1].find("loss: ") != std::string::npos);
  }
}

// Memory per device, against what the layers and the optimizer hold: float32 weights of 4 bytes,
// Adam's iteration count (int64), learning rate (float32) and two moments per weight.
TEST_CASE("model: memory per device gives each device's weights, optimizer state and arena, in summary() too") {
  namespace dist = tandem::distribute;
  constexpr std::size_t kUp = (8 * 16 + 16) * 4, kDown = (16 * 3 + 3) * 4;  // Dense(16) on 8 features, Dense(3)
  const std::vector<float> xs(64 * 8, 0.5f), ys(64 * 3, 0.25f);
  const Tensor x = Tensor::from({64, 8}, std::span<const float>(xs)), y = Tensor::from({64, 3}, std::span<const float>(ys));
  auto train = [&](dist::StrategyPtr strategy) {
    auto in = tandem::Input({8});
    auto model = std::make_unique<tandem::Model>(in, tl::Dense(3, "", {.name = "down"})(tl::Dense(16, "relu", {.name = "up"})(in)));
    model->compile({.optimizer = tandem::optimizers::Adam(1e-3), .loss = tandem::losses::MeanSquaredError(), .strategy = strategy});
    CHECK(model->memory_per_device().empty());  // no step compiled yet
    model->fit(x, y, {.epochs = 1, .batch_size = 32, .verbose = 0});
    return model;
  };
  auto adam = [](std::size_t weights) { return 8 + 4 + 2 * weights; };
  {
    auto model = train(dist::Default());
    const auto memory = model->memory_per_device();
    REQUIRE(memory.size() == 1);
    CHECK(memory[0].device == "cpu:0");
    CHECK(memory[0].weights == kUp + kDown);
    CHECK(memory[0].optimizer_state == adam(kUp + kDown));
    CHECK(memory[0].arena == model->planned_arena_bytes());
    CHECK(memory[0].arena > 0);
    CHECK(memory[0].total() == memory[0].weights + memory[0].optimizer_state + memory[0].arena);
    const std::string text = model->summary_string();
    INFO(text);
    CHECK(text.find("Memory per device (the training step of 32 rows)") != std::string::npos);
    CHECK(text.find("│ cpu:0 ") != std::string::npos);
  }
  {  // Mirrored: every replica holds everything. The step counter and learning rate are the
     // optimizer's on each device too.
    auto model = train(dist::Mirrored({"cpu:0", "cpu:1"}));
    const auto memory = model->memory_per_device();
    REQUIRE(memory.size() == 2);
    for (const auto& m : memory) {
      CHECK(m.weights == kUp + kDown);
      CHECK(m.optimizer_state == adam(kUp + kDown));
    }
  }
  {  // ModelSplit by placement: each device holds its layer's weights and their slots.
    auto model = train(dist::ModelSplit({"cpu:0", "cpu:1"}, {.placement = {{"up", "cpu:0"}, {"down", "cpu:1"}}}));
    const auto memory = model->memory_per_device();
    REQUIRE(memory.size() == 2);
    CHECK(memory[0].weights == kUp);
    CHECK(memory[1].weights == kDown);
    CHECK(memory[0].optimizer_state == adam(kUp));  // each device counts steps and keeps the rate
    CHECK(memory[1].optimizer_state == adam(kDown));
  }
  {  // Megatron's layouts over two devices: each holds half of each split weight, all of down's bias.
    auto model = train(dist::ModelSplit(dist::DeviceMesh{{2}, {"model"}, {"cpu:0", "cpu:1"}},
                                        {{"up/kernel", {"", "model"}}, {"up/bias", {"model"}}, {"down/kernel", {"model", ""}}}));
    const auto memory = model->memory_per_device();
    REQUIRE(memory.size() == 2);
    for (const auto& m : memory) CHECK(m.weights == kUp / 2 + 16 * 3 * 4 / 2 + 3 * 4);
  }
}
