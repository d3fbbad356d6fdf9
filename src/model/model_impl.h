// Model internals shared by model.cpp (structure), step.cpp (compiled steps) and fit.cpp.
#pragma once

#include <map>
#include <tuple>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/weights_file.h"
#include "layer_base/symbol.h"
#include "runtime/executable.h"
#include "runtime/variable_homes.h"
#include "tandem/mixed_precision.h"
#include "tandem/model.h"

namespace tandem {

// Train: forward, backward and update; Test: forward and metrics; Predict: forward.
enum class StepKind { Train, Test, Predict };

// One compiled step for one batch size, lowered from one graph of one micro-batch. A training
// step may run several batches (a strategy that synchronises every k) and cut each into
// micro-batches; the graph then sums gradients, loss and metrics over the micro-batches.
struct CompiledStep {
  // Where a program's part of an input goes: its device memory, per micro-batch, and the rows of
  // a micro-batch it gets.
  struct Feed {
    std::vector<void*> at;  // null: the program does not read this input
    int64_t offset = 0, rows = 0;
  };
  int64_t micro_rows = 0;  // rows of one micro-batch
  int64_t pieces = 1;      // micro-batches per batch
  std::unique_ptr<runtime::Executable> exe;
  const distribute::Strategy* strategy = nullptr;  // combines what several workers read
  std::vector<std::vector<Feed>> x, y;  // per input (per output), per program
  // A fetched value of `count` elements that the host reads as numbers.
  struct Sums {
    int fetch = -1;
    int64_t count = 1;
    DType dtype = DType::F32;
  };
  Sums loss;                     // the batch's loss
  std::vector<Sums> metrics;     // per-batch sums, one per entry of Impl::metric_slots()
  std::vector<int> outputs;      // predict: fetch indices, one per model output
  // The loss, then each metric's sums, flattened: read where they live, partial sums added up
  // (over every worker's devices), a replicated value once.
  std::vector<double> scalars() const;
  mutable std::vector<std::byte> fetched_;  // scalars()'s scratch: one fetch as read
  // Copies the `index`-th batch of the step (rows of `row_bytes` each) from host memory to the
  // devices: each of its micro-batches, each program its rows of them.
  void write(const std::vector<Feed>& to, const std::byte* batch, std::size_t row_bytes, int64_t index = 0) const;
  // Copies a fetched per-row value of `rows` rows into host memory, in batch order.
  void read_rows(int fetch, std::byte* host, std::size_t row_bytes, int64_t rows) const;
};

struct Model::Impl {
  std::string name;
  std::string class_name = "Functional";
  bool trainable = true;  // Model::set_trainable's last value (Keras's model.trainable)
  // Keras's model.dtype_policy: the global one when the model was made, or its saved config's
  // (a Sequential's config records it; its layers keep their own).
  std::string dtype_policy = mixed_precision::global_policy().name();
  std::vector<Symbol> inputs, outputs;
  std::vector<std::shared_ptr<Symbol::Node>> calls;  // layer calls in topological order
  std::vector<std::shared_ptr<Layer>> layers;         // distinct layers, first-use order

  // Set by compile.
  bool compiled = false;
  OptimizerPtr optimizer;
  std::vector<LossPtr> losses;                    // per output
  std::vector<double> loss_weights;               // per output
  std::vector<std::vector<std::string>> metrics;  // per output, as compiled
  distribute::StrategyPtr strategy;
  // Declared before the steps, so destroyed after them: a step the watchdog abandoned may still
  // run kernels over these homes, and destroying its Executable waits for it.
  runtime::VariableHomes homes;
  // Cached per (kind, rows, batches, whether the loss takes per-row weights).
  std::map<std::tuple<StepKind, int64_t, int64_t, bool>, CompiledStep> steps;
  const CompiledStep* last_train = nullptr;  // the training step fit ran last (in `steps`)

  void set_graph(const std::vector<Symbol>& in, const std::vector<Symbol>& out);
  // Traces the layer calls into g on the inputs' values; returns the outputs' values and, if
  // `output_masks` is given, sets it to their masks (invalid where none).
  std::vector<graph::Value> trace(CallContext& ctx, const std::vector<graph::Value>& xs,
                                  std::vector<graph::Value>* output_masks = nullptr) const;
  // Placeholders for the model's inputs, `rows` rows each: "x" (one input) or "x0", "x1", ...
  std::vector<graph::Value> input_placeholders(graph::Graph& g, int64_t rows) const;
  // What History and evaluate report beside "loss", in the order of CompiledStep::metrics: with
  // one output each metric by its name; with several each output's loss ("<output>_loss"), then
  // its metrics ("<output>_<metric>"). Each is a metric of an output (whose loss says what
  // "accuracy" means) or, with `metric` empty, an output's own loss; `sums` is how many sums it keeps.
  struct MetricSlot {
    std::string name, metric;
    LossPtr loss;
    std::size_t sums = 1;
    // Of an output that carries a mask: a mean over its unmasked steps, kept as the two sums
    // (Σ value·mask, Σ mask) — Keras weighs a masked output's metrics by the mask.
    bool masked = false;
  };
  std::vector<MetricSlot> metric_slots() const;
  std::size_t metric_sums() const;  // all slots' sums together
  std::string output_name(std::size_t i) const;  // the layer that makes output i
  // The step of `batches` batches of `rows` rows (more than one: training with a strategy that
  // synchronises every k batches). `y_types` are one batch's targets, one per output, and when
  // there is one more, the per-row weights of the loss (fit's sample_weight or class_weight).
  CompiledStep& step(StepKind kind, int64_t rows, const std::vector<TensorType>& y_types, int64_t batches = 1);
  int sync_every() const;  // batches per update
  std::vector<VariablePtr> weights() const;
  // Forward and backward of the layers (the loss a plain sum) for batches of `rows` rows: what
  // a strategy's placement of layers looks at.
  graph::Graph layer_graph(int64_t rows) const;
  // What the weights file code needs to know: the layers in Keras's order, the optimizer when
  // compiled. Throws (naming `what`) if the model is not built yet. In weights_io.cpp.
  io::WeightsModel weights_model(const char* what) const;

  // Every device that runs a step keeps its own copy (home) of each variable the step uses. The
  // host tensors (what get_weights, save and the layers show) are brought up to date lazily:
  //   host_view()   before the host tensors are read or written: settles any abandoned step and,
  //                 if the devices hold newer values (training ran), copies them to the host;
  //   host_changed() after the host tensors were written: the next step copies them to the devices;
  //   begin_steps() at the start of fit, evaluate and predict: host_view(), then host -> devices
  //                 (the host may have been written through a layer's set_weights).
  // Every entry point that runs steps or touches variables calls one of them. (`homes` is above.)
  // Under a strategy that spreads the variables over the devices of several workers, host_view
  // also completes each worker's host tensors from the others' (share_over_workers), so every
  // worker calls it at the same points: fit does, and a callback that reads the weights on the
  // chief mid-epoch has the other workers read them too (get_weights).
  bool devices_newer = false, host_newer = false;
  void host_view();
  void share_over_workers();  // in worker_variables.cpp
  void host_changed() { host_newer = true; }
  void begin_steps();
  // Which layers and weights were trainable when the cached steps were made: a change
  // (Layer::set_trainable between fits) makes begin_steps drop them, so the next step is rebuilt.
  std::vector<char> trainability;
  std::vector<char> current_trainability() const;
  void before_step();               // pushes host writes made since the last step (callbacks)
  void after_step(bool trained) { devices_newer = devices_newer || trained; }
  std::vector<VariablePtr> all_variables() const;
  // Waits for any step the watchdog abandoned, so nothing reads or writes the variables or a
  // step's inputs while it may still run.
  void settle_steps();

  std::unordered_map<int, VariablePtr> variables_by_id() const;  // everything a step binds
};

}  // namespace tandem
