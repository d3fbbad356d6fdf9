// Model and Sequential: compile, fit, evaluate, predict, summary.
#pragma once

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/callbacks.h"
#include "tandem/data.h"
#include "tandem/distribute.h"
#include "tandem/layer.h"
#include "tandem/losses.h"
#include "tandem/optimizers.h"

namespace tandem {

// Accepts an object or a Keras string name: `.optimizer = "adam"` or `.optimizer = optimizers::Adam(1e-3)`.
struct OptimizerArg {
  OptimizerPtr ptr;
  OptimizerArg(OptimizerPtr p) : ptr(std::move(p)) {}
  OptimizerArg(const char* name) : ptr(optimizers::get(name)) {}
  OptimizerArg(const std::string& name) : ptr(optimizers::get(name)) {}
};
struct LossArg {
  LossPtr ptr;
  LossArg() = default;
  LossArg(LossPtr p) : ptr(std::move(p)) {}
  LossArg(const char* name) : ptr(losses::get(name)) {}
  LossArg(const std::string& name) : ptr(losses::get(name)) {}
};

struct CompileOptions {
  OptimizerArg optimizer = "rmsprop";
  LossArg loss;
  std::vector<std::string> metrics;  // "accuracy", "mae", "mse", ...
  distribute::StrategyPtr strategy;  // Default() when empty
};

struct FitOptions {
  int epochs = 1;
  int64_t batch_size = 32;
  bool shuffle = true;
  std::optional<Dataset> validation_data;
  double validation_split = 0.0;  // the last fraction of the data, taken before shuffling
  int verbose = 1;                // 0 silent, 1 progress bar, 2 one line per epoch
  std::vector<CallbackPtr> callbacks;
  int initial_epoch = 0;
  // When set, the training step with index trace_step (counted from 0 in this fit) is recorded
  // and written to this path as a Chrome trace (open it in ui.perfetto.dev or chrome://tracing).
  std::string trace_path;
  int64_t trace_step = 1;
};

struct EvaluateOptions {
  int64_t batch_size = 32;
  int verbose = 1;
  std::vector<CallbackPtr> callbacks;
};

struct PredictOptions {
  int64_t batch_size = 32;
  int verbose = 0;
};

class Model {
 public:
  Model(const Symbol& input, const Symbol& output, const std::string& name = "");
  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& name() const;
  void compile(const CompileOptions& options);
  History fit(const Dataset& data, const FitOptions& options = {});
  History fit(const Tensor& x, const Tensor& y, const FitOptions& options = {});
  Logs evaluate(const Dataset& data, const EvaluateOptions& options = {});
  Tensor predict(const Tensor& x, const PredictOptions& options = {});

  void summary(std::ostream& out = std::cout);
  std::string summary_string();
  std::vector<std::shared_ptr<Layer>> layers() const;
  std::vector<VariablePtr> weights() const;            // every layer's, in layer order
  std::vector<VariablePtr> trainable_weights() const;
  std::vector<Tensor> get_weights() const;
  void set_weights(const std::vector<Tensor>& values);
  // Keras 3 `.weights.h5` files (the path must end in ".weights.h5"): every layer's weights and, when
  // the model is compiled, the optimizer's state. Loading checks the whole file before changing anything.
  void save_weights(const std::string& path);
  void load_weights(const std::string& path);
  const OptimizerPtr& optimizer() const;
  // Bytes of the memory plan of the last training step that ran (activations and gradients).
  std::size_t planned_arena_bytes() const;
  bool stop_training = false;  // a callback may set it to end fit after the current epoch

 protected:
  explicit Model(const std::string& name, const std::string& class_prefix);
  void set_graph(const Symbol& input, const Symbol& output);
  virtual void ensure_built(const Shape& sample_shape, DType dtype);
  bool has_graph() const;

 private:
  struct Impl;
  Dataset prepare(const Dataset& data, const char* where);  // validates and converts x and y
  std::unique_ptr<Impl> impl_;
};

class Sequential : public Model {
 public:
  explicit Sequential(std::vector<LayerRef> layers = {}, const std::string& name = "");
  void add(LayerRef layer);
  void build(const Shape& input_shape, DType dtype = DType::F32);  // batch excluded

 private:
  void ensure_built(const Shape& sample_shape, DType dtype) override;
  std::vector<LayerRef> layers_;
  std::optional<Shape> input_shape_;
  DType dtype_ = DType::F32;
};

}  // namespace tandem
