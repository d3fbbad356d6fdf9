// Freezing and transfer learning (Keras's layer.trainable): a frozen base under a new head trains
// only the head — exactly as training the head alone on the base's features does — with the base's
// weights and BatchNormalization statistics bitwise unchanged; freezing is saved, loaded and
// resumed; unfreezing fine-tunes; get_layer, Layer::output and Model::inputs build the new model.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <tandem/tandem.h>

#include "scratch_dir.h"
#include "strategy_helpers.h"

namespace tl = tandem::layers;
using tandem::Tensor;

namespace {

const ScratchRoot scratch_root("tandem_freezing");

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].shape() != b[i].shape() || std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) != 0) return false;
  return true;
}

std::vector<Tensor> weights_of(const std::vector<std::shared_ptr<tandem::Layer>>& layers) {
  std::vector<Tensor> out;
  for (const auto& l : layers)
    for (const Tensor& t : l->get_weights()) out.push_back(t);
  return out;
}

// A trained base: Dense -> BatchNormalization -> Dense("features"), then a classifier on top.
struct Base {
  std::unique_ptr<tandem::Model> model;
  std::vector<std::shared_ptr<tandem::Layer>> layers;  // the three base layers
};

Base trained_base(const tandem::Dataset& data) {
  tandem::set_random_seed(5);
  auto x = tandem::Input({8}, tandem::DType::F32, "pixels");
  auto hidden = tl::Dense(16, "relu", {.name = "hidden"});
  auto norm = tl::BatchNormalization({.name = "norm"});
  auto features = tl::Dense(6, "tanh", {.name = "features"});
  auto y = tl::Dense(4, "", {.name = "old_head"})(features(norm(hidden(x))));
  Base b{std::make_unique<tandem::Model>(x, y, "base"), {hidden.ptr(), norm.ptr(), features.ptr()}};
  b.model->compile({.optimizer = tandem::optimizers::Adam(1e-2),
                    .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  b.model->fit(data, {.epochs = 2, .batch_size = 16, .verbose = 0});
  return b;
}

// The base frozen, a new head on its "features" output: Keras's feature extraction.
std::unique_ptr<tandem::Model> with_new_head(const Base& base, tandem::distribute::StrategyPtr strategy = {}) {
  for (const auto& l : base.layers) l->set_trainable(false);
  auto head = tl::Dense(3, "", {.name = "new_head"});
  auto m = std::make_unique<tandem::Model>(base.model->inputs(), std::vector{head(base.model->get_layer("features")->output())},
                                           "transfer");
  m->compile({.optimizer = tandem::optimizers::SGD(0.1),
              .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
              .strategy = std::move(strategy)});
  return m;
}

tandem::Dataset three_classes() {
  tandem::Dataset d = blobs(64, 8, 3);
  return d;
}

}  // namespace

TEST_CASE("a frozen base under a new head trains only the head, as training the head on the base's features does") {
  const Base base = trained_base(blobs(64, 8, 4));
  const std::vector<Tensor> base_before = weights_of(base.layers);  // BatchNormalization's statistics included
  auto model = with_new_head(base);
  CHECK(model->layers().size() == 4);
  CHECK(model->trainable_weights().size() == 2);  // the new head's kernel and bias

  // The features the frozen base computes (BatchNormalization in inference mode), and a head alone
  // with the same initial weights trained on them: the independent result.
  const tandem::Dataset data = three_classes();
  tandem::Model features_only(base.model->inputs(), {base.model->get_layer("features")->output()});
  const Tensor features = features_only.predict(data.x(), {.batch_size = 64});
  auto head_alone = tl::Dense(3, "", {.name = "head_alone"});
  auto f = tandem::Input({6});
  tandem::Model alone(f, head_alone(f));
  alone.set_weights(model->get_layer("new_head")->get_weights());
  alone.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});

  model->fit(data, {.epochs = 3, .batch_size = 16, .shuffle = false, .verbose = 0});
  alone.fit(tandem::Dataset(features, data.y()), {.epochs = 3, .batch_size = 16, .shuffle = false, .verbose = 0});

  CHECK(same(weights_of(base.layers), base_before));  // weights and moving statistics bitwise unchanged
  const std::vector<Tensor> head = model->get_layer("new_head")->get_weights();
  CHECK(max_relative_difference(head, alone.get_weights()) < 1e-5);
  CHECK(max_relative_difference(head, head_alone->get_weights()) < 1e-5);
}

TEST_CASE("unfreezing fine-tunes the base: the next fit rebuilds its step and moves the base's weights") {
  const Base base = trained_base(blobs(64, 8, 4));
  auto model = with_new_head(base);
  const tandem::Dataset data = three_classes();
  model->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0});
  const std::vector<Tensor> frozen = weights_of(base.layers);
  const auto stats = base.layers[1]->get_weights();  // gamma, beta, moving_mean, moving_variance

  model->set_trainable(true);
  CHECK(model->trainable_weights().size() == 2 + 2 + 2 + 2);
  model->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0});
  const std::vector<Tensor> tuned = weights_of(base.layers);
  CHECK_FALSE(same(tuned, frozen));
  const auto stats_after = base.layers[1]->get_weights();
  CHECK_FALSE(same({stats_after[2]}, {stats[2]}));  // BatchNormalization trains again: its statistics move
}

TEST_CASE("freezing is saved and loaded with the model, in .keras and .h5 files, and training resumes frozen") {
  const Base base = trained_base(blobs(64, 8, 4));
  auto model = with_new_head(base);
  const tandem::Dataset data = three_classes();
  model->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0});
  for (const char* file : {"transfer.keras", "transfer.h5"}) {
    CAPTURE(file);
    const auto path = scratch_root.fresh(file) / file;
    model->save(path.string());
    auto loaded = tandem::load_model(path.string());
    CHECK_FALSE(loaded->get_layer("hidden")->trainable());
    CHECK_FALSE(loaded->get_layer("norm")->trainable());
    CHECK_FALSE(loaded->get_layer("features")->trainable());
    CHECK(loaded->get_layer("new_head")->trainable());
    CHECK(loaded->trainable_weights().size() == 2);
    std::vector<std::shared_ptr<tandem::Layer>> frozen{loaded->get_layer("hidden"), loaded->get_layer("norm"), loaded->get_layer("features")};
    const std::vector<Tensor> before = weights_of(frozen);
    // Resumed: both models take the same next steps (the optimizer state came with the file).
    loaded->fit(data, {.epochs = 1, .batch_size = 16, .shuffle = false, .verbose = 0});
    CHECK(same(weights_of(frozen), before));
  }
  // A whole model frozen is saved as such (Keras's model.trainable = False).
  model->set_trainable(false);
  const auto path = scratch_root.fresh("frozen_model") / "frozen.keras";
  model->save(path.string());
  auto loaded = tandem::load_model(path.string());
  CHECK_FALSE(loaded->trainable());
  CHECK(loaded->trainable_weights().empty());
}

TEST_CASE("a frozen base trains the same under Mirrored on two devices as on one") {
  const tandem::Dataset data = three_classes();
  std::vector<Tensor> one, two;
  for (int devices : {1, 2}) {
    const Base base = trained_base(blobs(64, 8, 4));
    auto model = with_new_head(base, devices == 1 ? tandem::distribute::StrategyPtr{} : tandem::distribute::Mirrored(cpus(2)));
    const std::vector<Tensor> before = weights_of(base.layers);
    model->fit(data, {.epochs = 2, .batch_size = 16, .shuffle = false, .verbose = 0});
    CHECK(same(weights_of(base.layers), before));
    (devices == 1 ? one : two) = model->get_weights();
  }
  CHECK(max_relative_difference(two, one) < 1e-5);
}

TEST_CASE("get_layer and Layer::output explain what is wrong") {
  const Base base = trained_base(blobs(32, 8, 4));
  CHECK_THROWS_WITH_AS(base.model->get_layer("nope"), doctest::Contains("no layer is named \"nope\"; its layers are: hidden, norm, features, old_head"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(base.model->get_layer(9), doctest::Contains("index 9 is out of range; the model has 4 layers"), tandem::ValueError);
  CHECK(base.model->get_layer(0)->name() == "hidden");
  auto unused = tl::Dense(2, "", {.name = "unused"});
  CHECK_THROWS_WITH_AS(unused->output(), doctest::Contains("has no output yet"), tandem::ValueError);
  auto shared = tl::Dense(2, "", {.name = "shared"});
  auto a = shared(tandem::Input({3})), b = shared(tandem::Input({3}));
  CHECK_THROWS_WITH_AS(shared->output(), doctest::Contains("was called 2 times"), tandem::ValueError);
}

TEST_CASE("a layer frozen before it is built, and the summary's parameter counts") {
  auto frozen = tl::Dense(4, "", {.name = "frozen_before_build"});
  frozen->set_trainable(false);
  tandem::Sequential model({tl::InputLayer({3}), frozen, tl::Dense(2)});
  CHECK(model.trainable_weights().size() == 2);  // the second Dense's only
  const std::string summary = model.summary_string();
  CHECK(summary.find("Trainable params: 10") != std::string::npos);
  CHECK(summary.find("Non-trainable params: 16") != std::string::npos);
}
