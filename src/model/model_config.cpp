// Model configs in Keras's shape: Sequential models list their layers in order after an InputLayer;
// functional ones list every layer with its calls ("inbound_nodes", each naming the layer call that
// made each input by [layer name, node index, tensor index]), as Keras 3 writes them.
#include "model/model_config.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "config/config_reader.h"
#include "layers/config.h"
#include "layers/input_layer.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::detail {

namespace {

using config::ConfigReader;
using Node = Symbol::Node;

std::string who(const Layer& l) { return l.class_name() + " \"" + l.name() + "\""; }

std::string shorten(const std::string& text) { return text.size() <= 80 ? text : text.substr(0, 77) + "..."; }

Json shape_json(const Shape& s) {
  Json dims = Json::array();
  for (int64_t d : s.dims()) dims.push_back(d < 0 ? Json(nullptr) : Json(d));
  return dims;
}

Json parse_object(const std::string& text, const std::string& what) {
  Json c;
  try {
    c = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(what + ": config_json() returned text that is not JSON: " + e.what());
  }
  if (!c.is_object()) throw ValueError(what + ": config_json() must return a JSON object, got " + shorten(c.dump()));
  return c;
}

Json input_config(const Symbol& input) {
  Json c = layers::input_layer_config(input.shape().without_batch(), input.dtype());
  c["name"] = input.node()->input_name;
  return c;
}

// ---- writing ----

// Keras's config of a layer argument that its call takes instead of its constructor.
constexpr const char* kCallArguments[] = {"use_causal_mask"};
// The classes Keras builds when it makes them, so their entries have no build_config.
const std::set<std::string> kBuiltAtConstruction = {"MaxPooling2D", "AveragePooling2D", "Dropout", "Activation",
                                                    "GlobalAveragePooling2D", "Reshape"};

// One layer's entry: {"class_name", "config"}, and in an archive Keras 3's serialised-object keys.
// `inputs` are the shapes of the layer's first call, for the archive's build_config.
Json layer_entry(const std::string& class_name, Json config, const std::vector<Shape>& inputs, ConfigForm form) {
  for (const char* key : kCallArguments) config.erase(key);
  if (form == ConfigForm::hdf5) return {{"class_name", class_name}, {"config", config}};
  Json entry{{"module", "keras.layers"}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}};
  if (class_name == "InputLayer" || inputs.empty() || kBuiltAtConstruction.count(class_name)) return entry;
  if (class_name == "MultiHeadAttention") {  // Keras builds it from named shapes
    Json shapes{{"query_shape", shape_json(inputs[0])}, {"value_shape", shape_json(inputs[1])}};
    if (inputs.size() > 2) shapes["key_shape"] = shape_json(inputs[2]);
    entry["build_config"] = {{"shapes_dict", shapes}};
  } else if (inputs.size() == 1) {
    entry["build_config"] = {{"input_shape", shape_json(inputs[0])}};
  } else {
    Json list = Json::array();
    for (const Shape& in : inputs) list.push_back(shape_json(in));
    entry["build_config"] = {{"input_shape", list}};
  }
  return entry;
}

std::vector<Shape> input_shapes(const Node& call) {
  std::vector<Shape> out;
  for (const Symbol& s : call.inputs) out.push_back(s.shape());
  return out;
}

// The model's own wrapper: Keras 3 records how to rebuild it as an object of a module.
Json model_entry(const char* class_name, Json config, const Json& input_shape, ConfigForm form) {
  if (form == ConfigForm::hdf5) return {{"class_name", class_name}, {"config", config}};
  const bool functional = std::string(class_name) == "Functional";
  return {{"module", functional ? "keras.src.models.functional" : "keras"},
          {"class_name", class_name},
          {"config", config},
          {"registered_name", functional ? Json("Functional") : Json(nullptr)},
          {"build_config", {{"input_shape", input_shape}}}};
}

Json sequential_config(const ModelGraph& m, ConfigForm form) {
  Json list = Json::array();
  list.push_back(layer_entry("InputLayer", input_config(m.input), {}, form));
  std::set<const Layer*> seen;
  for (const auto& call : m.calls) {
    const Layer& layer = *call->layer;
    if (!seen.insert(&layer).second)
      throw ValueError("Sequential \"" + m.name + "\": calls " + who(layer) +
                       " more than once; a saved Sequential is a list of distinct layers (share layers in a functional model)");
    list.push_back(layer_entry(layer.class_name(), parse_object(layer.config_json(), who(layer)), input_shapes(*call), form));
  }
  Json config{{"name", m.name}, {"trainable", true}, {"dtype", config::dtype_policy_json()}};
  config["layers"] = list;
  config["build_input_shape"] = shape_json(m.input.shape());
  return model_entry("Sequential", config, shape_json(m.input.shape()), form);
}

Json functional_config(const ModelGraph& m, ConfigForm form) {
  const std::string& input_name = m.input.node()->input_name;
  std::map<std::string, std::string> names{{input_name, "the model's input"}};
  for (const auto& layer : m.layers)
    if (auto [it, fresh] = names.try_emplace(layer->name(), who(*layer)); !fresh)
      throw ValueError("Model \"" + m.name + "\": " + who(*layer) + " and " + it->second + " have the same name; a saved " +
                       "functional model records its connections by layer name, so the names must be unique");

  // A layer's n-th call (in the model's call order) is its node n.
  std::map<const Node*, int> node_index;
  std::map<const Layer*, std::vector<const Node*>> nodes_of;
  for (const auto& call : m.calls) {
    auto& nodes = nodes_of[call->layer.get()];
    node_index[call.get()] = static_cast<int>(nodes.size());
    nodes.push_back(call.get());
  }
  auto history = [&](const Symbol& s) {
    const Node* n = s.node().get();
    return n->layer ? Json::array({n->layer->name(), node_index.at(n), 0}) : Json::array({n->input_name, 0, 0});
  };
  auto tensor = [&](const Symbol& s) {
    Json config{{"shape", shape_json(s.shape())}, {"dtype", dtype_name(s.dtype())}};
    config["keras_history"] = history(s);
    return Json{{"class_name", "__keras_tensor__"}, {"config", config}};
  };

  Json list = Json::array();
  Json input_entry = layer_entry("InputLayer", input_config(m.input), {}, form);
  input_entry["name"] = input_name;
  input_entry["inbound_nodes"] = Json::array();
  list.push_back(input_entry);
  for (const auto& layer : m.layers) {
    const Json config = parse_object(layer->config_json(), who(*layer));
    Json kwargs = Json::object();
    for (const char* key : kCallArguments)
      if (config.contains(key)) kwargs[key] = config.at(key);
    Json nodes = Json::array();
    for (const Node* n : nodes_of[layer.get()]) {
      // One input is passed as itself, several as one list (Keras: Dense()(x), Add()([a, b])),
      // except attention's, which takes query, value (and key) as separate arguments.
      Json args = Json::array();
      if (n->inputs.size() == 1 || layer->class_name() == "MultiHeadAttention") {
        for (const Symbol& s : n->inputs) args.push_back(tensor(s));
      } else {
        Json group = Json::array();
        for (const Symbol& s : n->inputs) group.push_back(tensor(s));
        args.push_back(group);
      }
      nodes.push_back({{"args", args}, {"kwargs", kwargs}});
    }
    const auto& calls = nodes_of[layer.get()];
    Json entry = layer_entry(layer->class_name(), config, calls.empty() ? std::vector<Shape>{} : input_shapes(*calls[0]), form);
    entry["name"] = layer->name();
    entry["inbound_nodes"] = nodes;
    list.push_back(entry);
  }
  Json config{{"name", m.name}, {"trainable", true}};
  config["layers"] = list;
  // One input and one output: Keras writes each as the connection itself, not a list of them.
  config["input_layers"] = history(m.input);
  config["output_layers"] = history(m.output);
  return model_entry("Functional", config, nullptr, form);
}

// ---- reading ----

const Json& member(const Json& object, const char* key, const std::string& where) {
  if (!object.is_object()) throw ValueError(where + ": expected a JSON object, got " + shorten(object.dump()));
  if (!object.contains(key)) throw ValueError(where + ": the key \"" + key + "\" is missing");
  return object.at(key);
}

std::string string_member(const Json& object, const char* key, const std::string& where) {
  const Json& v = member(object, key, where);
  if (!v.is_string()) throw ValueError(where + ": \"" + key + "\" must be a string, got " + shorten(v.dump()));
  return v.get<std::string>();
}

// A layer entry's config, with the entry's name filled in when the config has none.
Json named_config(const Json& entry, const std::string& where) {
  Json config = member(entry, "config", where);
  if (!config.is_object()) throw ValueError(where + ": \"config\" must be a JSON object, got " + shorten(config.dump()));
  if (!config.contains("name") && entry.contains("name")) config["name"] = entry.at("name");
  return config;
}

std::unique_ptr<Model> sequential_from_config(const Json& config, const std::string& name) {
  const Json& list = member(config, "layers", "Sequential config");
  if (!list.is_array()) throw ValueError("Sequential config: \"layers\" must be a list");
  std::vector<LayerRef> refs;
  std::optional<Shape> shape;
  DType dtype = DType::F32;
  std::string input_name;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "Sequential config: layers[" + std::to_string(i) + "]";
    const std::string cls = string_member(list[i], "class_name", where);
    const Json layer_config = named_config(list[i], where);
    if (cls == "InputLayer") {
      if (i != 0) throw ValueError(where + ": an InputLayer must come first");
      const ConfigReader reader(cls, layer_config);
      shape = layers::input_layer_shape(reader);
      dtype = layers::input_layer_dtype(reader);
      input_name = reader.name();
      continue;
    }
    try {
      refs.emplace_back(layers::layer_from_config(cls, layer_config));
    } catch (...) {
      rethrow_with(where + ": ");
    }
  }
  if (!shape && config.contains("build_input_shape") && !config.at("build_input_shape").is_null()) {
    const ConfigReader reader("Sequential", Json{{"batch_shape", config.at("build_input_shape")}});
    shape = layers::input_layer_shape(reader);
  }
  if (!shape) throw ValueError("Sequential config: the input shape is missing (no InputLayer and no build_input_shape)");
  if (refs.empty()) throw ValueError("Sequential config: the model has no layers");
  auto model = std::make_unique<Sequential>(std::move(refs), name);
  model->build(*shape, dtype, input_name);
  return model;
}

// One input of a recorded call: [layer name, node index, tensor index], and the shape it had.
struct Ref {
  std::string layer;
  int node = 0;
  std::optional<Shape> shape;
  std::string str() const { return "[\"" + layer + "\", " + std::to_string(node) + ", 0]"; }
};

Ref history_ref(const Json& h, const std::string& where) {
  if (!h.is_array() || h.size() < 3 || !h[0].is_string() || !h[1].is_number_integer() || !h[2].is_number_integer())
    throw ValueError(where + ": expected a connection [layer name, node index, tensor index], got " + shorten(h.dump()));
  if (h[2].get<int64_t>() != 0)
    throw ValueError(where + ": " + shorten(h.dump()) + " refers to output " + std::to_string(h[2].get<int64_t>()) +
                     " of a layer call; Tandem layers have one output");
  return {h[0].get<std::string>(), h[1].get<int>(), std::nullopt};
}

Ref tensor_ref(const Json& t, const std::string& where) {
  const Json& config = member(t, "config", where);
  Ref r = history_ref(member(config, "keras_history", where), where);
  if (config.contains("shape") && config.at("shape").is_array()) {
    std::vector<int64_t> dims;
    for (const Json& d : config.at("shape")) dims.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
    r.shape = Shape(dims);
  }
  return r;
}

// The inputs of one call: Keras 3's {"args": [tensor | [tensor, ...], ...], "kwargs": {}} or Keras 2's
// [[name, node, tensor, {kwargs}], ...].
std::vector<Ref> node_refs(const Json& node, const std::string& where) {
  std::vector<Ref> refs;
  if (node.is_array()) {
    for (const Json& h : node) refs.push_back(history_ref(h, where));
  } else {
    const Json& args = member(node, "args", where);
    if (!args.is_array()) throw ValueError(where + ": \"args\" must be a list");
    for (const Json& a : args) {
      if (a.is_array()) {
        for (const Json& t : a) refs.push_back(tensor_ref(t, where));
      } else if (a.is_object() && a.contains("config") && a.at("config").is_object() && a.at("config").contains("keras_history")) {
        refs.push_back(tensor_ref(a, where));
      } else {
        throw ValueError(where + ": unsupported call argument " + shorten(a.dump()) + " (Tandem layers take only tensors)");
      }
    }
  }
  if (refs.empty()) throw ValueError(where + ": a call without inputs");
  return refs;
}

// A layer's config with the call arguments of its recorded calls (Keras 3's "kwargs") moved in:
// Tandem's layers take them at construction, so every call must pass the same values.
Json with_call_arguments(Json config, const Json& nodes, const std::string& where) {
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (!nodes[n].is_object() || !nodes[n].contains("kwargs")) continue;
    const Json& kwargs = nodes[n].at("kwargs");
    const std::string at = where + ", inbound_nodes[" + std::to_string(n) + "]";
    if (!kwargs.is_object()) throw ValueError(at + ": \"kwargs\" must be a JSON object, got " + shorten(kwargs.dump()));
    for (const auto& [key, value] : kwargs.items()) {
      const bool known = std::any_of(std::begin(kCallArguments), std::end(kCallArguments), [&](const char* k) { return key == k; });
      if (!known)
        throw ValueError(at + ": the call argument \"" + key + "\" (value " + shorten(value.dump()) +
                         ") is not supported; Tandem's layers take only their inputs and use_causal_mask when called");
      if (config.contains(key) && config.at(key) != value)
        throw ValueError(at + ": the call argument \"" + key + "\" is " + shorten(value.dump()) + " here but " + shorten(config.at(key).dump()) +
                         " in another call; Tandem's layers take it once, at construction");
      config[key] = value;
    }
  }
  return config;
}

Ref single_endpoint(const Json& config, const char* key) {
  const Json& v = member(config, key, "Functional config");
  const std::string where = std::string("Functional config: ") + key;
  // [[name, 0, 0]] or, for one endpoint, [name, 0, 0].
  if (v.is_array() && !v.empty() && v[0].is_string()) return history_ref(v, where);
  if (!v.is_array() || v.size() != 1)
    throw ValueError(where + ": Tandem models have exactly one input and one output, got " + shorten(v.dump()));
  return history_ref(v[0], where);
}

std::unique_ptr<Model> functional_from_config(const Json& config, const std::string& name) {
  const Json& list = member(config, "layers", "Functional config");
  if (!list.is_array()) throw ValueError("Functional config: \"layers\" must be a list");

  struct Pending {
    std::shared_ptr<Layer> layer;
    std::string name, where;
    int node;
    std::vector<Ref> inputs;
  };
  std::map<std::pair<std::string, int>, Symbol> made;  // (layer name, node index) -> its output
  std::map<std::string, int> node_counts;             // every entry's name -> its number of calls
  std::set<std::string> input_layers;
  std::vector<Pending> pending;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string where = "Functional config: layers[" + std::to_string(i) + "]";
    const std::string cls = string_member(list[i], "class_name", where);
    const Json layer_config = named_config(list[i], where);
    const std::string entry_name = layer_config.contains("name") && layer_config.at("name").is_string()
                                       ? layer_config.at("name").get<std::string>()
                                       : std::string();
    if (entry_name.empty()) throw ValueError(where + ": the layer has no name (a functional config connects layers by name)");
    where += " (" + cls + " \"" + entry_name + "\")";
    if (node_counts.count(entry_name)) throw ValueError(where + ": another layer has the same name");
    if (cls == "InputLayer") {
      const ConfigReader reader(cls, layer_config);
      made[{entry_name, 0}] = Input(layers::input_layer_shape(reader), layers::input_layer_dtype(reader), entry_name);
      node_counts[entry_name] = 1;
      input_layers.insert(entry_name);
      continue;
    }
    const Json empty = Json::array();
    const Json& nodes = list[i].contains("inbound_nodes") ? list[i].at("inbound_nodes") : empty;
    if (!nodes.is_array()) throw ValueError(where + ": \"inbound_nodes\" must be a list");
    const Json full_config = with_call_arguments(layer_config, nodes, where);
    std::shared_ptr<Layer> layer;
    try {
      layer = layers::layer_from_config(cls, full_config);
    } catch (...) {
      rethrow_with(where + ": ");
    }
    node_counts[entry_name] = static_cast<int>(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const std::string at = where + ", inbound_nodes[" + std::to_string(n) + "]";
      pending.push_back({layer, entry_name, at, static_cast<int>(n), node_refs(nodes[n], at)});
    }
  }

  // Calls run once all their inputs exist; the recorded order does not matter.
  while (!pending.empty()) {
    bool progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      const bool ready = std::all_of(it->inputs.begin(), it->inputs.end(), [&](const Ref& r) { return made.count({r.layer, r.node}); });
      if (!ready) {
        ++it;
        continue;
      }
      std::vector<Symbol> xs;
      for (const Ref& r : it->inputs) {
        const Symbol& s = made.at({r.layer, r.node});
        if (r.shape && *r.shape != s.shape())
          throw ShapeError(it->where + ": the input " + r.str() + " was saved with shape " + r.shape->str() + ", but rebuilt with shape " +
                           s.shape().str());
        xs.push_back(s);
      }
      made[{it->name, it->node}] = (*it->layer)(xs);
      it = pending.erase(it);
      progress = true;
    }
    if (progress) continue;
    const Pending& stuck = pending.front();
    for (const Ref& r : stuck.inputs) {
      const auto count = node_counts.find(r.layer);
      if (count == node_counts.end())
        throw ValueError(stuck.where + ": refers to a layer \"" + r.layer + "\" that the config does not list");
      if (r.node < 0 || r.node >= count->second)
        throw ValueError(stuck.where + ": refers to call " + std::to_string(r.node) + " of layer \"" + r.layer + "\", which has " +
                         std::to_string(count->second) + " calls");
    }
    throw ValueError(stuck.where + ": the layer calls depend on each other in a cycle");
  }

  const Ref in = single_endpoint(config, "input_layers"), out = single_endpoint(config, "output_layers");
  if (!input_layers.count(in.layer))
    throw ValueError("Functional config: input_layers names \"" + in.layer + "\", which is not an InputLayer of the config");
  if (input_layers.size() != 1)
    throw ValueError("Functional config: Tandem models have one input, the config has " + std::to_string(input_layers.size()));
  const auto output = made.find({out.layer, out.node});
  if (output == made.end()) throw ValueError("Functional config: output_layers names " + out.str() + ", which no layer call makes");
  return std::make_unique<Model>(made.at({in.layer, 0}), output->second, name);
}

// ---- compile settings ----

struct ClassName {
  const char* name;  // Tandem's
  const char* cls;   // Keras's
};
constexpr ClassName kOptimizers[] = {{"sgd", "SGD"}, {"adam", "Adam"}, {"adamw", "AdamW"}, {"rmsprop", "RMSprop"}};
constexpr ClassName kLosses[] = {{"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
                                 {"categorical_crossentropy", "CategoricalCrossentropy"},
                                 {"binary_crossentropy", "BinaryCrossentropy"},
                                 {"mean_squared_error", "MeanSquaredError"},
                                 {"mean_absolute_error", "MeanAbsoluteError"}};

template <std::size_t N>
std::string class_of(const ClassName (&table)[N], const std::string& name) {
  for (const ClassName& c : table)
    if (name == c.name) return c.cls;
  return name;  // a custom class: saved under its own name, which load_model will not know
}

template <std::size_t N>
std::string class_list(const ClassName (&table)[N]) {
  std::string s;
  for (const ClassName& c : table) s += (s.empty() ? "" : ", ") + std::string(c.cls);
  return s;
}

OptimizerPtr optimizer_of_class(const std::string& cls, const ConfigReader& c);
LossPtr loss_of_class(const std::string& cls, const ConfigReader& c);

OptimizerPtr optimizer_from(const Json& v) {
  if (v.is_string()) return optimizers::get(v.get<std::string>());
  const std::string cls = string_member(v, "class_name", "training_config: optimizer_config");
  const Json empty = Json::object();
  const ConfigReader c(cls, v.contains("config") ? v.at("config") : empty);
  OptimizerPtr optimizer = optimizer_of_class(cls, c);
  c.check_all_read();
  return optimizer;
}

// An optimizer's learning_rate: a number, or a schedule as Keras serialises it.
LearningRate learning_rate_from(const ConfigReader& c, double fallback) {
  const Json* v = c.value("learning_rate");
  if (!v || !v->is_object()) return c.number("learning_rate", fallback);
  const std::string cls = string_member(*v, "class_name", "training_config: learning_rate");
  const Json empty = Json::object();
  const ConfigReader s(cls, v->contains("config") ? v->at("config") : empty);
  s.value("name");
  SchedulePtr schedule;
  if (cls == "ExponentialDecay") {
    schedule = schedules::ExponentialDecay(s.number("initial_learning_rate"), s.integer("decay_steps"), s.number("decay_rate"),
                                           s.boolean("staircase", false));
  } else if (cls == "CosineDecay") {
    const Json* target = s.value("warmup_target");
    schedule = schedules::CosineDecay(s.number("initial_learning_rate"), s.integer("decay_steps"),
                                      {.alpha = s.number("alpha", 0.0),
                                       .warmup_target = target && !target->is_null() ? std::optional<double>(s.number("warmup_target")) : std::nullopt,
                                       .warmup_steps = s.integer("warmup_steps", 0)});
  } else if (cls == "PiecewiseConstantDecay") {
    const Json* values = s.value("values");
    if (!values || !values->is_array()) s.fail("values", "a list of numbers");
    std::vector<double> rates;
    for (const Json& r : *values) {
      if (!r.is_number()) s.fail("values", "a list of numbers");
      rates.push_back(r.get<double>());
    }
    schedule = schedules::PiecewiseConstantDecay(s.integers("boundaries"), rates);
  } else {
    throw ValueError("training_config: unknown learning-rate schedule class \"" + cls +
                     "\"; expected ExponentialDecay, CosineDecay or PiecewiseConstantDecay");
  }
  s.check_all_read();
  return schedule;
}

// The optimizer of Keras class `cls`, from the keys Keras 3 writes for it.
OptimizerPtr optimizer_of_class(const std::string& cls, const ConfigReader& c) {
  c.value("name");
  c.expect_null({"loss_scale_factor", "gradient_accumulation_steps", "ema_overwrite_frequency"});
  GradientClipping clipping;
  for (auto [key, field] : {std::pair{"clipnorm", &clipping.clipnorm}, {"global_clipnorm", &clipping.global_clipnorm}, {"clipvalue", &clipping.clipvalue}})
    if (const Json* v = c.value(key); v && !v->is_null()) *field = c.number(key);
  c.expect("use_ema", false);
  c.number("ema_momentum", 0.99);  // used only with use_ema
  if (cls != "AdamW") c.expect_null({"weight_decay"});
  if (cls == "SGD") {
    const optimizers::SGDOptions d;
    return optimizers::SGD(learning_rate_from(c, 0.01), {c.number("momentum", d.momentum), c.boolean("nesterov", d.nesterov), clipping});
  }
  if (cls == "Adam") {
    c.expect("amsgrad", false);
    const optimizers::AdamOptions d;
    return optimizers::Adam(learning_rate_from(c, 0.001),
                            {c.number("beta_1", d.beta_1), c.number("beta_2", d.beta_2), c.number("epsilon", d.epsilon), clipping});
  }
  if (cls == "AdamW") {
    c.expect("amsgrad", false);
    const optimizers::AdamWOptions d;
    return optimizers::AdamW(learning_rate_from(c, 0.001), {c.number("weight_decay", d.weight_decay), c.number("beta_1", d.beta_1),
                                                                c.number("beta_2", d.beta_2), c.number("epsilon", d.epsilon), clipping});
  }
  if (cls == "RMSprop") {
    c.expect("centered", false);
    const optimizers::RMSpropOptions d;
    return optimizers::RMSprop(learning_rate_from(c, 0.001),
                               {c.number("rho", d.rho), c.number("momentum", d.momentum), c.number("epsilon", d.epsilon), clipping});
  }
  throw ValueError("training_config: unknown optimizer class \"" + cls + "\"; expected one of " + class_list(kOptimizers));
}

LossPtr loss_from(const Json& v) {
  if (v.is_string()) return losses::get(v.get<std::string>());
  const std::string cls = string_member(v, "class_name", "training_config: loss");
  const Json empty = Json::object();
  const ConfigReader c(cls, v.contains("config") ? v.at("config") : empty);
  LossPtr loss = loss_of_class(cls, c);
  c.check_all_read();
  return loss;
}

// The loss of Keras class `cls`, from the keys Keras 3 writes for it.
LossPtr loss_of_class(const std::string& cls, const ConfigReader& c) {
  c.value("name");
  c.expect("reduction", "sum_over_batch_size");
  c.expect_null({"ignore_class"});
  c.expect("label_smoothing", 0.0);
  c.expect("axis", -1);
  const losses::CrossentropyOptions o{.from_logits = c.boolean("from_logits", false)};
  if (cls == "SparseCategoricalCrossentropy") return losses::SparseCategoricalCrossentropy(o);
  if (cls == "CategoricalCrossentropy") return losses::CategoricalCrossentropy(o);
  if (cls == "BinaryCrossentropy") return losses::BinaryCrossentropy(o);
  if (cls == "MeanSquaredError") return losses::MeanSquaredError();
  if (cls == "MeanAbsoluteError") return losses::MeanAbsoluteError();
  throw ValueError("training_config: unknown loss class \"" + cls + "\"; expected one of " + class_list(kLosses));
}

}  // namespace

void rethrow_with(const std::string& prefix) {
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(prefix + "malformed config: " + e.what());
  }
}

Json model_config(const ModelGraph& model, ConfigForm form) {
  if (!model.input.node() || !model.output.node()) throw ValueError("Model \"" + model.name + "\": the model is not built");
  return model.class_name == "Sequential" ? sequential_config(model, form) : functional_config(model, form);
}

std::unique_ptr<Model> model_from_config(const Json& json) {
  const std::string cls = string_member(json, "class_name", "model_config");
  const Json& config = member(json, "config", "model_config");
  if (!config.is_object()) throw ValueError("model_config: \"config\" must be a JSON object");
  const std::string name = config.contains("name") ? string_member(config, "name", "model_config") : std::string();
  if (cls == "Sequential") return sequential_from_config(config, name);
  if (cls == "Functional" || cls == "Model") return functional_from_config(config, name);
  throw ValueError("model_config: unknown model class \"" + cls + "\"; expected Sequential or Functional");
}

Json compile_config(const CompileSettings& s, ConfigForm form) {
  auto object = [&](const char* module, const std::string& cls, const Json& config) {
    if (form == ConfigForm::hdf5) return Json{{"class_name", cls}, {"config", config}};
    return Json{{"module", module}, {"class_name", cls}, {"config", config}, {"registered_name", nullptr}};
  };
  const Json optimizer = object("keras.optimizers", class_of(kOptimizers, s.optimizer->name()),
                                parse_object(s.optimizer->config_json(), "optimizer \"" + s.optimizer->name() + "\""));
  const Json loss = object("keras.losses", class_of(kLosses, s.loss->name()), parse_object(s.loss->config_json(), "loss \"" + s.loss->name() + "\""));
  if (form == ConfigForm::hdf5)
    return {{"loss", loss}, {"metrics", s.metrics}, {"loss_weights", nullptr}, {"weighted_metrics", nullptr}, {"optimizer_config", optimizer}};
  return {{"optimizer", optimizer},   {"loss", loss},        {"loss_weights", nullptr},   {"metrics", s.metrics},
          {"weighted_metrics", nullptr}, {"run_eagerly", false}, {"steps_per_execution", 1}, {"jit_compile", true}};
}

CompileSettings compile_from_config(const Json& config) {
  CompileSettings s;
  // Keras's legacy `.h5` calls it optimizer_config, a `.keras` archive's compile_config optimizer.
  s.optimizer = optimizer_from(member(config, config.contains("optimizer") ? "optimizer" : "optimizer_config", "training_config"));
  s.loss = loss_from(member(config, "loss", "training_config"));
  if (config.contains("metrics") && !config.at("metrics").is_null()) {
    const Json& metrics = config.at("metrics");
    if (!metrics.is_array()) throw ValueError("training_config: \"metrics\" must be a list of names");
    for (const Json& m : metrics) {
      if (!m.is_string()) throw ValueError("training_config: \"metrics\" must be a list of names, got " + shorten(metrics.dump()));
      s.metrics.push_back(m.get<std::string>());
    }
  }
  return s;
}

}  // namespace tandem::detail
