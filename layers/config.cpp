// Layer configs: the text a layer's config_json() writes, and the registry of layer classes.
#include "layers/config.h"

#include "tandem/errors.h"

namespace tandem::layers {

std::string config_text(const Layer& layer, const Json& args, std::initializer_list<const char*> none) {
  Json config{{"name", layer.name()}, {"trainable", true}, {"dtype", config::dtype_policy_json()}};
  for (const auto& [key, value] : args.items()) config[key] = value;
  for (const char* key : none) config[key] = nullptr;
  return config.dump();
}

LayerRegistry& layer_registry() {
  static LayerRegistry r;  // built on first use: layer files' registrations may run before this file's statics
  return r;
}

RegisterLayer::RegisterLayer(const char* class_name, LayerFactory make, std::source_location loc) {
  layer_registry().add(class_name, make, loc);
}

std::shared_ptr<Layer> layer_from_config(const std::string& class_name, const Json& config) {
  const LayerFactory* found = layer_registry().find(class_name);
  if (!found) {
    std::string known;
    for (const std::string& c : registered_layer_classes()) known += (known.empty() ? "" : ", ") + c;
    throw ValueError("unknown layer class \"" + class_name + "\"; the layer classes Tandem can rebuild are: " + known);
  }
  const ConfigReader reader(class_name, config);
  reader.read_layer_basics();
  std::shared_ptr<Layer> layer = (*found)(reader);
  reader.check_all_read();
  // A config may leave the name out (the layer is then named automatically), never change it.
  if (!reader.name().empty() && layer->name() != reader.name())
    throw ValueError(class_name + ": the rebuilt layer is named \"" + layer->name() + "\", expected \"" + reader.name() + "\"");
  return layer;
}

std::vector<std::string> registered_layer_classes() {
  std::vector<std::string> out;
  for (const auto& [name, slot] : layer_registry().entries()) out.push_back(name);
  return out;
}

}  // namespace tandem::layers
