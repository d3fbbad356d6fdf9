// Layer configs: the text a layer's config_json() writes, and the registry of layer classes.
#include "layers/config.h"

#include <mutex>
#include <set>

#include "layer_base/initializers.h"
#include "tandem/errors.h"

namespace tandem::layers {

std::string config_text(const Layer& layer, const Json& args, std::initializer_list<const char*> none) {
  Json config = config::layer_basics_json(layer.name(), config::saved_policy_name(layer.dtype_policy(), layer.dtype()));
  config["trainable"] = layer.trainable();
  // Keras's base Layer.get_config adds the activity regularizer after dtype, only when set.
  if (layer.activity_regularizer()) config["activity_regularizer"] = config::regularizer_json(layer.activity_regularizer());
  for (const auto& [key, value] : args.items()) config[key] = value;
  for (const char* key : none) config[key] = nullptr;
  return config.dump();
}

uint64_t layer_seed(std::optional<uint64_t> from_config) { return (from_config ? *from_config : next_seed()) % kSeedLimit; }

LayerRegistry& layer_registry() {
  static LayerRegistry r;  // built on first use: layer files' registrations may run before this file's statics
  return r;
}

RegisterLayer::RegisterLayer(const char* class_name, ConfigFactory make, std::source_location loc) {
  layer_registry().add(class_name, make, loc);
}

std::shared_ptr<Layer> layer_from_config(const std::string& class_name, const Json& config) {
  const ConfigFactory* found = layer_registry().find(class_name);
  if (!found) {
    std::string known;
    for (const std::string& c : registered_layer_classes()) known += (known.empty() ? "" : ", ") + c;
    throw ValueError("unknown layer class \"" + class_name + "\"; the layer classes Tandem can rebuild are: " + known);
  }
  const ConfigReader reader(class_name, config);
  const std::optional<std::string> policy = reader.read_layer_basics();
  std::shared_ptr<Layer> layer = (*found)(reader);
  if (policy) layer->set_dtype_policy(DTypePolicy(*policy));
  // Every layer takes Keras's activity_regularizer (the base Layer's argument), unless its own
  // fields read it: a layer that takes it itself sets it (Conv2D) or passes it on (MultiHeadAttention
  // applies it to its projections, not to its output).
  if (!reader.was_read("activity_regularizer"))
    if (const Regularizer activity = reader.regularizer("activity_regularizer")) layer->set_activity_regularizer(activity);
  reader.check_all_read();
  if (config.contains("trainable") && !config.at("trainable").get<bool>()) layer->set_trainable(false);
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

namespace {
std::mutex custom_mutex;
std::set<std::string>& custom_classes() {
  static std::set<std::string> names;
  return names;
}
}  // namespace

bool is_custom_layer_class(const std::string& class_name) {
  std::lock_guard lock(custom_mutex);
  return custom_classes().count(class_name) > 0;
}

}  // namespace tandem::layers

namespace tandem {

void register_layer(const std::string& class_name, LayerFactory make, std::source_location where) {
  if (class_name.empty()) throw ValueError("register_layer: the class name is empty");
  if (!make) throw ValueError("register_layer(\"" + class_name + "\"): the factory is empty");
  layers::layer_registry().add(
      class_name, [make](const config::ConfigReader& c) { return make(LayerConfig(c)); }, where);
  std::lock_guard lock(layers::custom_mutex);
  layers::custom_classes().insert(class_name);
}

}  // namespace tandem
