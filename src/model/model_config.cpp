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
#include "model/recorded_calls.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::detail {

namespace {

using config::ConfigReader;
using Node = Symbol::Node;

std::string who(const Layer& l) { return l.class_name() + " \"" + l.name() + "\""; }

Json shape_json(const Shape& s) {
  Json dims = Json::array();
  for (int64_t d : s.dims()) dims.push_back(d < 0 ? Json(nullptr) : Json(d));
  return dims;
}

Json input_config(const Symbol& input) {
  Json c = layers::input_layer_config(input.shape().without_batch(), input.dtype());
  c["name"] = input.node()->input_name;
  return c;
}

// ---- writing ----

// The classes Keras builds when it makes them, so their entries have no build_config.
const std::set<std::string> kBuiltAtConstruction = {"MaxPooling2D", "AveragePooling2D", "Dropout", "Activation",
                                                    "GlobalAveragePooling2D", "Reshape", "MaxPooling1D", "AveragePooling1D",
                                                    "GlobalAveragePooling1D", "GlobalMaxPooling1D", "GlobalMaxPooling2D"};
// The classes whose call takes a mask: Keras records {"mask": null} with each call of one on an
// input without a mask (Layer.__call__ fills the argument in).
const std::set<std::string> kCallTakesMask = {"GlobalAveragePooling1D", "LSTM", "GRU", "SimpleRNN", "Bidirectional"};
// The classes whose call has a `training` argument that Keras records as false with each call.
const std::set<std::string> kCallRecordsTraining = {"LSTM", "GRU", "SimpleRNN"};

// One layer's entry: {"class_name", "config"}, and in an archive Keras 3's serialised-object keys.
// `inputs` are the shapes of the layer's first call, for the archive's build_config.
Json layer_entry(const std::string& class_name, Json config, const std::vector<Shape>& inputs, ConfigForm form) {
  for (const char* key : kCallArguments) config.erase(key);
  if (form == ConfigForm::hdf5) return {{"class_name", class_name}, {"config", config}};
  Json entry{{"module", "keras.layers"}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}};
  if (layers::is_custom_layer_class(class_name)) {  // as Keras writes a class registered under its default package
    entry["module"] = nullptr;
    entry["registered_name"] = "Custom>" + class_name;
  }
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
  list.push_back(layer_entry("InputLayer", input_config(m.inputs[0]), {}, form));
  std::set<const Layer*> seen;
  for (const auto& call : m.calls) {
    const Layer& layer = *call->layer;
    if (!seen.insert(&layer).second)
      throw ValueError("Sequential \"" + m.name + "\": calls " + who(layer) +
                       " more than once; a saved Sequential is a list of distinct layers (share layers in a functional model)");
    list.push_back(layer_entry(layer.class_name(), parse_object(layer.config_json(), who(layer)), input_shapes(*call), form));
  }
  const DType input_float = m.inputs[0].dtype() == DType::F64 ? DType::F64 : DType::F32;
  Json config{{"name", m.name}, {"trainable", m.trainable},
              {"dtype", config::dtype_policy_json(config::saved_policy_name(DTypePolicy(m.dtype_policy), input_float))}};
  config["layers"] = list;
  config["build_input_shape"] = shape_json(m.inputs[0].shape());
  return model_entry("Sequential", config, shape_json(m.inputs[0].shape()), form);
}

Json functional_config(const ModelGraph& m, ConfigForm form) {
  std::map<std::string, std::string> names;
  for (const Symbol& in : m.inputs)
    if (!names.try_emplace(in.node()->input_name, "the model's input").second)
      throw ValueError("Model \"" + m.name + "\": two inputs are named \"" + in.node()->input_name + "\"; a saved functional model " +
                       "records its connections by name, so the names must be unique");
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
    return n->layer ? Json::array({n->layer->name(), node_index.at(n->call_node()), n->index}) : Json::array({n->input_name, 0, 0});
  };
  // Keras records a layer's float outputs in its policy's compute dtype (bfloat16 under
  // mixed_bfloat16); Tandem's are float32 until its casting pass exists, but the config says what
  // Keras's would.
  auto tensor_dtype = [](const Symbol& s) {
    const Node* n = s.node().get();
    const bool low = n->layer && (n->layer->dtype_policy().compute_dtype() == DType::BF16 || n->layer->dtype_policy().compute_dtype() == DType::F16);
    return std::string(dtype_name(low && s.dtype() == DType::F32 ? n->layer->dtype_policy().compute_dtype() : s.dtype()));
  };
  auto tensor = [&](const Symbol& s) {
    Json config{{"shape", shape_json(s.shape())}, {"dtype", tensor_dtype(s)}};
    config["keras_history"] = history(s);
    return Json{{"class_name", "__keras_tensor__"}, {"config", config}};
  };

  Json list = Json::array();
  for (const Symbol& in : m.inputs) {
    Json input_entry = layer_entry("InputLayer", input_config(in), {}, form);
    input_entry["name"] = in.node()->input_name;
    input_entry["inbound_nodes"] = Json::array();
    list.push_back(input_entry);
  }
  for (const auto& layer : m.layers) {
    const Json config = parse_object(layer->config_json(), who(*layer));
    Json kwargs = Json::object();
    for (const char* key : kCallArguments)
      if (config.contains(key)) kwargs[key] = config.at(key);
    if (kCallTakesMask.count(layer->class_name())) kwargs["mask"] = nullptr;
    if (kCallRecordsTraining.count(layer->class_name())) kwargs["training"] = false;
    Json nodes = Json::array();
    const CallKeywordInputs keyword = layer->keyword_inputs();
    for (const Node* n : nodes_of[layer.get()]) {
      // The inputs after the positional ones go under the layer's keyword, as one list
      // (Keras: LSTM()(x, initial_state=[h, c])).
      const std::size_t positional =
          keyword.positional >= 0 ? std::min(n->inputs.size(), static_cast<std::size_t>(keyword.positional)) : n->inputs.size();
      // One input is passed as itself, several as one list (Keras: Dense()(x), Add()([a, b])),
      // except attention's, which takes query, value (and key) as separate arguments.
      Json args = Json::array();
      if (positional == 1 || layer->class_name() == "MultiHeadAttention") {
        for (std::size_t i = 0; i < positional; ++i) args.push_back(tensor(n->inputs[i]));
      } else {
        Json group = Json::array();
        for (std::size_t i = 0; i < positional; ++i) group.push_back(tensor(n->inputs[i]));
        args.push_back(group);
      }
      Json call_kwargs = kwargs;
      if (positional < n->inputs.size()) {
        Json list = Json::array();
        for (std::size_t i = positional; i < n->inputs.size(); ++i) list.push_back(tensor(n->inputs[i]));
        // Attention's mask is one tensor (Keras: mha(q, v, k, attention_mask=m)), not a list.
        call_kwargs[keyword.keyword] = layer->class_name() == "MultiHeadAttention" ? list[0] : list;
      }
      nodes.push_back({{"args", args}, {"kwargs", call_kwargs}});
    }
    const auto& calls = nodes_of[layer.get()];
    Json entry = layer_entry(layer->class_name(), config, calls.empty() ? std::vector<Shape>{} : input_shapes(*calls[0]), form);
    entry["name"] = layer->name();
    entry["inbound_nodes"] = nodes;
    list.push_back(entry);
  }
  Json config{{"name", m.name}, {"trainable", m.trainable}};
  config["layers"] = list;
  // One input or output: Keras writes it as the connection itself, several as a list of them.
  auto endpoints = [&](const std::vector<Symbol>& ss) {
    if (ss.size() == 1) return history(ss[0]);
    Json list = Json::array();
    for (const Symbol& s : ss) list.push_back(history(s));
    return list;
  };
  config["input_layers"] = endpoints(m.inputs);
  config["output_layers"] = endpoints(m.outputs);
  return model_entry("Functional", config, nullptr, form);
}

// ---- reading ----

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

std::unique_ptr<Model> functional_from_config(const Json& config, const std::string& name) {
  const Json& list = member(config, "layers", "Functional config");
  if (!list.is_array()) throw ValueError("Functional config: \"layers\" must be a list");

  struct Pending {
    std::shared_ptr<Layer> layer;
    std::string name, where;
    int node;
    std::vector<Ref> inputs;
  };
  std::map<std::pair<std::string, int>, std::vector<Symbol>> made;  // (layer name, node index) -> its outputs
  std::map<std::string, int> node_counts;             // every entry's name -> its number of calls
  std::set<std::string> input_layers;
  std::set<std::string> mask_ops;  // entries of Keras ops that computed masks
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i].is_object() && list[i].contains("class_name") && list[i].at("class_name").is_string() &&
        is_mask_op(list[i], list[i].at("class_name").get<std::string>())) {
      const Json config = named_config(list[i], "Functional config: layers[" + std::to_string(i) + "]");
      if (config.contains("name") && config.at("name").is_string()) mask_ops.insert(config.at("name").get<std::string>());
    }
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
    if (is_mask_op(list[i], cls)) {  // nothing to make: the layers compute their masks themselves
      mask_ops.insert(entry_name);
      continue;
    }
    if (cls == "InputLayer") {
      const ConfigReader reader(cls, layer_config);
      made[{entry_name, 0}] = {Input(layers::input_layer_shape(reader), layers::input_layer_dtype(reader), entry_name)};
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
      std::vector<Ref> refs = node_refs(nodes[n], at);
      add_keyword_refs(*layer, nodes[n], refs, at, mask_ops);
      pending.push_back({layer, entry_name, at, static_cast<int>(n), std::move(refs)});
    }
  }

  // The symbol a connection names: output `tensor` of a call that was made.
  auto output_of = [&](const Ref& r, const std::string& where) -> const Symbol& {
    const std::vector<Symbol>& outs = made.at({r.layer, r.node});
    if (r.tensor >= static_cast<int>(outs.size())) {
      const std::shared_ptr<Layer>& l = outs[0].node()->layer;
      throw ValueError(where + ": " + r.str() + " refers to output " + std::to_string(r.tensor) + " of call " + std::to_string(r.node) + " of " +
                       (l ? l->class_name() + " \"" + r.layer + "\"" : "input \"" + r.layer + "\"") + ", which has " +
                       std::to_string(outs.size()) + (outs.size() == 1 ? " output" : " outputs"));
    }
    return outs[static_cast<std::size_t>(r.tensor)];
  };
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
        const Symbol& s = output_of(r, it->where);
        if (r.shape && *r.shape != s.shape())
          throw ShapeError(it->where + ": the input " + r.str() + " was saved with shape " + r.shape->str() + ", but rebuilt with shape " +
                           s.shape().str());
        xs.push_back(s);
      }
      try {
        made[{it->name, it->node}] = it->layer->outputs(xs);  // builds the layer on its first call: its weights' sizes are checked
      } catch (...) {
        rethrow_with(it->where + ": ");
      }
      it = pending.erase(it);
      progress = true;
    }
    if (progress) continue;
    const Pending& stuck = pending.front();
    for (const Ref& r : stuck.inputs) {
      if (mask_ops.count(r.layer))
        throw ValueError(stuck.where + ": takes the output of \"" + r.layer + "\", a Keras op that the config records as a mask's " +
                         "computation; Tandem computes masks inside the layers and reads such ops only as masks");
      const auto count = node_counts.find(r.layer);
      if (count == node_counts.end())
        throw ValueError(stuck.where + ": refers to a layer \"" + r.layer + "\" that the config does not list");
      if (r.node < 0 || r.node >= count->second)
        throw ValueError(stuck.where + ": refers to call " + std::to_string(r.node) + " of layer \"" + r.layer + "\", which has " +
                         std::to_string(count->second) + " calls");
    }
    throw ValueError(stuck.where + ": the layer calls depend on each other in a cycle");
  }

  std::vector<Symbol> ins, outs;
  for (const Ref& in : endpoints(config, "input_layers")) {
    if (!input_layers.count(in.layer))
      throw ValueError("Functional config: input_layers names \"" + in.layer + "\", which is not an InputLayer of the config");
    ins.push_back(output_of(in, "Functional config: input_layers"));
  }
  if (ins.size() != input_layers.size())
    throw ValueError("Functional config: input_layers names " + std::to_string(ins.size()) + " inputs, the config has " +
                     std::to_string(input_layers.size()) + " InputLayers");
  for (const Ref& out : endpoints(config, "output_layers")) {
    if (!made.count({out.layer, out.node})) throw ValueError("Functional config: output_layers names " + out.str() + ", which no layer call makes");
    outs.push_back(output_of(out, "Functional config: output_layers"));
  }
  return std::make_unique<Model>(ins, outs, name);
}

}  // namespace

Json model_config(const ModelGraph& model, ConfigForm form) {
  if (model.inputs.empty() || model.outputs.empty()) throw ValueError("Model \"" + model.name + "\": the model is not built");
  return model.class_name == "Sequential" ? sequential_config(model, form) : functional_config(model, form);
}

std::unique_ptr<Model> model_from_config(const Json& json) {
  const std::string cls = string_member(json, "class_name", "model_config");
  const Json& config = member(json, "config", "model_config");
  if (!config.is_object()) throw ValueError("model_config: \"config\" must be a JSON object");
  const std::string name = config.contains("name") ? string_member(config, "name", "model_config") : std::string();
  std::unique_ptr<Model> model;
  if (cls == "Sequential") model = sequential_from_config(config, name);
  else if (cls == "Functional" || cls == "Model") model = functional_from_config(config, name);
  else throw ValueError("model_config: unknown model class \"" + cls + "\"; expected Sequential or Functional");
  if (const auto t = config.find("trainable"); t != config.end()) {
    if (!t->is_boolean()) throw ValueError("model_config: \"trainable\" must be true or false, got " + t->dump());
    if (!t->get<bool>()) model->set_trainable(false);  // each layer's own "trainable" was read with it
  }
  return model;
}

}  // namespace tandem::detail
