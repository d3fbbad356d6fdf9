// Layer configs: what each layer's config_json() writes (Keras's get_config: the constructor
// arguments under Keras's names) and the registry that rebuilds a layer from (class_name, config),
// which load_model uses. Each layer file registers its own class with a static RegisterLayer.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "core/registry.h"
#include "tandem/layer.h"
#include "tandem/layers/conv.h"

namespace tandem::layers {

using Json = nlohmann::ordered_json;  // keeps keys in the order written, like Keras's dicts

// The config text of `layer`: name, trainable and dtype (as Keras starts every layer's config), then
// `args`, the layer's own arguments.
std::string config_text(const Layer& layer, const Json& args);

// Initializers as Keras serialises them: "glorot_uniform" -> {"class_name": "GlorotUniform",
// "config": {"seed": null}}. Names Keras has no class for are written as plain strings.
Json initializer_json(const std::string& name);
Json int2_json(const Int2& v);  // [h, w]

// Reads one layer's config. Every accessor throws ValueError naming the class, the layer and the key:
// `Dense "fc": config key "units": expected a positive integer, got "ten"`.
class ConfigReader {
 public:
  ConfigReader(std::string class_name, const Json& config);
  const Json& json() const { return config_; }
  std::string name() const;  // "" when absent: the layer is named automatically

  int64_t integer(const char* key) const;  // required
  int64_t integer(const char* key, int64_t fallback) const;
  double number(const char* key) const;
  double number(const char* key, double fallback) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  std::string activation(const char* key) const;                                  // "linear" when absent
  std::string initializer(const char* key, const std::string& fallback) const;    // a name or Keras's dict
  std::vector<int64_t> integers(const char* key) const;                           // a list of integers
  Int2 int2(const char* key) const;                                               // an integer or [h, w]
  Int2 int2(const char* key, const Int2& fallback) const;                         // null/absent: fallback
  std::optional<uint64_t> seed(const char* key) const;                            // null/absent: none
  // Keys Tandem does not implement: accepted only with the value that means "not used".
  void expect(const char* key, const Json& only) const;

  [[noreturn]] void fail(const char* key, const std::string& expected) const;
  bool has(const char* key) const;

 private:
  const Json& at(const char* key) const;
  std::string class_name_;
  const Json& config_;
};

using LayerFactory = std::shared_ptr<Layer> (*)(const ConfigReader& config);

// Layer class names to factories; a class registered twice is an error (see core/registry.h).
struct LayerRegistry : core::Registry<std::string, LayerFactory> {
  LayerRegistry() : Registry("layer class") {}
};

LayerRegistry& layer_registry();  // the process's: every RegisterLayer

// Registers a layer class; a layer file defines one `static const RegisterLayer` per class it makes.
struct RegisterLayer {
  RegisterLayer(const char* class_name, LayerFactory make, std::source_location loc = std::source_location::current());
};

// A new, unbuilt layer made from its config. Throws ValueError naming the class if no layer of that
// class is registered, or naming the key if the config is not one the class accepts; throws Error
// if any layer class failed to register.
std::shared_ptr<Layer> layer_from_config(const std::string& class_name, const Json& config);

// Every registered class name, sorted.
std::vector<std::string> registered_layer_classes();

}  // namespace tandem::layers
