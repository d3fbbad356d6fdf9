// Model configs: a model's architecture and compile settings as JSON in Keras's shape (what
// Model::save stores in its file's model_config and training_config attributes), and the rebuilding
// of a model from them (load_model).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "layer_base/symbol.h"
#include "model/config_json.h"
#include "tandem/model.h"

namespace tandem::detail {


// A model's structure as Model::save sees it (Model::Impl's fields).
struct ModelGraph {
  std::string name;
  std::string class_name;  // "Sequential" or "Functional"
  std::vector<Symbol> inputs, outputs;
  std::vector<std::shared_ptr<Symbol::Node>> calls;  // layer calls, inputs before the calls that use them
  std::vector<std::shared_ptr<Layer>> layers;       // each layer once, in Keras's order (Model.layers)
  bool trainable = true;                             // Keras's model.trainable
  std::string dtype_policy = "float32";              // Keras's model.dtype_policy (a Sequential's config records it)
};

// Where a config goes. Keras writes the same layer configs in both, wrapped differently:
//   HDF5: {"class_name", "config"} per layer and for the model (Keras's legacy `.h5`, Tandem's `.h5`)
//   archive: Keras 3's serialised objects, {"module", "class_name", "config", "registered_name",
//            "build_config"} (a `.keras` archive's config.json; compile settings in "compile_config")
enum class ConfigForm { hdf5, archive };

// {"class_name": "Sequential" | "Functional", "config": {"name", "layers": [...], ...}}. Throws
// ValueError if a layer has no config, or (functional) two layers share a name.
Json model_config(const ModelGraph& model, ConfigForm form = ConfigForm::hdf5);

// A new model built from such a config: every layer made from its class and config, connected as
// recorded (weights freshly initialised; not compiled). Throws ValueError/ShapeError naming the
// entry for unknown classes, bad or missing keys, dangling connections and shape mismatches.
std::unique_ptr<Model> model_from_config(const Json& config);

// Per output: a loss, its weight and its metrics. One output is written as Keras writes a
// single-output model (a loss, a list of metric names, loss_weights null); several as lists.
struct CompileSettings {
  OptimizerPtr optimizer;
  std::vector<LossPtr> losses;
  std::vector<double> loss_weights;
  std::vector<std::vector<std::string>> metrics;
  // Keras's jit_compile as its compile("auto") resolves it: false when a layer cannot be compiled
  // by XLA (supports_jit() in model_save.cpp).
  bool jit_compile = true;
};

// Compile settings (model/compile_config.cpp).
// hdf5: {"loss": {"class_name", "config"}, "metrics": [...], "loss_weights": null, "weighted_metrics":
// null, "optimizer_config": {"class_name", "config"}}, as Keras's legacy h5 files hold it; archive:
// Keras 3's compile_config, {"optimizer": {...}, "loss": {...}, "metrics": [...], ...}. Reading
// takes either.
Json compile_config(const CompileSettings& settings, ConfigForm form = ConfigForm::hdf5);
CompileSettings compile_from_config(const Json& config);


}  // namespace tandem::detail
