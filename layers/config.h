// Layer configs: what each layer's config_json() writes (Keras's get_config: the constructor
// arguments under Keras's names) and the registry that rebuilds a layer from (class_name, config),
// which load_model uses. Each layer file registers its own class with a static RegisterLayer. Reading
// a config (ConfigReader) is shared with optimizers and losses: config/config_reader.h.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "config/config_reader.h"
#include "core/registry.h"
#include "tandem/layer.h"

namespace tandem::layers {

using config::ConfigReader;
using config::constraint_json;
using config::initializer_json;
using config::regularizer_json;
using config::int2_json;
using config::Json;

// The config text of `layer`: name, trainable and dtype (as Keras 3 starts every layer's config),
// then `args`, the layer's own arguments, then `none`: the arguments Tandem does not implement
// (regularizers, constraints, ...), written as null as Keras writes them when they are not used.
std::string config_text(const Layer& layer, const Json& args, std::initializer_list<const char*> none = {});

using ConfigFactory = std::function<std::shared_ptr<Layer>(const ConfigReader& config)>;

// Layer class names to factories; a class registered twice is an error (see core/registry.h).
struct LayerRegistry : core::Registry<std::string, ConfigFactory> {
  LayerRegistry() : Registry("layer class") {}
};

LayerRegistry& layer_registry();  // the process's: every RegisterLayer

// Registers a layer class; a layer file defines one `static const RegisterLayer` per class it makes.
struct RegisterLayer {
  RegisterLayer(const char* class_name, ConfigFactory make, std::source_location loc = std::source_location::current());
};

// Whether `class_name` was registered by the user (register_layer) rather than by Tandem: its
// saved entry then names it as Keras names a registered custom class, "Custom>" + class_name.
bool is_custom_layer_class(const std::string& class_name);

// A new, unbuilt layer made from its config. Throws ValueError naming the class if no layer of that
// class is registered, or naming the key if the config is not one the class accepts (a key the class
// does not read is refused too); throws Error if any layer class failed to register.
std::shared_ptr<Layer> layer_from_config(const std::string& class_name, const Json& config);

// The seed of a layer's own random stream (Dropout, MultiHeadAttention's dropout): `from_config`
// when a config gives one, else drawn from the global seed. Keras keeps a layer's seed in a
// SeedGenerator whose state is uint32 on JAX and int32 on PyTorch, and refuses a larger one when it
// loads the config, so seeds stay below 2^31: a larger one (older Tandem files wrote 64-bit seeds)
// is folded into that range.
uint64_t layer_seed(std::optional<uint64_t> from_config);
constexpr uint64_t kSeedLimit = uint64_t(1) << 31;

// Every registered class name, sorted.
std::vector<std::string> registered_layer_classes();

}  // namespace tandem::layers
