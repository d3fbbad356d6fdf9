// Model and Sequential: compile, fit, evaluate, predict, summary.
#pragma once

#include <concepts>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/augmentation.h"
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
  // Any optimizer class's pointer (a LossScaleOptimizer's, as optimizers::LossScaleOptimizer gives it).
  template <class T>
    requires std::derived_from<T, Optimizer>
  OptimizerArg(std::shared_ptr<T> p) : ptr(std::move(p)) {}
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
  LossArg loss{};  // for every output
  // A model with several outputs may take one loss per output instead, in the model's output
  // order (Keras's list form), and weigh them in the total loss (Keras's loss_weights; all 1 when
  // empty). History and evaluate report the total as "loss" and each output's own, unweighted,
  // as "<output layer>_loss".
  std::vector<LossArg> losses{};
  std::vector<double> loss_weights{};
  std::vector<std::string> metrics{}; // "accuracy", "mae", "mse", ...; with several outputs, for each ("<output layer>_accuracy")
  std::vector<std::vector<std::string>> output_metrics{};  // or one list per output
  distribute::StrategyPtr strategy{}; // Default() when empty
};

struct FitOptions {
  int epochs = 1;
  int64_t batch_size = 32;
  bool shuffle = true;
  std::optional<Dataset> validation_data{};
  double validation_split = 0.0;  // the last fraction of the data, taken before shuffling
  // Per-row weights of the training loss (Keras's sample_weight), shape (rows,): each row's loss
  // is multiplied by its weight and the mean is still over all rows (Keras's
  // "sum_over_batch_size"). With several outputs, every output's loss. Metrics stay unweighted.
  std::optional<Tensor> sample_weight{};
  // Or weights by class id (Keras's class_weight), for a model with one output: each row's loss
  // is multiplied by the weight of its target class (integer ids, or the argmax of one-hot
  // targets); classes not listed weigh 1.
  std::map<int64_t, double> class_weight{};
  // 0 silent, 1 progress bar, 2 one line per epoch. When standard output is not a terminal (a log
  // file, a pipe), 1 prints as 2 does, as Keras's verbose="auto" does.
  int verbose = 1;
  std::vector<CallbackPtr> callbacks{};
  int initial_epoch = 0;
  // Batches per epoch (Keras's steps_per_epoch); 0 runs every batch. Fewer than the data has: the
  // next epoch continues where this one ended, and an epoch ends early at the end of the data,
  // after which a new pass (a new shuffle) begins, as Keras's epoch iterator does.
  int64_t steps_per_epoch = 0;
  // Applied in order to each training row as its batch is staged (not to validation data):
  // datasets::random_flip, random_translation, normalization or your own (tandem/augmentation.h).
  std::vector<datasets::RowTransform> transforms{};
  // When set, the training step with index trace_step (counted from 0 in this fit) is recorded
  // and written to this path as a Chrome trace (open it in ui.perfetto.dev or chrome://tracing).
  std::string trace_path{};
  int64_t trace_step = 1;
};

// The memory one device holds for training, in bytes, read from the lowered programs of a
// training step: the variables it keeps (all of each, or its block of one that a strategy splits)
// and the arena the memory planner laid out for the step.
struct DeviceMemory {
  std::string device;
  std::size_t weights = 0;          // the layers' variables, trainable or not (BatchNorm's statistics)
  std::size_t optimizer_state = 0;  // the optimizer's variables: step count, learning rate, slots
  std::size_t arena = 0;            // activations, gradients and temporaries of one step
  std::size_t total() const { return weights + optimizer_state + arena; }
};

// Where a running fit() stands: what BackupAndRestore writes to its backup and hands back to resume.
struct FitProgress {
  int epoch = 0;                    // the epoch being run, 0-based
  int64_t batch = 0;                // batches of `epoch` finished
  int64_t steps = 0;                // training steps finished, all epochs (counting resumed runs)
  uint64_t shuffle_seed = 0;        // the seed fit() gave its batch shuffler
  double loss_sum = 0;              // this epoch so far: sum of batch loss * batch rows,
  std::vector<double> metric_sums{}; // each compiled metric's sum,
  int64_t rows = 0;                 // and the rows they cover
  // The History of the epochs finished before `epoch` (read by resume_fit; fit_progress() leaves
  // them empty).
  std::vector<int> history_epochs{};
  std::map<std::string, std::vector<double>> history{};
};

struct EvaluateOptions {
  int64_t batch_size = 32;
  int verbose = 1;
  std::vector<CallbackPtr> callbacks{};
};

struct PredictOptions {
  int64_t batch_size = 32;
  int verbose = 0;
  std::vector<CallbackPtr> callbacks{};  // on_predict_begin, on_predict_batch_begin/_end, on_predict_end
};

class Model {
 public:
  Model(const Symbol& input, const Symbol& output, const std::string& name = "");
  // Several inputs and outputs (keras.Model([a, b], [c, d])): fit, evaluate and predict then take
  // one tensor per input and per output, in these orders.
  Model(const std::vector<Symbol>& inputs, const std::vector<Symbol>& outputs, const std::string& name = "");
  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& name() const;
  void compile(const CompileOptions& options);
  History fit(const Dataset& data, const FitOptions& options = {});
  History fit(const Tensor& x, const Tensor& y, const FitOptions& options = {});
  History fit(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const FitOptions& options = {});
  Logs evaluate(const Dataset& data, const EvaluateOptions& options = {});
  Logs evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options = {});
  Logs evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const EvaluateOptions& options = {});
  Tensor predict(const Tensor& x, const PredictOptions& options = {});  // a model with one input and one output
  std::vector<Tensor> predict(const std::vector<Tensor>& x, const PredictOptions& options = {});  // one per output
  // The x of a dataset (a streamed one too), one result per output; its targets are not read.
  // (A template only so that predict({x0, x1}) still means the vector of inputs.)
  template <std::same_as<Dataset> D>
  std::vector<Tensor> predict(const D& data, const PredictOptions& options = {}) {
    return predict_dataset(data, options);
  }

  // One batch at a time (Keras's train_on_batch, test_on_batch, predict_on_batch): x and y are the
  // whole batch. train_on_batch runs one update and returns that batch's loss and metrics, as
  // computed before the update; test_on_batch evaluates the batch; predict_on_batch predicts it.
  Logs train_on_batch(const Tensor& x, const Tensor& y);
  Logs train_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y);
  Logs test_on_batch(const Tensor& x, const Tensor& y);
  Logs test_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y);
  Tensor predict_on_batch(const Tensor& x);
  std::vector<Tensor> predict_on_batch(const std::vector<Tensor>& x);
  void summary(std::ostream& out = std::cout);
  std::string summary_string();
  std::vector<std::shared_ptr<Layer>> layers() const;
  // Keras's get_layer: by name (ValueError listing the names if none has it) or by index in layers().
  std::shared_ptr<Layer> get_layer(const std::string& name) const;
  std::shared_ptr<Layer> get_layer(std::size_t index) const;
  // The symbols the model was built on (a Sequential's once built), to build other models on them:
  // Model(base.inputs(), Dense(10)(base.get_layer("features")->output())) shares base's layers.
  const std::vector<Symbol>& inputs() const;
  const std::vector<Symbol>& outputs() const;
  // Keras's model.trainable: sets every layer's trainable (Layer::set_trainable); saved.
  bool trainable() const;
  void set_trainable(bool trainable);
  std::vector<VariablePtr> weights() const;            // every layer's, in layer order
  std::vector<VariablePtr> trainable_weights() const;
  std::vector<Tensor> get_weights() const;
  void set_weights(const std::vector<Tensor>& values);
  // Keras 3 `.weights.h5` files (the path must end in ".weights.h5"): every layer's weights and, when
  // the model is compiled, the optimizer's state. Loading checks the whole file before changing anything.
  void save_weights(const std::string& path);
  void load_weights(const std::string& path);
  // The whole model in one HDF5 file (".h5"): architecture, compile settings, weights, optimizer
  // state and training state; tandem::load_model (tandem/saving.h) rebuilds it. Written atomically.
  void save(const std::string& path);
  const OptimizerPtr& optimizer() const;
  // Bytes of the memory plan of the last training step that ran (activations and gradients).
  std::size_t planned_arena_bytes() const;
  // Per device of the strategy (this process's devices), the memory of the last training step
  // compiled: fit compiles one per batch size before its first batch. Empty before that; summary()
  // prints it too.
  std::vector<DeviceMemory> memory_per_device() const;
  // A callback may set it to end fit: set in on_train_batch_end, fit stops after that batch (the
  // epoch still ends with on_epoch_end, as in Keras); set in on_epoch_end, after that epoch.
  bool stop_training = false;

  // Hooks for callbacks that checkpoint training (BackupAndRestore). fit_progress() is kept current
  // by fit(): it is up to date in every on_train_batch_end and on_epoch_end. A callback's
  // on_train_begin may call resume_fit() to make the fit that is starting continue from a saved
  // point instead of from initial_epoch: the same shuffle order, the rest of that epoch's batches,
  // its running loss and metric sums, and the History so far. The caller restores the weights and
  // optimizer state itself (load_weights). fit() checks the point against the data it was given.
  const FitProgress& fit_progress() const { return progress_; }
  void resume_fit(const FitProgress& from) { resume_ = from; }

 protected:
  explicit Model(const std::string& name, const std::string& class_prefix);
  void set_graph(const Symbol& input, const Symbol& output);
  virtual void ensure_built(const Shape& sample_shape, DType dtype);
  bool has_graph() const;

 private:
  struct Impl;
  friend std::unique_ptr<Model> load_model(const std::string& path);  // tandem/saving.h
  friend struct ModelPlotAccess;  // src/model/plot_model.cpp reads the layer calls and the placement
  Dataset prepare(const Dataset& data, const char* where);  // validates and converts x and y
  Dataset streamed_inputs(const Dataset& data) const;       // a streamed dataset's x in the inputs' dtypes
  // Shapes checked and dtypes converted; with `maps`, its mapped inputs are checked as mapped.
  std::vector<Tensor> check_inputs(const std::vector<Tensor>& xs, const Dataset* maps = nullptr) const;
  std::optional<Tensor> row_weights(const Dataset& data, const FitOptions& o) const;  // from sample_weight or class_weight
  std::vector<Tensor> predict_dataset(const Dataset& data, const PredictOptions& options);
  std::function<float(const std::byte*)> streamed_row_weights(const Dataset& data, const FitOptions& o) const;  // from a staged target row
  std::unique_ptr<Impl> impl_;
  FitProgress progress_;
  std::optional<FitProgress> resume_;
};

class Sequential : public Model {
 public:
  explicit Sequential(std::vector<LayerRef> layers = {}, const std::string& name = "");
  void add(LayerRef layer);
  // Batch excluded; `input_name` names the model's input (as Input's name does), automatic when empty.
  void build(const Shape& input_shape, DType dtype = DType::F32, const std::string& input_name = "");

 private:
  void ensure_built(const Shape& sample_shape, DType dtype) override;
  std::vector<LayerRef> layers_;
  std::optional<Shape> input_shape_;
  DType dtype_ = DType::F32;
};

}  // namespace tandem
