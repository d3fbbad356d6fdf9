// Keras's legacy `.h5` weights: matched to the model by layer name, then by position within each
// layer (Keras's layer.weights order: trainable, then the rest), as Keras's own loader does.
#include "io/keras_legacy_weights.h"

#include <map>

#include "io/hdf5_file.h"
#include "tandem/errors.h"

namespace tandem::io {

namespace {

struct Staged {
  VariablePtr variable;
  Tensor value;
};

// Checks one named group's datasets against `variables` and reads them without assigning.
void stage(const H5File& f, const std::string& group, const std::vector<VariablePtr>& variables, const std::string& owner,
           bool integer_first, std::vector<Staged>& out) {
  const std::string& file = f.path();
  const std::vector<std::string> names = f.read_string_list_attribute(group, "weight_names").value_or(std::vector<std::string>{});
  if (names.size() != variables.size())
    throw Error(file + ": " + group + ": has " + std::to_string(names.size()) + " weights (weight_names), " + owner + " has " +
                std::to_string(variables.size()));
  for (std::size_t i = 0; i < names.size(); ++i)
    out.push_back({variables[i], read_variable(f, group + "/" + names[i], *variables[i], owner, integer_first && i == 0)});
}

}  // namespace

bool is_keras_legacy_model(const H5File& f) {
  return f.read_string_attribute("/", "keras_version") && !f.read_string_attribute("/", "format");
}

void read_legacy_weights(const H5File& f, const WeightsModel& model) {
  const std::string root = "model_weights";
  if (!f.is_group(root)) throw Error(f.path() + ": the group /" + root + " is missing (the file is incomplete)");
  std::map<std::string, const Layer*> by_name;
  for (const auto& layer : model.layers) by_name[layer->name()] = layer.get();

  // Weights the model has no layer for would be silently dropped: refuse them.
  for (const std::string& name : f.read_string_list_attribute(root, "layer_names").value_or(f.children(root))) {
    const std::string group = root + "/" + name;
    if (by_name.count(name) || !f.is_group(group)) continue;
    if (!f.read_string_list_attribute(group, "weight_names").value_or(std::vector<std::string>{}).empty())
      throw Error(f.path() + ": " + group + ": the file has weights for a layer \"" + name + "\" that the model does not have");
  }

  std::vector<Staged> staged;
  for (const auto& layer : model.layers) {
    const std::vector<VariablePtr> variables = keras_weight_order(*layer);
    const std::string owner = layer->class_name() + " \"" + layer->name() + "\"";
    const std::string group = root + "/" + layer->name();
    if (!f.is_group(group)) {
      if (variables.empty()) continue;
      throw Error(f.path() + ": " + group + ": missing; expected " + std::to_string(variables.size()) + " weights for " + owner);
    }
    stage(f, group, variables, owner, false, staged);
  }

  if (model.optimizer && f.is_group("optimizer_weights")) {
    const std::vector<std::string> names = f.read_string_list_attribute("optimizer_weights", "weight_names").value_or(std::vector<std::string>{});
    // The names start with the optimizer's snake_case class name: "rm_sprop/iteration".
    std::optional<std::string> saved_by;
    if (!names.empty() && names[0].find('/') != std::string::npos) saved_by = names[0].substr(0, names[0].find('/'));
    const VarsGroup g = optimizer_vars_for_loading(model, names.size(), saved_by, f.path() + ": /optimizer_weights");
    stage(f, "optimizer_weights", g.variables, g.owner, true, staged);
  }
  for (const Staged& s : staged) s.variable->assign(s.value);
}

}  // namespace tandem::io
