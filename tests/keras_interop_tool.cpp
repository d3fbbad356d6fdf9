// The Tandem half of tests/keras_interop.py. Three models that the script also builds in Keras:
//   mlp   Sequential: Flatten, Dense(64, relu), Dropout, Dense(10)               Adam
//   cnn   Sequential: Conv2D, BatchNormalization, MaxPooling2D, Conv2D, Flatten, Dense   RMSprop(momentum)
//   attn  Functional: Embedding, MultiHeadAttention, LayerNormalization, Flatten, Dense   SGD(momentum)
//   branch Functional with two branches joined by Add (Keras's layer order differs from the
//          order of first use)                                                 RMSprop(momentum)
//
//   keras_interop_tool write DIR   trains each model a few steps and writes DIR/tandem_<m>.weights.h5
//                                  and DIR/tandem_<m>.json (inputs x, predictions y, iterations, and
//                                  each trainable weight's value and optimizer slots)
//   keras_interop_tool read DIR    loads DIR/keras_<m>.weights.h5 (saved by Keras) into a fresh
//                                  compiled model and writes DIR/tandem_from_keras_<m>.json (y on the
//                                  same x, iterations and slots)
//   keras_interop_tool archives DIR M...   for each whole model M that Keras saved as
//                                  DIR/archive_<M>.keras (inputs in DIR/archive_<M>_data.json):
//                                  load_model, predict; train one batch, save
//                                  DIR/archive_<M>_from_tandem.keras, predict; train one more batch,
//                                  predict; all in DIR/archive_<M>_tandem.json
//   keras_interop_tool predict DIR M...   for each model M checked by predictions only (Dropout, or
//                                  uncompiled) that Keras saved as DIR/archive_<M>.keras and
//                                  DIR/archive_<M>.h5: load both and predict; a compiled model trains
//                                  one batch; save DIR/archive_<M>_from_tandem.keras and predict; all
//                                  in DIR/archive_<M>_tandem.json
//   keras_interop_tool multi_io DIR  the same for Keras's two-input, two-output model in
//                                  DIR/multi_io.keras (inputs and targets in DIR/multi_io_data.json):
//                                  predict, train one epoch, save DIR/multi_io_from_tandem.keras,
//                                  predict; in DIR/multi_io_tandem.json
//   keras_interop_tool adamax DIR    an MLP (4 -> 5 relu -> 3) from the weights and data in
//                                  DIR/adamax_data.json trains 3 full-batch steps with Adamax(0.01) and
//                                  saves DIR/adamax_from_tandem.weights.h5 (weights and Adamax's state)
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <tandem/tandem.h>

namespace tl = tandem::layers;
using tandem::DType;
using tandem::Shape;
using tandem::Tensor;
using json = nlohmann::json;

namespace {

struct Spec {
  std::string name;
  std::function<std::unique_ptr<tandem::Model>()> build;
  std::function<tandem::OptimizerPtr()> optimizer;
  Shape x_shape;  // per sample
  bool ids = false;  // integer token ids in [0, 20)
  int classes = 0;
};

std::vector<Spec> specs() {
  return {
      {"mlp",
       [] {
         return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
             tl::InputLayer({28, 28}), tl::Flatten(), tl::Dense(64, "relu"), tl::Dropout(0.2), tl::Dense(10)});
       },
       [] { return tandem::optimizers::Adam(1e-3); }, Shape{28, 28}, false, 10},
      {"cnn",
       [] {
         return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
             tl::InputLayer({12, 12, 1}), tl::Conv2D(8, 3, {.padding = "same", .activation = "relu"}), tl::BatchNormalization(),
             tl::MaxPooling2D(), tl::Conv2D(4, 3), tl::Flatten(), tl::Dense(5)});
       },
       [] { return tandem::optimizers::RMSprop(1e-3, {.momentum = 0.9}); }, Shape{12, 12, 1}, false, 5},
      {"attn",
       []() -> std::unique_ptr<tandem::Model> {
         auto x = tandem::Input({7}, DType::I32);
         auto e = tl::Embedding(20, 6)(x);
         auto a = tl::MultiHeadAttention(2, 3)({e, e});
         auto y = tl::Dense(4)(tl::Flatten()(tl::LayerNormalization()(a)));
         return std::make_unique<tandem::Model>(x, y);
       },
       [] { return tandem::optimizers::SGD(1e-2, {.momentum = 0.9}); }, Shape{7}, true, 4},
      {"branch",
       []() -> std::unique_ptr<tandem::Model> {
         auto x = tandem::Input({16});
         auto n = tl::LayerNormalization()(tl::Dense(32, "relu")(x));
         auto d = tl::Dense(32)(x);
         return std::make_unique<tandem::Model>(x, tl::Dense(3)(tl::Add()({d, n})));
       },
       [] { return tandem::optimizers::RMSprop(1e-3, {.momentum = 0.5}); }, Shape{16}, false, 3},
  };
}

Tensor inputs(const Spec& s, int64_t rows, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<int64_t> dims{rows};
  dims.insert(dims.end(), s.x_shape.dims().begin(), s.x_shape.dims().end());
  Tensor x(Shape(dims), s.ids ? DType::I32 : DType::F32);
  std::normal_distribution<float> normal;
  if (s.ids)
    for (int32_t& v : x.values<int32_t>()) v = static_cast<int32_t>(gen() % 20);
  else
    for (float& v : x.values<float>()) v = normal(gen);
  return x;
}

json to_json(const Tensor& t) {
  json values = json::array();
  for (int64_t i = 0; i < t.size(); ++i) values.push_back(t.item(i));
  return {{"shape", t.shape().dims()}, {"values", values}};
}

Tensor from_json(const json& j, DType dtype) {
  const Shape shape(j.at("shape").get<std::vector<int64_t>>());
  const auto values = j.at("values").get<std::vector<double>>();
  Tensor t(shape, dtype);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::I32) t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    else t.data<float>()[i] = static_cast<float>(values[i]);
  }
  return t;
}

// Iterations, and each trainable weight with its optimizer slots by name. The script matches
// weights to Keras's by value: the two list weights in different orders for branched graphs.
json optimizer_state(const tandem::Model& m) {
  const auto& vars = m.optimizer()->variables();
  const auto trainable = m.trainable_weights();
  const std::size_t n = trainable.size(), per = n ? (vars.size() - 2) / n : 0;
  json weights = json::array();
  for (std::size_t j = 0; j < n; ++j) {
    json slots = json::object();
    for (std::size_t s = 0; s < per; ++s) slots[vars[2 + j * per + s]->name()] = to_json(vars[2 + j * per + s]->value());
    weights.push_back({{"value", to_json(trainable[j]->value())}, {"slots", slots}});
  }
  return {{"iterations", m.optimizer()->iterations()}, {"weights", weights}};
}

std::unique_ptr<tandem::Model> compiled(const Spec& s) {
  auto m = s.build();
  m->compile({.optimizer = s.optimizer(), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  return m;
}

void write_json(const std::string& path, const json& j) {
  std::ofstream out(path);
  out << j.dump();
  if (!out) throw tandem::Error("cannot write " + path);
}

void write(const std::string& dir) {
  for (const Spec& s : specs()) {
    tandem::set_random_seed(1);
    auto m = compiled(s);
    Tensor labels({32}, DType::I32);
    std::mt19937_64 gen(2);
    for (int32_t& v : labels.values<int32_t>()) v = static_cast<int32_t>(gen() % static_cast<uint64_t>(s.classes));
    m->fit(inputs(s, 32, 3), labels, {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
    m->save_weights(dir + "/tandem_" + s.name + ".weights.h5");
    const Tensor x = inputs(s, 4, 4);
    json j = optimizer_state(*m);
    j["x"] = to_json(x);
    j["y"] = to_json(m->predict(x));
    write_json(dir + "/tandem_" + s.name + ".json", j);
    std::cout << "wrote tandem_" << s.name << ".weights.h5\n";
  }
}

void read(const std::string& dir) {
  for (const Spec& s : specs()) {
    tandem::set_random_seed(99);
    auto m = compiled(s);
    m->load_weights(dir + "/keras_" + s.name + ".weights.h5");
    std::ifstream in(dir + "/tandem_" + s.name + ".json");
    const Tensor x = from_json(json::parse(in).at("x"), s.ids ? DType::I32 : DType::F32);
    json j = optimizer_state(*m);
    j["y"] = to_json(m->predict(x));
    write_json(dir + "/tandem_from_keras_" + s.name + ".json", j);
    std::cout << "loaded keras_" << s.name << ".weights.h5\n";
  }
}

void archives(const std::string& dir, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const std::string base = dir + "/archive_" + name;
    std::ifstream in(base + "_data.json");
    const json data = json::parse(in);
    // A model's inputs: "x_dtype" one dtype, or a list of them for a model with several inputs
    // (then each x entry is a list of tensors too).
    const json& dtypes = data.at("x_dtype");
    auto x = [&](const char* key) {
      std::vector<Tensor> xs;
      for (std::size_t i = 0; i < (dtypes.is_array() ? dtypes.size() : 1); ++i) {
        const json& d = dtypes.is_array() ? dtypes[i] : dtypes;
        xs.push_back(from_json(dtypes.is_array() ? data.at(key)[i] : data.at(key), d == "int32" ? DType::I32 : DType::F32));
      }
      return xs;
    };
    auto labels = [&](const char* key) { return std::vector<Tensor>{from_json(data.at(key), DType::I32)}; };
    auto predict = [](tandem::Model& m, const std::vector<Tensor>& xs) { return to_json(m.predict(xs).at(0)); };
    std::unique_ptr<tandem::Model> m = tandem::load_model(base + ".keras");
    json out{{"y_loaded", predict(*m, x("x"))}, {"iterations_loaded", m->optimizer()->iterations()}};
    const tandem::FitOptions one_batch{.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0};
    m->fit(x("x_next"), labels("y_next"), one_batch);
    m->save(base + "_from_tandem.keras");
    out["y_saved"] = predict(*m, x("x"));
    out["iterations_saved"] = m->optimizer()->iterations();
    m->fit(x("x_more"), labels("y_more"), one_batch);
    out["y_more"] = predict(*m, x("x"));
    write_json(base + "_tandem.json", out);
    std::cout << "loaded archive_" << name << ".keras, saved archive_" << name << "_from_tandem.keras\n";
  }
}

void predict(const std::string& dir, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const std::string base = dir + "/archive_" + name;
    std::ifstream in(base + "_data.json");
    const json data = json::parse(in);
    // One input's tensor, or a list of them for a model with several inputs.
    auto inputs = [](const json& j) {
      std::vector<Tensor> xs;
      for (const json& t : j.is_array() ? j : json::array({j})) xs.push_back(from_json(t, DType::F32));
      return xs;
    };
    const std::vector<Tensor> x = inputs(data.at("x"));
    std::unique_ptr<tandem::Model> m = tandem::load_model(base + ".keras");
    // No .h5 for a model whose layers keep state in the archive's assets, which the legacy file lacks.
    const bool has_h5 = std::ifstream(base + ".h5").good();
    json out{{"y_loaded", to_json(m->predict(x).at(0))},
             {"y_loaded_h5", has_h5 ? to_json(tandem::load_model(base + ".h5")->predict(x).at(0)) : json(nullptr)},
             {"compiled", m->optimizer() != nullptr}};
    if (m->optimizer())
      m->fit(inputs(data.at("x_next")), {from_json(data.at("y_next"), DType::I32)}, {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
    m->save(base + "_from_tandem.keras");
    out["y_saved"] = to_json(m->predict(x).at(0));
    out["iterations_saved"] = m->optimizer() ? m->optimizer()->iterations() : 0;
    write_json(base + "_tandem.json", out);
    std::cout << "loaded archive_" << name << (has_h5 ? ".keras and .h5" : ".keras") << ", saved archive_" << name << "_from_tandem.keras\n";
  }
}

void multi_io(const std::string& dir) {
  std::ifstream in(dir + "/multi_io_data.json");
  const json data = json::parse(in);
  const std::vector<Tensor> x{from_json(data.at("img"), DType::F32), from_json(data.at("tab"), DType::F32)};
  const std::vector<Tensor> y{from_json(data.at("cls"), DType::I32), from_json(data.at("reg"), DType::F32)};
  std::unique_ptr<tandem::Model> m = tandem::load_model(dir + "/multi_io.keras");
  auto predictions = [&] {
    json out = json::array();
    for (const Tensor& p : m->predict(x)) out.push_back(to_json(p));
    return out;
  };
  json out{{"y_loaded", predictions()}, {"loss_loaded", m->evaluate(x, y, {.verbose = 0}).at("loss")}};
  m->fit(x, y, {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
  m->save(dir + "/multi_io_from_tandem.keras");
  out["y_saved"] = predictions();
  out["iterations_saved"] = m->optimizer()->iterations();
  write_json(dir + "/multi_io_tandem.json", out);
  std::cout << "loaded multi_io.keras, saved multi_io_from_tandem.keras\n";
}

}  // namespace

// "adamax": Keras's MLP and its data as tests/data/training_refs.json gives them (the script copies
// them into DIR/adamax_data.json).
void adamax(const std::string& dir) {
  std::ifstream in(dir + "/adamax_data.json");
  if (!in) throw tandem::Error("cannot read " + dir + "/adamax_data.json");
  const json d = json::parse(in);
  auto floats = [](const json& values, Shape shape) {
    std::vector<float> v;
    for (const auto& x : values) v.push_back(x.get<float>());
    return Tensor::from(std::move(shape), std::span<const float>(v));
  };
  std::vector<int32_t> y;
  for (const auto& v : d["y"]) y.push_back(v.get<int32_t>());
  auto x = tandem::Input({4});
  tandem::Model model(x, tl::Dense(3, "", {.name = "dense_1"})(tl::Dense(5, "relu", {.name = "dense"})(x)));
  const Shape shapes[] = {{4, 5}, {5}, {5, 3}, {3}};
  std::vector<Tensor> init;
  for (std::size_t i = 0; i < 4; ++i) init.push_back(floats(d["init"][i], shapes[i]));
  model.set_weights(init);
  model.compile({.optimizer = tandem::optimizers::Adamax(0.01), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  model.fit(floats(d["x"], {8, 4}), Tensor::from({8}, std::span<const int32_t>(y)), {.epochs = 3, .batch_size = 8, .shuffle = false, .verbose = 0});
  model.save_weights(dir + "/adamax_from_tandem.weights.h5");
}

// A model under mixed_float16 (compile wraps Adam in a LossScaleOptimizer) trained 6 steps from a
// scale of 2^40, so the saved state has a scale and a step count of its own; saved as a .keras.
void loss_scale(const std::string& dir) {
  tandem::mixed_precision::set_global_policy("mixed_float16");
  tandem::set_random_seed(3);
  tandem::Sequential model({tl::InputLayer({6}), tl::Dense(8, "relu"), tl::Dense(3)});
  tandem::mixed_precision::set_global_policy("float32");
  const auto scaling = tandem::optimizers::LossScaleOptimizer(tandem::optimizers::Adam(1e-3), {.initial_scale = 1099511627776.0, .dynamic_growth_steps = 3});
  model.compile({.optimizer = scaling,
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  std::vector<float> x(48 * 6);
  std::vector<int32_t> y(48);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 13) / 4.0f - 1.5f;
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int32_t>(i % 3);
  model.fit(Tensor::from({48, 6}, std::span<const float>(x)), Tensor::from({48}, std::span<const int32_t>(y)),
            {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
  const auto& state_of = dynamic_cast<const tandem::LossScaleOptimizer&>(*model.optimizer());
  json state{{"dynamic_scale", state_of.dynamic_scale()}, {"step_counter", state_of.step_counter()}, {"iterations", state_of.iterations()}};
  std::ofstream(dir + "/loss_scale_state.json") << state.dump();
  model.save(dir + "/loss_scale_from_tandem.keras");
}

int main(int argc, char** argv) {
  const std::string usage = "usage: keras_interop_tool write|read|multi_io|adamax|loss_scale DIR, or archives|predict DIR MODEL...";
  if (argc < 3) {
    std::cerr << usage << "\n";
    return 2;
  }
  try {
    const std::string command = argv[1];
    if (command == "write") write(argv[2]);
    else if (command == "read") read(argv[2]);
    else if (command == "archives") archives(argv[2], std::vector<std::string>(argv + 3, argv + argc));
    else if (command == "predict") predict(argv[2], std::vector<std::string>(argv + 3, argv + argc));
    else if (command == "multi_io") multi_io(argv[2]);
    else if (command == "adamax") adamax(argv[2]);
    else if (command == "loss_scale") loss_scale(argv[2]);
    else throw tandem::Error(usage);
  } catch (const std::exception& e) {
    std::cerr << "keras_interop_tool: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
