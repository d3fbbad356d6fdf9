// Model::save and load_model: round trips of every kind of model (bitwise predictions and state),
// training that continues exactly after loading (in this process and in a separate program that has
// no model-building code), the file's layout and configs, and errors for bad files.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <tandem/tandem.h>

#include "io/hdf5_file.h"
#include "layer_base/initializers.h"
#include "layers/config.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
using Json = nlohmann::json;
using tandem::DType;
using tandem::Tensor;

namespace {

const ScratchRoot scratch_root("tandem_model_save");
fs::path scratch(const std::string& name) { return scratch_root.fresh(name); }

Tensor uniform(tandem::Shape shape, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(shape.num_elements()));
  for (float& x : v) x = dist(gen);
  return Tensor::from(shape, std::span<const float>(v));
}

Tensor integers(tandem::Shape shape, int32_t below, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<int32_t> v(static_cast<std::size_t>(shape.num_elements()));
  for (int32_t& x : v) x = static_cast<int32_t>(gen() % static_cast<uint64_t>(below));
  return Tensor::from(shape, std::span<const int32_t>(v));
}

bool same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

// Every weight, then every optimizer variable (iteration, learning rate, slots).
std::vector<Tensor> state_of(const tandem::Model& m) {
  std::vector<Tensor> out = m.get_weights();
  if (m.optimizer())
    for (const auto& v : m.optimizer()->variables()) out.push_back(v->value().clone());
  return out;
}

std::vector<std::string> layer_names(const tandem::Model& m) {
  std::vector<std::string> out;
  for (const auto& l : m.layers()) out.push_back(l->class_name() + ":" + l->name());
  return out;
}

std::string attribute(const fs::path& file, const char* name) {
  const auto value = tandem::io::H5File::open(file.string()).read_string_attribute("/", name);
  REQUIRE(value.has_value());
  return *value;
}

// Saves, loads, and checks that the loaded model is the same model: layers, weights, optimizer
// state, training state and predictions on x, all bitwise.
std::unique_ptr<tandem::Model> round_trip(tandem::Model& model, const Tensor& x, const fs::path& file) {
  model.save(file.string());
  auto loaded = tandem::load_model(file.string());
  REQUIRE(loaded);
  CHECK(loaded->name() == model.name());
  CHECK(layer_names(*loaded) == layer_names(model));
  CHECK(same(state_of(*loaded), state_of(model)));
  CHECK(same(loaded->predict(x), model.predict(x)));
  // The architecture's part of the summary: the memory table below it belongs to a compiled
  // training step, which the loaded model has not run yet.
  auto architecture = [](tandem::Model& m) {
    const std::string text = m.summary_string();
    return text.substr(0, text.find("\nMemory per device"));
  };
  CHECK(architecture(*loaded) == architecture(model));
  CHECK(model.summary_string().find("Memory per device") != std::string::npos);
  return loaded;
}

// Copies a model file, applying `edit` to its root attributes and leaving out the objects whose
// paths are in `drop`: the hand edits the error tests make.
void rewrite(const fs::path& from, const fs::path& to, const std::function<void(std::map<std::string, std::string>&)>& edit,
             const std::set<std::string>& drop = {}) {
  const tandem::io::H5File in = tandem::io::H5File::open(from.string());
  tandem::io::H5File out = tandem::io::H5File::create(to.string());
  std::map<std::string, std::string> attrs;
  for (const char* name : {"format", "format_version", "backend", "model_config", "training_config", "training_state"})
    if (auto v = in.read_string_attribute("/", name)) attrs[name] = *v;
  edit(attrs);
  for (const auto& [name, value] : attrs) out.write_string_attribute("/", name, value);
  std::function<void(const std::string&)> copy = [&](const std::string& path) {
    if (drop.count(path)) return;
    if (in.is_dataset(path)) {
      out.write_dataset(path, in.read_dataset(path));
      return;
    }
    out.create_group(path);
    if (auto name = in.read_string_attribute(path, "name")) out.write_string_attribute(path, "name", *name);
    for (const std::string& child : in.children(path)) copy(path + "/" + child);
  };
  copy("/model_weights");
  out.close();
}

// The message of the error load_model throws for `file`. A failed load changes nothing: no model
// comes back and the global random state is as it was.
std::string load_error(const fs::path& file) {
  const tandem::RandomState before = tandem::random_state();
  std::string message;
  try {
    tandem::load_model(file.string());
    FAIL("load_model accepted " << file);
  } catch (const tandem::Error& e) {
    message = e.what();
  }
  const tandem::RandomState after = tandem::random_state();
  CHECK(after.seed == before.seed);
  CHECK(after.drawn == before.drawn);
  return message;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

tandem::Sequential make_mlp() {
  return tandem::Sequential({tl::InputLayer({12}), tl::Dense(16, "relu", {.name = "hidden"}),
                             tl::Dense(8, "tanh", {.use_bias = false, .kernel_initializer = "he_normal"}), tl::Dropout(0.2),
                             tl::Dense(4, "softmax", {.bias_initializer = "ones"})},
                            "mlp");
}

}  // namespace

TEST_CASE("model save: MLP round trip is bitwise, with the file laid out as documented") {
  const fs::path dir = scratch("mlp");
  tandem::set_random_seed(11);
  tandem::Sequential model = make_mlp();
  model.compile({.optimizer = tandem::optimizers::Adam(3e-3, {.beta_1 = 0.8}), .loss = "sparse_categorical_crossentropy",
                 .metrics = {"accuracy"}});
  const Tensor x = uniform({40, 12}, 1), y = integers({40}, 4, 2);
  model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0});
  const auto loaded = round_trip(model, x, dir / "mlp.h5");
  CHECK(dynamic_cast<tandem::Sequential*>(loaded.get()) != nullptr);
  CHECK(loaded->optimizer()->name() == "adam");
  CHECK(loaded->optimizer()->iterations() == 10);

  // The architecture, in Keras's shape.
  const Json config = Json::parse(attribute(dir / "mlp.h5", "model_config"));
  CHECK(config["class_name"] == "Sequential");
  CHECK(config["config"]["name"] == "mlp");
  const Json& layers = config["config"]["layers"];
  REQUIRE(layers.size() == 5);
  CHECK(layers[0]["class_name"] == "InputLayer");
  CHECK(layers[0]["config"]["batch_shape"] == Json::parse("[null, 12]"));
  CHECK(layers[0]["config"]["dtype"] == "float32");
  CHECK(layers[1]["class_name"] == "Dense");
  const Json& dense = layers[1]["config"];
  CHECK(dense["name"] == "hidden");
  CHECK(dense["units"] == 16);
  CHECK(dense["activation"] == "relu");
  CHECK(dense["use_bias"] == true);
  CHECK(dense["kernel_initializer"] == Json::parse(R"({"module": "keras.initializers", "class_name": "GlorotUniform",
                                                        "config": {"seed": null, "input_axes": null, "output_axes": null},
                                                        "registered_name": null})"));
  CHECK(dense["bias_initializer"]["config"] == Json::object());  // Keras's Zeros takes no seed
  CHECK(dense["bias_initializer"]["class_name"] == "Zeros");
  CHECK(layers[2]["config"]["kernel_initializer"]["class_name"] == "HeNormal");
  CHECK(layers[3]["class_name"] == "Dropout");
  CHECK(layers[3]["config"]["rate"] == 0.2);
  CHECK(layers[4]["config"]["bias_initializer"]["class_name"] == "Ones");
  CHECK(config["config"]["build_input_shape"] == Json::parse("[null, 12]"));

  // The compile settings.
  const Json training = Json::parse(attribute(dir / "mlp.h5", "training_config"));
  CHECK(training["optimizer_config"]["class_name"] == "Adam");
  CHECK(training["optimizer_config"]["config"]["beta_1"] == 0.8);
  CHECK(training["optimizer_config"]["config"]["learning_rate"] == double(float(3e-3)));
  CHECK(training["loss"]["class_name"] == "SparseCategoricalCrossentropy");
  CHECK(training["loss"]["config"]["from_logits"] == false);
  CHECK(training["metrics"] == Json::parse(R"(["accuracy"])"));

  // The training state.
  const Json state = Json::parse(attribute(dir / "mlp.h5", "training_state"));
  CHECK(state["epoch"] == 2);
  CHECK(state["iterations"] == 10);
  CHECK(state["random"]["seed"] == 11);
  const tandem::TrainingState read = tandem::load_training_state((dir / "mlp.h5").string());
  CHECK(read.epoch == 2);
  CHECK(read.batch == 0);
  CHECK(read.iterations == 10);
  CHECK(read.learning_rate == doctest::Approx(3e-3));
  CHECK(read.seed == 11);

  // The weights: the Keras 3 `.weights.h5` tree under /model_weights.
  const tandem::io::H5File f = tandem::io::H5File::open((dir / "mlp.h5").string());
  CHECK(attribute(dir / "mlp.h5", "format") == "tandem.model");
  CHECK(f.children("/") == std::vector<std::string>{"model_weights"});
  CHECK(f.children("model_weights") == std::vector<std::string>{"layers", "optimizer", "vars"});
  CHECK(f.children("model_weights/layers") == std::vector<std::string>{"dense", "dense_1", "dense_2", "dropout"});
  CHECK(f.dataset_info("model_weights/layers/dense/vars/0").dims == std::vector<int64_t>{12, 16});
  CHECK(f.children("model_weights/layers/dense_1/vars").size() == 1);  // no bias
  CHECK(f.children("model_weights/optimizer/vars").size() == 2 + 2 * 5);
  CHECK(f.read_string_attribute("model_weights/layers/dense/vars", "name") == "hidden");
}

// The optimizers added after Adam: each saved under its Keras class name with its Keras config keys,
// its state in Keras's order, and training continues bitwise after loading.
TEST_CASE("model save: Adagrad, Lion and Nadam round trip with Keras's class names and config keys, and training continues bitwise") {
  struct Case {
    const char* file;
    std::function<tandem::OptimizerPtr()> make;
    const char* keras_class;
    Json keys;                 // the config keys beyond the base ones, as Keras's get_config writes them
    std::size_t vars;          // in the file: iteration, learning_rate, then the slots of 5 weights
  };
  const Case cases[] = {
      {"adagrad.h5", [] { return tandem::optimizers::Adagrad(0.05, {.initial_accumulator_value = 0.2, .epsilon = 1e-6}); }, "Adagrad",
       {{"initial_accumulator_value", 0.2}, {"epsilon", 1e-6}}, 2 + 5},
      {"lion.keras", [] { return tandem::optimizers::Lion(3e-3, {.beta_1 = 0.85, .beta_2 = 0.98, .clipping = {.clipnorm = 2.0}}); }, "Lion",
       {{"beta_1", 0.85}, {"beta_2", 0.98}, {"clipnorm", 2.0}}, 2 + 5},
      // Keras 3.10+ lists momentum and velocity weight by weight, then u_product.
      {"nadam.h5", [] { return tandem::optimizers::Nadam(2e-3, {.beta_1 = 0.8, .beta_2 = 0.99, .epsilon = 1e-6}); }, "Nadam",
       {{"beta_1", 0.8}, {"beta_2", 0.99}, {"epsilon", 1e-6}}, 2 + 2 * 5 + 1},
  };
  for (const Case& c : cases) {
    SUBCASE(c.keras_class) {
      const fs::path dir = scratch(c.keras_class);
      tandem::set_random_seed(17);
      tandem::Sequential model = make_mlp();
      model.compile({.optimizer = c.make(), .loss = "sparse_categorical_crossentropy"});
      const Tensor x = uniform({24, 12}, 5), y = integers({24}, 4, 6);
      model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0});
      const auto loaded = round_trip(model, x, dir / c.file);
      CHECK(loaded->optimizer()->name() == model.optimizer()->name());
      CHECK(loaded->optimizer()->iterations() == 6);
      CHECK(loaded->optimizer()->variables().size() == c.vars);
      const Json config = Json::parse(loaded->optimizer()->config_json());
      CHECK(config == Json::parse(model.optimizer()->config_json()));
      for (const auto& [key, value] : c.keys.items()) CHECK_MESSAGE(config[key] == value, c.keras_class, " ", key);

      if (std::string(c.file).ends_with(".h5")) {
        const Json training = Json::parse(attribute(dir / c.file, "training_config"));
        CHECK(training["optimizer_config"]["class_name"] == c.keras_class);
        const tandem::io::H5File f = tandem::io::H5File::open((dir / c.file).string());
        CHECK(f.children("model_weights/optimizer/vars").size() == c.vars);
        CHECK(f.read_string_attribute("model_weights/optimizer/vars", "name") == model.optimizer()->name());
        const auto& vars = model.optimizer()->variables();
        const std::string last = "model_weights/optimizer/vars/" + std::to_string(c.vars - 1);
        CHECK(same(f.read_dataset(last), vars.back()->value()));  // Nadam: u_product, a scalar
        CHECK(f.dataset_info("model_weights/optimizer/vars/2").dims == std::vector<int64_t>{12, 16});  // hidden kernel's first slot
      }

      model.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .initial_epoch = 2});
      const auto resumed = tandem::load_model((dir / c.file).string());
      resumed->fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .initial_epoch = 2});
      CHECK(same(state_of(*resumed), state_of(model)));
      CHECK(!same(state_of(*resumed), state_of(*loaded)));  // it did train
    }
  }
}

TEST_CASE("model save: CNN with BatchNormalization and Dropout round trip, and training continues bitwise") {
  const fs::path dir = scratch("cnn");
  tandem::set_random_seed(5);
  tandem::Sequential model({tl::InputLayer({8, 8, 1}), tl::Conv2D(4, 3, {.padding = "same", .activation = "relu"}),
                            tl::BatchNormalization({.momentum = 0.9, .epsilon = 1e-4}), tl::MaxPooling2D(2), tl::Dropout(0.25),
                            tl::ZeroPadding2D({{1, 0}, {0, 1}}), tl::AveragePooling2D(2, {.strides = 1, .padding = "same"}),
                            tl::Conv2D(6, {2, 3}, {.strides = {1, 2}, .use_bias = false}), tl::BatchNormalization({.center = false}),
                            tl::Flatten(), tl::Activation("gelu"), tl::Dense(3)});
  model.compile({.optimizer = tandem::optimizers::SGD(0.05, {.momentum = 0.9, .nesterov = true}),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  const Tensor x = uniform({24, 8, 8, 1}, 3), y = integers({24}, 3, 4);
  model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0});
  const auto loaded = round_trip(model, x, dir / "cnn.h5");

  // The same next epoch from the original and from a copy loaded after it: dropout masks, shuffles,
  // momentum and moving statistics all continue exactly (load_model restores the random state to
  // the one at the save, which the original's fit has moved on since).
  model.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .initial_epoch = 2});
  const auto resumed = tandem::load_model((dir / "cnn.h5").string());
  resumed->fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .initial_epoch = 2});
  CHECK(same(state_of(*resumed), state_of(model)));
  CHECK(resumed->optimizer()->iterations() == 9);
  CHECK(!same(state_of(*resumed), state_of(*loaded)));  // it did train
}

TEST_CASE("model save: functional model with shared layers, Add, Multiply and Concatenate") {
  const fs::path dir = scratch("functional");
  tandem::set_random_seed(21);
  const tandem::Symbol x = tandem::Input({6}, DType::F32, "features");
  const tandem::LayerRef shared = tl::Dense(6, "relu", {.name = "shared"});
  const tandem::Symbol a = shared(x);
  const tandem::Symbol b = shared(a);  // the same weights, called twice
  const tandem::Symbol c = tl::Dense(6)(x);
  const tandem::Symbol s = tl::Add()({a, b, c});
  const tandem::Symbol m = tl::Multiply()({s, x});
  const tandem::Symbol cat = tl::Concatenate({.axis = 1})({s, m});
  const tandem::Symbol r = tl::Flatten()(tl::Reshape({2, 6})(cat));
  const tandem::Symbol out = tl::Dense(2)(tl::Activation("tanh")(r));
  tandem::Model model(x, out, "branchy");
  model.compile({.optimizer = tandem::optimizers::RMSprop(0.01, {.rho = 0.8, .momentum = 0.5}), .loss = "mse", .metrics = {"mae"}});
  const Tensor xs = uniform({32, 6}, 7), ys = uniform({32, 2}, 8);
  model.fit(xs, ys, {.epochs = 2, .batch_size = 8, .verbose = 0});
  const auto loaded = round_trip(model, xs, dir / "functional.h5");
  CHECK(dynamic_cast<tandem::Sequential*>(loaded.get()) == nullptr);
  CHECK(loaded->layers().size() == model.layers().size());  // the shared layer is still one layer

  const Json config = Json::parse(attribute(dir / "functional.h5", "model_config"));
  CHECK(config["class_name"] == "Functional");
  CHECK(config["config"]["input_layers"] == Json::parse(R"(["features", 0, 0])"));
  for (const Json& layer : config["config"]["layers"]) {
    if (layer["name"] != "shared") continue;
    REQUIRE(layer["inbound_nodes"].size() == 2);
    const Json& second = layer["inbound_nodes"][1]["args"][0]["config"];
    CHECK(second["keras_history"] == Json::parse(R"(["shared", 0, 0])"));
    CHECK(second["shape"] == Json::parse("[null, 6]"));
  }

  model.fit(xs, ys, {.epochs = 3, .batch_size = 8, .verbose = 0, .initial_epoch = 2});
  const auto resumed = tandem::load_model((dir / "functional.h5").string());
  resumed->fit(xs, ys, {.epochs = 3, .batch_size = 8, .verbose = 0, .initial_epoch = 2});
  CHECK(same(state_of(*resumed), state_of(model)));
}

TEST_CASE("model save: Transformer block with Embedding, MultiHeadAttention and LayerNormalization") {
  const fs::path dir = scratch("transformer");
  tandem::set_random_seed(3);
  constexpr int64_t kVocab = 11, kLen = 6, kDim = 8;
  const tandem::Symbol ids = tandem::Input({kLen}, DType::I32, "tokens");
  const tandem::Symbol e = tl::Embedding(kVocab, kDim)(ids);
  const tandem::Symbol h = tl::Add()({e, tl::PositionEmbedding(kLen, {.initializer = "normal"})(e)});
  const tandem::Symbol att =
      tl::MultiHeadAttention(2, 4, {.value_dim = 3, .dropout = 0.1, .output_shape = {kDim}, .use_causal_mask = true})({h, h});
  const tandem::Symbol h1 = tl::LayerNormalization()(tl::Add()({h, att}));
  const tandem::Symbol ff = tl::Dense(kDim)(tl::Dense(16, "gelu")(h1));
  const tandem::Symbol h2 = tl::LayerNormalization({.epsilon = 1e-5, .center = false})(tl::Add()({h1, ff}));
  tandem::Model model(ids, tl::Dense(kVocab)(h2));
  model.compile({.optimizer = tandem::optimizers::AdamW(2e-3, {.weight_decay = 0.01}),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  const Tensor xs = integers({16, kLen}, kVocab, 9), ys = integers({16, kLen}, kVocab, 10);
  model.fit(xs, ys, {.epochs = 2, .batch_size = 4, .verbose = 0});
  const auto loaded = round_trip(model, xs, dir / "transformer.h5");
  CHECK(loaded->optimizer()->name() == "adamw");

  model.fit(xs, ys, {.epochs = 3, .batch_size = 4, .verbose = 0, .initial_epoch = 2});
  const auto resumed = tandem::load_model((dir / "transformer.h5").string());
  resumed->fit(xs, ys, {.epochs = 3, .batch_size = 4, .verbose = 0, .initial_epoch = 2});
  CHECK(same(state_of(*resumed), state_of(model)));
}

TEST_CASE("model save: training continues in a separate program exactly as in one process") {
  const fs::path dir = scratch("child");
  tandem::set_random_seed(42);
  const tandem::Symbol x = tandem::Input({10});
  const tandem::Symbol h = tl::Dropout(0.3)(tl::BatchNormalization()(tl::Dense(12, "relu")(x)));
  tandem::Model model(x, tl::Dense(3)(tl::Concatenate()({h, x})));
  model.compile({.optimizer = "adam",
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  const Tensor xs = uniform({50, 10}, 11), ys = integers({50}, 3, 12);
  model.fit(xs, ys, {.epochs = 2, .batch_size = 16, .shuffle = true, .verbose = 0});  // N steps
  model.save((dir / "model.h5").string());
  {
    tandem::io::H5File data = tandem::io::H5File::create((dir / "data.h5").string());
    data.write_dataset("x", xs);
    data.write_dataset("y", ys);
    data.close();
  }
  // M more steps here...
  model.fit(xs, ys, {.epochs = 5, .batch_size = 16, .shuffle = true, .verbose = 0, .initial_epoch = 2});

  // ...and in another process that only has the file.
  const std::string command = std::string("\"") + LOAD_MODEL_CHILD + "\" \"" + (dir / "model.h5").string() + "\" \"" +
                              (dir / "data.h5").string() + "\" 3 16 \"" + (dir / "final.weights.h5").string() + "\" \"" +
                              (dir / "final.h5").string() + "\"";
  REQUIRE(std::system(command.c_str()) == 0);

  auto check = tandem::load_model((dir / "model.h5").string());
  check->load_weights((dir / "final.weights.h5").string());
  CHECK(check->optimizer()->iterations() == model.optimizer()->iterations());
  CHECK(check->optimizer()->iterations() == 5 * 4);
  CHECK(same(state_of(*check), state_of(model)));

  const tandem::TrainingState state = tandem::load_training_state((dir / "final.h5").string());
  CHECK(state.epoch == 5);
  CHECK(state.iterations == 20);
  const auto final_model = tandem::load_model((dir / "final.h5").string());
  CHECK(same(state_of(*final_model), state_of(model)));
}

TEST_CASE("model save: every registered layer class rebuilds from its config") {
  tandem::set_random_seed(1);
  tl::register_lambda("model_save_identity", [](const std::vector<tandem::Symbol>& in) { return in[0]; });
  const std::vector<tandem::LayerRef> all = {
      tl::Dense(3, "sigmoid", {.use_bias = false, .kernel_initializer = "lecun_uniform", .name = "d"}),
      tl::Flatten(),
      tl::Reshape({-1, 2}),
      tl::Activation("log_softmax"),
      tl::ReLU(6.0, 0.1, 0.5),
      tl::LeakyReLU(0.2),
      tl::PReLU({.alpha_initializer = "ones", .shared_axes = {1, 2}}),
      tl::ELU(0.5),
      tl::Softmax(1),
      tl::Dropout(0.5),
      tl::InputLayer({4, 5}),
      tl::Embedding(7, 3, {.embeddings_initializer = "glorot_normal"}),
      tl::Embedding(7, 3, {.mask_zero = true}),
      tl::Masking(0.25),
      tl::Add(),
      tl::Multiply(),
      tl::Concatenate({.axis = -2}),
      tl::Subtract(),
      tl::Average(),
      tl::Maximum(),
      tl::Minimum(),
      tl::Dot({1, 2}, {.normalize = true}),
      tl::Lambda("model_save_identity", {.output_shape = tandem::Shape{3, 2}}),
      tl::MultiHeadAttention(3, 2, {.use_bias = false, .output_shape = {2, 3}}),
      tl::PositionEmbedding(9),
      tl::Conv2D(2, {1, 3}, {.padding = "same", .dilation_rate = 2, .bias_initializer = "normal"}),
      tl::MaxPooling2D({2, 3}, {.strides = {1, 2}}),
      tl::AveragePooling2D(3),
      tl::GlobalAveragePooling2D({.keepdims = true}),
      tl::GlobalMaxPooling2D({.keepdims = true}),
      tl::Conv1D(3, 2, {.strides = 2, .padding = "causal", .activation = "tanh", .use_bias = false}),
      tl::MaxPooling1D(3, {.strides = 1, .padding = "same"}),
      tl::AveragePooling1D(),
      tl::GlobalAveragePooling1D({.keepdims = true}),
      tl::GlobalMaxPooling1D(),
      tl::ZeroPadding2D({2, 3}),
      tl::BatchNormalization({.axis = 2, .scale = false, .moving_variance_initializer = "uniform"}),
      tl::LayerNormalization({.epsilon = 0.5, .gamma_initializer = "zeros"}),
      tl::LSTM(3, {.recurrent_activation = "tanh", .unit_forget_bias = false, .seed = 4, .return_state = true}),
      tl::GRU(2, {.reset_after = false, .dropout = 0.25, .go_backwards = true}),
      tl::SimpleRNN(4, {.activation = "relu", .recurrent_initializer = "glorot_uniform", .return_sequences = true}),
      tl::Bidirectional(tl::LSTM(2, {.return_sequences = true}), {.merge_mode = "mul"}),
      tl::RandomFlip("vertical", 3),
      tl::RandomTranslation({-0.2, 0.1}, 0.3, {.fill_mode = "constant", .fill_value = 2}),
      tl::RandomRotation(0.25, {.interpolation = "nearest"}),
      tl::RandomZoom(0.1, tl::Factor(-0.2, 0.4), {.fill_mode = "wrap", .seed = 9}),
      tl::RandomContrast({0.1, 0.6}, {.value_range = {-1, 1}}),
      tl::Conv2DTranspose(2, 3, {.strides = 2, .padding = "same", .output_padding = 1, .activation = "relu"}),
      tl::DepthwiseConv2D({3, 1}, {.depth_multiplier = 2, .use_bias = false}),
      tl::SeparableConv2D(4, 3, {.padding = "same", .depth_multiplier = 2}),
      tl::Cropping2D({{1, 2}, {0, 3}}),
      tl::SpatialDropout2D(0.25, 5),
      tl::GroupNormalization({.groups = 4, .epsilon = 0.01, .center = false}),
      tl::Rescaling(1.0 / 255, 0.5),
      tl::Normalization({.axis = {-1}, .mean = {0.5}, .variance = {2.0}}),
      tl::Resizing(8, 6, {.crop_to_aspect_ratio = true}),
      tl::UpSampling2D({2, 3}, {.interpolation = "bilinear"}),
      tl::CategoryEncoding(6, {.output_mode = "count"}),
      tl::IntegerLookup({.num_oov_indices = 2, .vocabulary = {3, 7, 11}}),
  };
  std::set<std::string> covered;
  for (const tandem::LayerRef& layer : all) {
    CAPTURE(layer->class_name());
    const auto config = tl::Json::parse(layer->config_json());
    const auto rebuilt = tl::layer_from_config(layer->class_name(), config);
    CHECK(rebuilt->class_name() == layer->class_name());
    CHECK(rebuilt->name() == layer->name());
    CHECK(rebuilt->config_json() == layer->config_json());
    covered.insert(layer->class_name());
  }
  const std::vector<std::string> registered = tl::registered_layer_classes();
  for (const std::string& c : registered) CHECK_MESSAGE(covered.count(c), c << " is registered but not rebuilt here");
  CHECK(std::set<std::string>(registered.begin(), registered.end()) == covered);
}

TEST_CASE("model save: bad files and bad configs are refused with clear errors, and nothing changes") {
  const fs::path dir = scratch("errors");
  tandem::set_random_seed(8);
  tandem::Sequential model = make_mlp();
  model.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  model.fit(uniform({8, 12}, 1), integers({8}, 4, 2), {.epochs = 1, .batch_size = 4, .verbose = 0});
  const fs::path good = dir / "good.h5";
  model.save(good.string());
  const std::string good_config = attribute(good, "model_config");

  SUBCASE("an unknown layer class in a hand-edited config") {
    rewrite(good, dir / "unknown.h5", [&](auto& attrs) {
      Json config = Json::parse(attrs["model_config"]);
      config["config"]["layers"][2]["class_name"] = "FancyDense";
      attrs["model_config"] = config.dump();
    });
    const std::string error = load_error(dir / "unknown.h5");
    CHECK(contains(error, "unknown layer class \"FancyDense\""));
    CHECK(contains(error, "layers[2]"));
    CHECK(contains(error, "Dense"));  // the classes it knows
  }
  SUBCASE("the unedited copy loads: the edits are what the other cases test") {
    rewrite(good, dir / "copy.h5", [](auto&) {});
    CHECK(same(state_of(*tandem::load_model((dir / "copy.h5").string())), state_of(model)));
  }
  SUBCASE("a config whose shapes do not fit the weights") {
    rewrite(good, dir / "shape.h5", [&](auto& attrs) {
      Json config = Json::parse(attrs["model_config"]);
      config["config"]["layers"][1]["config"]["units"] = 17;
      attrs["model_config"] = config.dump();
    });
    const std::string error = load_error(dir / "shape.h5");
    CHECK(contains(error, "expected shape (12, 17), got (12, 16)"));
    CHECK(contains(error, "Dense \"hidden\""));
  }
  SUBCASE("a bad value in a layer's config") {
    rewrite(good, dir / "value.h5", [&](auto& attrs) {
      Json config = Json::parse(attrs["model_config"]);
      config["config"]["layers"][1]["config"]["units"] = "sixteen";
      attrs["model_config"] = config.dump();
    });
    const std::string error = load_error(dir / "value.h5");
    CHECK(contains(error, "Dense \"hidden\": config key \"units\": expected an integer, got \"sixteen\""));
  }
  SUBCASE("a config that is not JSON") {
    rewrite(good, dir / "json.h5", [](auto& attrs) { attrs["model_config"] = "{\"class_name\": \"Sequential\", "; });
    CHECK(contains(load_error(dir / "json.h5"), "model_config: not valid JSON"));
  }
  SUBCASE("missing parts") {
    rewrite(good, dir / "no_weights.h5", [](auto&) {}, {"/model_weights"});
    CHECK(contains(load_error(dir / "no_weights.h5"), "/model_weights is missing"));
    rewrite(good, dir / "no_layer.h5", [](auto&) {}, {"/model_weights/layers/dense_1"});
    CHECK(contains(load_error(dir / "no_layer.h5"), "model_weights/layers/dense_1/vars: missing"));
    rewrite(good, dir / "no_state.h5", [](auto& attrs) { attrs.erase("training_state"); });
    CHECK(contains(load_error(dir / "no_state.h5"), "training_state: missing"));
    rewrite(good, dir / "no_config.h5", [](auto& attrs) { attrs.erase("model_config"); });
    CHECK(contains(load_error(dir / "no_config.h5"), "no model_config"));
  }
  SUBCASE("a functional config with a dangling connection") {
    const tandem::Symbol in = tandem::Input({3}, DType::F32, "in");
    tandem::Model functional(in, tl::Dense(2, "", {.name = "out"})(tl::Dense(4, "", {.name = "mid"})(in)));
    functional.save((dir / "functional.h5").string());
    rewrite(dir / "functional.h5", dir / "dangling.h5", [&](auto& attrs) {
      Json config = Json::parse(attrs["model_config"]);
      for (Json& layer : config["config"]["layers"])
        if (layer["name"] == "out") layer["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] = "middle";
      attrs["model_config"] = config.dump();
    });
    CHECK(contains(load_error(dir / "dangling.h5"), "refers to a layer \"middle\" that the config does not list"));
  }
  SUBCASE("a truncated file") {
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(dir / "truncated.h5", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    CHECK(contains(load_error(dir / "truncated.h5"), "truncated"));
  }
  SUBCASE("a file that is not HDF5") {
    std::ofstream(dir / "text.h5") << "{\"class_name\": \"Sequential\"}\n";
    CHECK(contains(load_error(dir / "text.h5"), "text.h5 is not a model file: load_model reads Keras archives (zip) and HDF5 files, and this one is a "
                                                "text file (it begins \"{\"class_name\": \"Sequential\"}\")"));
    CHECK(contains(load_error(dir / "missing.h5"), "cannot open the file"));
  }
  SUBCASE("a Keras 3 .keras archive given to the weights reader, and a broken archive") {
    // An archive renamed as a weights file reaches the HDF5 reader.
    model.save((dir / "model.keras").string());
    fs::copy_file(dir / "model.keras", dir / "renamed.weights.h5");
    const std::string e = [&] {
      try {
        model.load_weights((dir / "renamed.weights.h5").string());
      } catch (const tandem::Error& error) {
        return std::string(error.what());
      }
      return std::string("(no error)");
    }();
    CHECK(contains(e, "a zip archive (a Keras 3 `.keras` file?), not an HDF5 file: load a whole model from it with tandem::load_model"));
    std::ofstream(dir / "broken.keras", std::ios::binary) << std::string("PK\x03\x04\x14\x00\x00\x00", 8) << "config.json";
    CHECK(contains(load_error(dir / "broken.keras"), "broken.keras is not a readable Keras archive: it starts as a zip archive (a `.keras` file "
                                                     "is one), but it is damaged or truncated (libzip: "));
  }
  SUBCASE("a Keras legacy whole-model .h5") {
    // What Keras's legacy model.save("m.h5") puts at the root: keras_version, backend,
    // model_config (and training_config), and the weights under /model_weights.
    {
      tandem::io::H5File f = tandem::io::H5File::create((dir / "keras_legacy.h5").string());
      f.write_string_attribute("/", "keras_version", "3.15.0");
      f.write_string_attribute("/", "backend", "jax");
      f.write_string_attribute("/", "model_config", R"({"class_name": "Sequential", "config": {"layers": []}})");
      f.create_group("model_weights");
      f.close();
    }
    // Read as Keras's (tests/test_keras_files.cpp loads real ones): this one's config is empty.
    const std::string e = load_error(dir / "keras_legacy.h5");
    CHECK(contains(e, "keras_legacy.h5: model_config: Sequential config: the input shape is missing"));
    CHECK_FALSE(contains(e, "training_state"));
  }
  SUBCASE("a weights file instead of a model file") {
    model.save_weights((dir / "w.weights.h5").string());
    CHECK(contains(load_error(dir / "w.weights.h5"), "this is a weights file"));
  }
  CHECK(attribute(good, "model_config") == good_config);  // loading never writes
}

TEST_CASE("model save: what cannot be saved is refused before any file is written") {
  const fs::path dir = scratch("refused");
  tandem::Sequential unbuilt({tl::Dense(2)});
  CHECK_THROWS_WITH_AS(unbuilt.save((dir / "u.h5").string()), doctest::Contains("needs a built model"), tandem::ValueError);
  tandem::Sequential model = make_mlp();
  CHECK_THROWS_WITH_AS(model.save((dir / "m.weights.h5").string()), doctest::Contains("use save_weights"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(model.save((dir / "m.txt").string()), doctest::Contains("must end in `.keras`, `.h5` or `.hdf5`"), tandem::ValueError);

  const tandem::Symbol in = tandem::Input({3});
  const tandem::Symbol a = tl::Dense(3, "", {.name = "twin"})(in);
  tandem::Model twins(in, tl::Dense(3, "", {.name = "twin"})(a));
  CHECK_THROWS_WITH_AS(twins.save((dir / "t.h5").string()), doctest::Contains("have the same name"), tandem::ValueError);
  CHECK(fs::is_empty(dir));

  // An uncompiled model saves and loads uncompiled.
  model.save((dir / "plain.h5").string());
  const auto loaded = tandem::load_model((dir / "plain.h5").string());
  CHECK(!loaded->optimizer());
  CHECK(same(loaded->get_weights(), model.get_weights()));
}
