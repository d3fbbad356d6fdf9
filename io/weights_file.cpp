// Keras 3 `.weights.h5` writing and reading: the layout, the files (with io/checksum.h's user block),
// and a loader that validates everything before it assigns anything.
#include "io/weights_file.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "io/atomic_file.h"
#include "io/checksum.h"
#include "io/hdf5_file.h"
#include "io/keras_legacy_weights.h"
#include "tandem/errors.h"

namespace tandem::io {

namespace {

void check_extension(const std::string& path) {
  const std::string ext = ".weights.h5";
  if (path.size() < ext.size() || path.compare(path.size() - ext.size(), ext.size(), ext) != 0)
    throw ValueError("The filename must end in `.weights.h5`. Received: filepath=" + path);
}

// Keras's optimizer names are snake_case class names; Tandem's are Keras's string identifiers.
std::string keras_optimizer_name(const std::string& name) {
  if (name == "adamw") return "adam_w";
  if (name == "rmsprop") return "rm_sprop";
  return name;
}

std::vector<VariablePtr> trainable_weights(const WeightsModel& m) {
  std::vector<VariablePtr> out;
  for (const auto& l : m.layers)
    for (const auto& w : l->weights())
      if (w->trainable()) out.push_back(w);
  return out;
}

std::vector<VariablePtr> optimizer_weights(const WeightsModel& m) {
  return m.optimizer_weights.empty() ? trainable_weights(m) : m.optimizer_weights;
}

// Keras lists the weights in its layer order; the optimizer lists its variables for them as its
// Keras class does (Optimizer::keras_variables: slots weight by weight or in blocks, then state
// such as Nadam's u_product).
VarsGroup optimizer_group(const WeightsModel& m) {
  const Optimizer& opt = *m.optimizer;
  return {"optimizer", keras_optimizer_name(opt.name()), opt.keras_variables(trainable_weights(m)), "optimizer \"" + opt.name() + "\""};
}

// The optimizer's groups: its own, and for a LossScaleOptimizer its inner optimizer's again, in a
// group of its own, as Keras saves it (its own group lists the inner's variables too).
std::vector<VarsGroup> optimizer_groups(const WeightsModel& m) {
  std::vector<VarsGroup> out{optimizer_group(m)};
  if (const auto* scaling = dynamic_cast<const LossScaleOptimizer*>(m.optimizer.get())) {
    const Optimizer& inner = *scaling->inner_optimizer();
    out.push_back({"optimizer/inner_optimizer", keras_optimizer_name(inner.name()), inner.keras_variables(trainable_weights(m)),
                   "optimizer \"" + inner.name() + "\""});
  }
  return out;
}

// MultiHeadAttention's weights are named "<projection>/kernel"; Keras keeps each projection in a
// sublayer reached through the attributes query_dense, key_dense, value_dense and output_dense.
void add_attention_groups(const Layer& layer, const std::string& path, std::vector<VarsGroup>& out) {
  const std::string owner = layer.class_name() + " \"" + layer.name() + "\"";
  out.push_back({path, layer.name(), {}, owner});
  const std::pair<const char*, const char*> parts[] = {
      {"query", "query_dense"}, {"key", "key_dense"}, {"value", "value_dense"}, {"attention_output", "output_dense"}};
  const std::string prefix = layer.name() + "/";
  for (const auto& [name, attr] : parts) {
    VarsGroup g{path + "/" + attr, name, {}, owner + " " + name};
    for (const auto& w : layer.weights())
      if (w->path().rfind(prefix + name + "/", 0) == 0) g.variables.push_back(w);
    out.push_back(std::move(g));
  }
  out.push_back({path + "/_dropout_layer", "dropout", {}, owner + " dropout"});
  out.push_back({path + "/_softmax", "softmax", {}, owner + " softmax"});
}

// Keras keeps a recurrent layer's weights in its cell ("layers/lstm/cell/vars", group name
// "lstm_cell"), and Bidirectional's in its two layers' cells: "forward_layer/cell" holds the first
// half of the weights (the forward layer's), "backward_layer/cell" the second.
bool is_recurrent(const std::string& class_name) { return class_name == "LSTM" || class_name == "GRU" || class_name == "SimpleRNN"; }

void add_cell_groups(const std::string& path, const std::string& layer_name, const std::string& cell_name,
                     std::vector<VariablePtr> variables, const std::string& owner, std::vector<VarsGroup>& out) {
  out.push_back({path, layer_name, {}, owner});
  out.push_back({path + "/cell", cell_name, std::move(variables), owner + " cell"});
}

void add_bidirectional_groups(const Layer& layer, const std::string& path, std::vector<VarsGroup>& out) {
  const std::string owner = layer.class_name() + " \"" + layer.name() + "\"";
  out.push_back({path, layer.name(), {}, owner});
  const std::vector<VariablePtr> all = keras_weight_order(layer);
  const auto half = all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2);
  // The wrapped layers' names ("forward_lstm/kernel"), and their class's cell name from the shape
  // of the recurrent kernel, (units, gates·units): 4 gates for LSTM, 3 for GRU, 1 for SimpleRNN.
  auto layer_of = [](const VariablePtr& w) { return w->path().substr(0, w->path().find('/')); };
  const std::string forward = layer_of(all.front()), backward = layer_of(*half);
  const Shape& recurrent = all.at(1)->value().shape();
  const int64_t gates = recurrent[1] / recurrent[0];
  const std::string cell = gates == 4 ? "lstm_cell" : gates == 3 ? "gru_cell" : "simple_rnn_cell";
  add_cell_groups(path + "/forward_layer", forward, cell, {all.begin(), half}, owner + " forward_layer", out);
  add_cell_groups(path + "/backward_layer", backward, cell, {half, all.end()}, owner + " backward_layer", out);
}

struct Staged {
  VariablePtr variable;
  Tensor value;
};

// Checks one vars group against the model and reads its values, without assigning them.
void stage(const H5File& f, const VarsGroup& g, std::vector<Staged>& out, bool integer_first = false) {
  const std::string vars = g.vars_path();
  const std::string& file = f.path();
  const std::size_t n = g.variables.size();
  if (!f.is_group(vars)) {
    if (n == 0) return;  // a weightless layer: Keras does not require its group either
    throw Error(file + ": " + vars + ": missing; expected " + std::to_string(n) + " variables for " + g.owner);
  }
  const std::vector<std::string> names = f.children(vars);
  if (names.size() != n)
    throw Error(file + ": " + vars + ": expected " + std::to_string(n) + " variables for " + g.owner + ", got " +
                std::to_string(names.size()));
  for (std::size_t i = 0; i < n; ++i)
    out.push_back({g.variables[i], read_variable(f, vars + "/" + std::to_string(i), *g.variables[i], g.owner, integer_first && i == 0)});
}

bool holds_datasets(const H5File& f, const std::string& path, int depth = 0) {
  if (f.is_dataset(path)) return true;
  if (depth > 16 || !f.is_group(path)) return false;
  for (const std::string& c : f.children(path))
    if (holds_datasets(f, path + "/" + c, depth + 1)) return true;
  return false;
}

// Anything under `dir` that holds weights must belong to one of the model's groups.
void check_no_extra(const H5File& f, const std::string& dir, const std::set<std::string>& known, const std::string& layers) {
  if (!f.is_group(dir)) return;
  for (const std::string& c : f.children(dir)) {
    const std::string p = dir + "/" + c;
    if (known.count(p)) {
      check_no_extra(f, p, known, layers);
    } else if (!(c == "vars" && known.count(dir)) && holds_datasets(f, p)) {
      throw Error(f.path() + ": " + p + ": the file has weights the model has no layer for (the model's layers: " + layers + ")");
    }
  }
}

// `path` inside the group `root` ("" is the file's root).
std::string under(const std::string& root, const std::string& path) {
  if (root.empty()) return path;
  return path.empty() ? root : root + "/" + path;
}

std::vector<VarsGroup> rooted(std::vector<VarsGroup> groups, const std::string& root) {
  for (VarsGroup& g : groups) g.path = under(root, g.path);
  return groups;
}

}  // namespace

std::string to_snake_case(const std::string& class_name) {
  static const std::regex non_word("[^A-Za-z0-9_]+"), word_start("(.)([A-Z][a-z]+)"), lower_upper("([a-z])([A-Z])");
  std::string s = std::regex_replace(class_name, non_word, "");
  s = std::regex_replace(s, word_start, "$1_$2");
  s = std::regex_replace(s, lower_upper, "$1_$2");
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<VariablePtr> keras_weight_order(const Layer& layer) {
  std::vector<VariablePtr> out;
  for (bool trainable : {true, false})
    for (const auto& w : layer.weights())
      if (w->trainable() == trainable) out.push_back(w);
  return out;
}

std::vector<VarsGroup> weights_layout(const WeightsModel& m) {
  std::vector<VarsGroup> out{{"", m.name, {}, "model \"" + m.name + "\""}};
  std::map<std::string, int> used;  // Keras names container elements by class, then _1, _2, ...
  auto unique = [&](const std::string& base) {
    auto [it, fresh] = used.try_emplace(base, 0);
    return fresh ? base : base + "_" + std::to_string(++it->second);
  };
  if (m.functional)
    for (const std::string& input : m.input_names) out.push_back({"layers/" + unique("input_layer"), input, {}, "InputLayer \"" + input + "\""});
  for (const auto& layer : m.layers) {
    const std::string path = "layers/" + unique(to_snake_case(layer->class_name()));
    if (layer->class_name() == "MultiHeadAttention") {
      add_attention_groups(*layer, path, out);
      continue;
    }
    if (is_recurrent(layer->class_name())) {
      add_cell_groups(path, layer->name(), to_snake_case(layer->class_name()) + "_cell", keras_weight_order(*layer),
                      layer->class_name() + " \"" + layer->name() + "\"", out);
      continue;
    }
    if (layer->class_name() == "Bidirectional") {
      add_bidirectional_groups(*layer, path, out);
      continue;
    }
    out.push_back({path, layer->name(), keras_weight_order(*layer), layer->class_name() + " \"" + layer->name() + "\""});
  }
  if (m.optimizer)
    for (VarsGroup& g : optimizer_groups(m)) out.push_back(std::move(g));
  return out;
}

void write_weights(H5File& f, const WeightsModel& model, const std::string& root) {
  for (const VarsGroup& g : rooted(weights_layout(model), root)) {
    f.create_group(g.vars_path());
    f.write_string_attribute(g.vars_path(), "name", g.name);
    for (std::size_t i = 0; i < g.variables.size(); ++i) f.write_dataset(g.vars_path() + "/" + std::to_string(i), g.variables[i]->value());
  }
}

void save_weights(const WeightsModel& model, const std::string& path, const SaveOptions& options) {
  check_extension(path);
  weights_layout(model);  // fails before any file is touched if the optimizer does not fit the model
  write_atomically(path, [&](const std::string& temp) {
    H5File f = H5File::create(temp, {.userblock = options.checksum ? kChecksumBlock : 0});
    write_weights(f, model);
    f.close();
    if (options.checksum) write_checksum(temp);
  });
}

Tensor read_variable(const H5File& f, const std::string& at, const Variable& v, const std::string& owner, bool step_count) {
  const std::string& file = f.path();
  const std::string what = " for " + v.name() + " of " + owner;
  if (!f.is_dataset(at)) throw Error(file + ": " + at + ": missing dataset" + what);
  const DatasetInfo info = f.dataset_info(at);
  const Tensor& cur = v.value();
  if (info.dims != cur.shape().dims()) throw Error(file + ": " + at + ": expected shape " + cur.shape().str() + ", got " + info.shape_str() + what);
  // Keras stores the iteration count, and integer layer weights (Normalization's count), as int64
  // (TensorFlow) or int32 (JAX, PyTorch).
  const bool integer = cur.dtype() == DType::I32 || cur.dtype() == DType::I64;
  const bool integer_ok = (step_count || integer) && (info.dtype == DType::I32 || info.dtype == DType::I64);
  // A bfloat16 or float16 weight (Keras's "bfloat16" and "float16" policies keep them so) widens
  // exactly into a float32 or float64 variable, where Tandem keeps it.
  const bool widening = (info.dtype == DType::BF16 || info.dtype == DType::F16) && (cur.dtype() == DType::F32 || cur.dtype() == DType::F64);
  if (info.dtype != cur.dtype() && !integer_ok && !widening)
    throw Error(file + ": " + at + ": expected dtype " + dtype_name(cur.dtype()) + ", got " + info.type_name + what);
  Tensor value(cur.shape(), cur.dtype());
  f.read_dataset_into(at, value);
  return value;
}

VarsGroup optimizer_vars_for_loading(const WeightsModel& model, std::size_t stored, const std::optional<std::string>& saved_by,
                                     const std::string& where) {
  if (stored > 2 && !model.optimizer->built()) model.optimizer->build(optimizer_weights(model));
  VarsGroup g = optimizer_group(model);
  // A model that compile gave a LossScaleOptimizer (under mixed_float16) and a file saved by the
  // optimizer it wraps: the file's state is the inner optimizer's, and the scale starts afresh.
  if (const auto* scaling = dynamic_cast<const LossScaleOptimizer*>(model.optimizer.get());
      scaling && saved_by && *saved_by == keras_optimizer_name(scaling->inner_optimizer()->name())) {
    const Optimizer& inner = *scaling->inner_optimizer();
    g = {"optimizer", *saved_by, inner.keras_variables(trainable_weights(model)), "optimizer \"" + inner.name() + "\""};
  }
  // Keras and Tandem name the optimizer state after the optimizer's class; a known other class is
  // refused even when its variable count matches (SGD with momentum and RMSprop both keep one
  // slot per weight). An unknown name (a user's own) leaves the count as the only check.
  static const std::set<std::string> known_classes = {"adam", "adam_w", "sgd", "rm_sprop", "adagrad", "adadelta", "adamax",
                                                      "nadam", "ftrl", "lion", "lamb", "loss_scale_optimizer"};
  if (saved_by && *saved_by != g.name && known_classes.count(*saved_by))
    throw Error(where + ": the optimizer state was saved by optimizer \"" + *saved_by + "\", but the model's optimizer is \"" + g.name +
                "\"; compile the model with that optimizer to load its state, or load the file into a model not compiled yet (the layers' weights only)");
  if (stored != g.variables.size())
    throw Error(where + ": expected " + std::to_string(g.variables.size()) + " variables for " + g.owner + ", got " + std::to_string(stored) +
                " (was the file saved with another optimizer?)");
  return g;
}

void read_weights(const H5File& f, const WeightsModel& model, const std::string& root) {
  std::vector<VarsGroup> groups = rooted(weights_layout(model), root);
  if (model.optimizer) groups.resize(groups.size() - optimizer_groups(model).size());  // read below, when the file has them

  std::vector<Staged> staged;
  std::set<std::string> known;
  std::string layer_list;
  const std::string layers = under(root, "layers"), layers_prefix = layers + "/";
  for (const VarsGroup& g : groups) {
    stage(f, g, staged);
    for (auto at = g.path.find('/'); at != std::string::npos; at = g.path.find('/', at + 1)) known.insert(g.path.substr(0, at));
    known.insert(g.path);
    if (g.path.rfind(layers_prefix, 0) == 0 && g.path.find('/', layers_prefix.size()) == std::string::npos)
      layer_list += (layer_list.empty() ? "" : ", ") + g.path.substr(layers_prefix.size());
  }
  check_no_extra(f, layers, known, layer_list);

  // Optimizer state, when the model is compiled and the file has some. An optimizer that has not
  // taken a step yet has no slots; it is built for the model's weights so that they can be loaded.
  const std::string optimizer_vars = under(root, "optimizer/vars");
  if (model.optimizer && f.is_group(optimizer_vars)) {
    VarsGroup g = optimizer_vars_for_loading(model, f.children(optimizer_vars).size(), f.read_string_attribute(optimizer_vars, "name"),
                                             f.path() + ": " + optimizer_vars);
    g.path = under(root, g.path);
    stage(f, g, staged, true);
  }
  for (const Staged& s : staged) s.variable->assign(s.value);
}

void load_weights(const WeightsModel& model, const std::string& path) {
  check_extension(path);
  verify_checksum(path);
  const H5File f = H5File::open(path);
  // A whole-model file renamed: its weights sit under /model_weights, in one layout or another.
  if (f.read_string_attribute("/", "model_config")) {
    const bool keras = is_keras_legacy_model(f);
    throw Error(path + ": a whole-model file (" + (keras ? "Keras's legacy model.save(\"m.h5\")" : "Tandem's Model::save") +
                "), not a weights file: load it with tandem::load_model");
  }
  read_weights(f, model);
}

}  // namespace tandem::io
