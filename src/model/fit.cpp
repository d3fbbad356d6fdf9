// compile, fit, evaluate and predict: the loops around compiled steps.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "callbacks/checkpoint_path.h"
#include "data/batcher.h"
#include "layer_base/initializers.h"
#include "metrics/metrics.h"
#include "distribute/strategy.h"
#include "model/feeder.h"
#include "model/model_impl.h"
#include "runtime/tracer.h"
#include "tandem/errors.h"

namespace tandem {

using detail::Feeder;
using detail::progress_verbosity;

namespace {
// A metric's values in the logs. One per class (F1Score with average none, say) gives `name[i]` for
// class i and, under `name`, their mean: the one number Keras's progress bar shows of them.
void put(Logs& l, const std::string& name, const std::vector<double>& values) {
  if (values.size() == 1) {
    l[name] = values[0];
    return;
  }
  double sum = 0;
  for (std::size_t i = 0; i < values.size(); ++i) l[name + "[" + std::to_string(i) + "]"] = values[i], sum += values[i];
  l[name] = values.empty() ? 0.0 : sum / double(values.size());
}

// Running means over an epoch, weighted by each batch's rows.
struct Accumulator {
  double loss = 0;
  std::vector<double> metric_sums;
  int64_t rows = 0;
  // A step's loss (a mean over its rows) and metric sums.
  void add(const std::vector<double>& scalars, int64_t step_rows) {
    loss += scalars[0] * double(step_rows);
    for (std::size_t i = 0; i + 1 < scalars.size(); ++i) metric_sums[i] += scalars[i + 1];
    rows += step_rows;
  }
  // Each metric's value from its sums (an output's loss is a mean, as most metrics are).
  Logs logs(const auto& slots) const {  // Impl::metric_slots()
    Logs l{{"loss", rows ? loss / double(rows) : 0.0}};
    std::size_t at = 0;
    for (const auto& s : slots) {
      const std::span<const double> sums(metric_sums.data() + at, s.sums);
      if (s.masked) l[s.name] = sums[1] > 0 ? sums[0] / sums[1] : 0.0;  // over the unmasked steps
      else if (s.metric.empty()) l[s.name] = rows ? sums[0] / double(rows) : 0.0;
      else put(l, s.name, metrics::result(s.metric, *s.loss, sums, rows));
      at += s.sums;
    }
    return l;
  }
};

// A label of a sparse loss: a whole number in [0, classes). `at` says where (" at row 3").
void check_label(const std::string& loss, double label, int64_t classes, const std::string& at, const Shape& out) {
  if (label != std::floor(label))  // NaN too
    throw ValueError(loss + ": label " + callbacks::detail::python_float_repr(label) + at + " is not a whole number: class ids are 0, 1, ..., " +
                     std::to_string(classes - 1));
  if (label < 0 || label >= double(classes)) {
    char whole[400];  // any whole double (up to 309 digits), or inf
    std::snprintf(whole, sizeof whole, "%.0f", label);
    throw ValueError(loss + ": label " + whole + at + " is out of range [0, " + std::to_string(classes) + ") for model output " + out.str());
  }
}

// The row shape a sparse loss takes class ids of for `out` (its class axis and batch dropped), and
// a row of `y` as it should be: a trailing axis of 1 dropped. A mismatch is a ValueError.
Shape class_id_row(const std::string& loss, const Shape& y_row, const Shape& out, const Shape& y_shown) {
  Shape row = y_row;
  if (row.rank() + 1 == out.rank() && row.rank() > 0 && row.back() == 1)  // (N, 1) class ids -> (N,)
    row = Shape(std::vector<int64_t>(row.dims().begin(), row.dims().end() - 1));
  if (out.rank() < 2) throw ValueError(loss + ": the model output " + out.str() + " has no class axis to take class ids for");
  const std::vector<int64_t>& o = out.dims();
  const Shape expected(std::vector<int64_t>(o.begin() + 1, o.end() - 1));
  if (row != expected) {
    const bool one_hot = y_row == out.without_batch();
    throw ValueError(loss + ": targets of shape " + y_shown.str() + (one_hot ? " look one-hot (" : " do not fit (") + "the model output is " +
                     out.str() + "); this loss takes class ids of shape " + expected.with_batch(y_shown.rank() > y_row.rank() ? y_shown[0] : -1).str() +
                     (one_hot ? ". For one-hot targets use losses::CategoricalCrossentropy" : ""));
  }
  return row;
}

// A sparse loss's targets as int class ids: one per prediction row (the output's shape but its class
// axis), each a whole number in [0, classes). Checked once per fit, here where they are converted,
// so the steps read them unchecked; a float label is never truncated into another class.
Tensor class_ids(const std::string& loss, Tensor y, const Shape& out) {
  const Shape row = class_id_row(loss, y.shape().without_batch(), out, y.shape());
  y = y.reshape(row.with_batch(y.shape()[0]));
  const int64_t classes = out.back(), per_row = y.shape()[0] > 0 ? y.size() / y.shape()[0] : 1;
  for (int64_t i = 0; i < y.size(); ++i) check_label(loss, y.item(i), classes, " at row " + std::to_string(i / per_row), out);
  return y.dtype() == DType::I32 || y.dtype() == DType::I64 ? y : y.cast(DType::I32);
}

// The same for streamed targets: a row map that checks each label and converts a row as it is staged.
RowMapper class_id_rows(const std::string& loss, const Shape& out) {
  return [loss, out](const TensorType& in) {
    const Shape row = class_id_row(loss, in.shape, out, in.shape.with_batch(-1));
    const DType to = in.dtype == DType::I32 || in.dtype == DType::I64 ? in.dtype : DType::I32;
    const RowMap as_double = datasets::cast(DType::F64)(TensorType{Shape{}, in.dtype});
    const auto n = static_cast<std::size_t>(row.num_elements());
    const std::size_t from = dtype_size(in.dtype);
    return RowMap{{row, to}, [=](const std::byte* src, std::byte* dst) {
                    for (std::size_t i = 0; i < n; ++i) {
                      double label;
                      as_double.apply(src + i * from, reinterpret_cast<std::byte*>(&label));
                      check_label(loss, label, out.back(), "", out);
                      if (to == DType::I64) {
                        const auto v = static_cast<int64_t>(label);
                        std::memcpy(dst + i * sizeof v, &v, sizeof v);
                      } else {
                        const auto v = static_cast<int32_t>(label);
                        std::memcpy(dst + i * sizeof v, &v, sizeof v);
                      }
                    }
                  }};
  };
}

}  // namespace

void Model::compile(const CompileOptions& o) {
  Impl& m = *impl_;
  const std::size_t n = m.outputs.size();
  if (!o.optimizer.ptr) throw ValueError("compile: an optimizer is required");
  std::vector<LossPtr> losses;
  if (!o.losses.empty()) {
    if (o.loss.ptr) throw ValueError("compile: give either loss (for every output) or losses (one per output), not both");
    if (o.losses.size() != n)
      throw ValueError("compile: losses has " + std::to_string(o.losses.size()) + " entries, the model has " + std::to_string(n) + " outputs");
    for (std::size_t i = 0; i < n; ++i) {
      if (!o.losses[i].ptr) throw ValueError("compile: losses[" + std::to_string(i) + "] (output \"" + m.output_name(i) + "\") is empty");
      losses.push_back(o.losses[i].ptr);
    }
  } else {
    if (!o.loss.ptr) throw ValueError("compile: a loss is required (for example losses::SparseCategoricalCrossentropy())");
    losses.assign(n, o.loss.ptr);
  }
  std::vector<double> weights = o.loss_weights.empty() ? std::vector<double>(n, 1.0) : o.loss_weights;
  if (weights.size() != n)
    throw ValueError("compile: loss_weights has " + std::to_string(weights.size()) + " entries, the model has " + std::to_string(n) + " outputs");
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(weights[i]) || weights[i] < 0)
      throw ValueError("compile: loss_weights[" + std::to_string(i) + "] must be a finite number >= 0, got " + std::to_string(weights[i]));
  std::vector<std::vector<std::string>> metrics(n, o.metrics);
  if (!o.output_metrics.empty()) {
    if (!o.metrics.empty()) throw ValueError("compile: give either metrics (for every output) or output_metrics (one list per output), not both");
    if (o.output_metrics.size() != n)
      throw ValueError("compile: output_metrics has " + std::to_string(o.output_metrics.size()) + " lists, the model has " + std::to_string(n) +
                       " outputs");
    metrics = o.output_metrics;
  }
  for (std::size_t i = 0; i < n; ++i)
    for (const std::string& name : metrics[i]) metrics::check(name, *losses[i]);
  m.optimizer = o.optimizer.ptr;
  // As Keras's compile: a model under mixed_float16 trains with dynamic loss scaling.
  if (m.dtype_policy == "mixed_float16" && !dynamic_cast<const LossScaleOptimizer*>(m.optimizer.get())) {
    auto scaling = optimizers::LossScaleOptimizer(m.optimizer);
    scaling->made_by_compile = true;
    m.optimizer = std::move(scaling);
  }
  m.losses = std::move(losses);
  m.loss_weights = std::move(weights);
  m.metrics = std::move(metrics);
  m.strategy = o.strategy ? o.strategy : distribute::Default();
  m.host_view();  // the values trained so far, before the steps and their devices go
  m.steps.clear();
  m.last_train = nullptr;
  m.homes.clear();
  m.compiled = true;
}

// Checks x against the model's inputs and y against the losses, and converts dtypes once so that
// batches can be copied straight into the step's buffers. A streamed dataset's conversions become
// row maps, run as its batches are staged.
Dataset Model::prepare(const Dataset& data, const char* where) {
  Impl& m = *impl_;
  if (data.size() == 0) throw ValueError(std::string(where) + ": the dataset is empty");
  if (data.num_x() != m.inputs.size() || data.num_y() != m.outputs.size())
    throw ValueError("Model \"" + name() + "\": " + where + " expected " + std::to_string(m.inputs.size()) + " x and " +
                     std::to_string(m.outputs.size()) + " y tensors (one per input and output), got " + std::to_string(data.num_x()) +
                     " and " + std::to_string(data.num_y()));
  const bool streamed = data.streamed();
  std::vector<Tensor> xs = check_inputs(streamed ? std::vector<Tensor>{} : data.xs(), &data);
  Dataset out = streamed ? streamed_inputs(data) : data;
  std::vector<Tensor> ys;
  for (std::size_t o = 0; o < m.outputs.size(); ++o) {
    const Loss& loss = *m.losses[o];
    const std::string target = m.outputs.size() == 1 ? "" : " (output \"" + m.output_name(o) + "\")";
    const Shape shape = m.outputs[o].shape();
    if (data.y_map(o)) {  // its rows become targets as they are staged: only their type can be checked here
      const DType t = data.y_row(o).dtype;
      const bool fits = loss.sparse_targets() ? t == DType::I32 || t == DType::I64 : t == m.outputs[o].dtype();
      if (!fits)
        throw ValueError(loss.name() + target + ": the targets' row map gives " + dtype_name(t) + ", expected " +
                         (loss.sparse_targets() ? std::string("int32 or int64 class ids") : std::string(dtype_name(m.outputs[o].dtype()))));
      if (!streamed) ys.push_back(data.ys()[o]);
    } else if (streamed) {
      if (loss.sparse_targets()) out = out.map_y(class_id_rows(loss.name() + target, shape), o);
      else if (data.y_row(o).dtype != m.outputs[o].dtype()) out = out.map_y(datasets::cast(m.outputs[o].dtype()), o);
    } else if (loss.sparse_targets()) {
      ys.push_back(class_ids(loss.name() + target, data.ys()[o], shape));
    } else {
      const Tensor& y = data.ys()[o];
      ys.push_back(y.dtype() != m.outputs[o].dtype() ? y.cast(m.outputs[o].dtype()) : y);
    }
  }
  return streamed ? out : data.with(std::move(xs), std::move(ys));
}

// A streamed dataset's inputs in the model's dtypes: a cast row map where a column differs.
Dataset Model::streamed_inputs(const Dataset& data) const {
  Dataset out = data;
  for (std::size_t i = 0; i < impl_->inputs.size(); ++i)
    if (!data.x_map(i) && data.x_row(i).dtype != impl_->inputs[i].dtype()) out = out.map_x(datasets::cast(impl_->inputs[i].dtype()), i);
  return out;
}

// With `maps` streamed, xs is empty: its rows' types are checked, and nothing is returned.
std::vector<Tensor> Model::check_inputs(const std::vector<Tensor>& xs, const Dataset* maps) const {
  const Impl& m = *impl_;
  std::vector<Tensor> out;
  const bool streamed = maps && maps->streamed();
  for (std::size_t i = 0; i < m.inputs.size(); ++i) {
    const Shape expected = m.inputs[i].shape();
    const bool mapped = maps && maps->x_map(i);
    const Shape got = mapped || streamed ? maps->x_row(i).shape.with_batch(maps->size()) : xs.at(i).shape();
    const std::string which = (m.inputs.size() == 1 ? std::string("x") : "x[" + std::to_string(i) + "] (input \"" + m.inputs[i].node()->input_name + "\")") +
                              (mapped ? " (as its row map makes it)" : "");
    if (got.rank() < 1 || got.without_batch() != expected.without_batch())
      throw ShapeError("Model \"" + name() + "\": expected input of shape " + expected.str() + ", got " + which + " of shape " + got.str());
    if (mapped && maps->x_row(i).dtype != m.inputs[i].dtype())
      throw ValueError("Model \"" + name() + "\": " + which + " is " + dtype_name(maps->x_row(i).dtype) + ", the input is " +
                       dtype_name(m.inputs[i].dtype()) + "; map it to that dtype");
    if (!streamed) out.push_back(mapped || xs[i].dtype() == m.inputs[i].dtype() ? xs[i] : xs[i].cast(m.inputs[i].dtype()));
  }
  return out;
}

// The step's targets for batches of `rows` rows: every y, then the row weights when there are
// any (an extra y tensor in memory, a computed column when streamed).
static std::vector<TensorType> target_types(const Dataset& d, int64_t rows, bool row_weights = false) {
  std::vector<TensorType> types;
  const std::size_t n = d.streamed() ? d.num_y() : d.ys().size();
  for (std::size_t i = 0; i < n; ++i) types.push_back({d.y_row(i).shape.with_batch(rows), d.y_row(i).dtype});
  if (row_weights) types.push_back({Shape{rows}, DType::F32});
  return types;
}

// One line on standard error when the step waited for input more than a tenth of its time, and
// the samples skip_errors skipped (each epoch that had some).
static void warn_about_input(const data::Batcher& batches, data::Prefetcher& prefetch, const std::string& where, double waited, double total,
                             int64_t steps, bool* warned_wait) {
  std::string first_error;
  if (const int64_t skipped = prefetch.take_skipped(&first_error))
    std::cerr << "UserWarning: " << where << ": skipped " << skipped << " unreadable sample" << (skipped == 1 ? "" : "s") << " of "
              << batches.describe() << " (skip_errors), each replaced by the next readable sample of the epoch's order; the first: "
              << first_error << std::endl;
  // Below half a millisecond a step, a wait is the hand-off between threads, not a slow pipeline.
  if (warned_wait && !*warned_wait && steps > 0 && waited > 0.1 * total && waited > 5e-4 * double(steps)) {
    *warned_wait = true;
    char line[300];
    std::snprintf(line, sizeof line, "the training step waited for input %.0f%% of its time (data_wait %.1f ms of %.1f ms per step)",
                  100.0 * waited / total, 1000.0 * waited / double(steps), 1000.0 * total / double(steps));
    std::cerr << "UserWarning: " << where << ": " << line << " reading " << batches.describe() << " with " << prefetch.threads()
              << " decode thread" << (prefetch.threads() == 1 ? "" : "s")
              << "; give the dataset more (InputPipelineOptions::num_parallel_calls, or AUTOTUNE) or a deeper prefetch" << std::endl;
  }
}

History Model::fit(const Tensor& x, const Tensor& y, const FitOptions& options) { return fit(Dataset(x, y), options); }
History Model::fit(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const FitOptions& options) {
  return fit(Dataset(x, y), options);
}

History Model::fit(const Dataset& input_data, const FitOptions& o) {
  Impl& m = *impl_;
  m.host_view();
  if (!m.compiled) throw ValueError("Model \"" + name() + "\": call compile() before fit()");
  if (o.batch_size < 1) throw ValueError("fit: batch_size must be >= 1, got " + std::to_string(o.batch_size));
  if (o.epochs < 0) throw ValueError("fit: epochs must be >= 0, got " + std::to_string(o.epochs));
  if (!(o.validation_split >= 0.0 && o.validation_split < 1.0))
    throw ValueError("fit: validation_split must be in [0, 1), got " + std::to_string(o.validation_split));
  ensure_built(input_data.x_row().shape, input_data.x_row().dtype);
  if (input_data.streamed() && o.validation_split > 0)
    throw ValueError("fit: validation_split is not supported for a dataset streamed from " + input_data.source()->describe() +
                     " (as Keras refuses it for datasets): give validation_data");
  Dataset data = prepare(input_data, "fit");
  std::optional<Tensor> weights = data.streamed() ? std::nullopt : row_weights(data, o);
  const data::RowWeight row_weight = data.streamed() ? streamed_row_weights(data, o) : nullptr;
  const bool weighted = row_weight != nullptr;  // a computed column (in memory, the weights are a y tensor)
  std::optional<Dataset> validation;
  if (o.validation_data) validation = *o.validation_data;
  if (o.validation_split > 0) {
    const auto split = static_cast<int64_t>(std::floor(double(data.size()) * (1.0 - o.validation_split)));
    if (split < 1 || split == data.size())
      throw ValueError("fit: validation_split " + std::to_string(o.validation_split) + " of " + std::to_string(data.size()) +
                       " rows leaves " + std::to_string(split) + " rows for training and " +
                       std::to_string(data.size() - split) + " for validation; each needs at least 1");
    validation = data.slice(split, data.size());
    data = data.slice(0, split);
    if (weights) weights = weights->rows(0, split);
  }
  if (weights) {  // an extra target column, which the step reads as the loss's row weights
    std::vector<Tensor> ys = data.ys();
    ys.push_back(*weights);
    data = data.with(data.xs(), std::move(ys));
  }

  uint64_t shuffle_seed = next_seed();
  m.strategy->from_chief(&shuffle_seed, sizeof shuffle_seed);  // one shuffle for every worker
  data::Batcher batches(data, o.batch_size, o.shuffle, shuffle_seed, o.transforms, row_weight);
  auto history = std::make_shared<History>();
  std::vector<CallbackPtr> callbacks;
  const int verbose = progress_verbosity(o.verbose, m.strategy.get());
  if (verbose > 0) callbacks.push_back(std::make_shared<ProgbarLogger>(std::cout));
  callbacks.insert(callbacks.end(), o.callbacks.begin(), o.callbacks.end());
  callbacks.push_back(history);
  if (o.steps_per_epoch < 0) throw ValueError("fit: steps_per_epoch must be >= 0 (0: every batch), got " + std::to_string(o.steps_per_epoch));
  const int64_t per_epoch = o.steps_per_epoch > 0 ? std::min(o.steps_per_epoch, batches.num_batches()) : batches.num_batches();
  const TrainParams params{o.epochs, per_epoch, verbose};
  for (auto& c : callbacks) c->set_model(this), c->set_params(params);

  stop_training = false;
  int64_t steps_run = 0;  // in this call, for trace_step
  progress_ = {.epoch = o.initial_epoch, .shuffle_seed = shuffle_seed, .metric_sums = std::vector<double>(m.metric_sums(), 0.0)};
  resume_.reset();
  for (auto& c : callbacks) c->on_train_begin({});
  // A callback (BackupAndRestore) may have asked to continue an interrupted run.
  std::optional<FitProgress> resume = std::exchange(resume_, std::nullopt);
  bool resumed_epoch = resume.has_value();  // the first epoch below continues an interrupted one
  if (resume) {
    const std::string where = "fit: cannot resume at epoch " + std::to_string(resume->epoch + 1) + ", batch " + std::to_string(resume->batch) + ": ";
    if (resume->epoch < 0 || resume->batch < 0 || resume->batch > per_epoch)
      throw ValueError(where + "this fit has " + std::to_string(per_epoch) + " batches per epoch");
    if (resume->metric_sums.size() != m.metric_sums())
      throw ValueError(where + "the saved progress has " + std::to_string(resume->metric_sums.size()) + " metric sums, the model is compiled with " +
                       std::to_string(m.metric_sums()));
    if (resume->shuffle_seed != shuffle_seed) batches = data::Batcher(data, o.batch_size, o.shuffle, resume->shuffle_seed, o.transforms, row_weight);
    history->epoch = std::move(resume->history_epochs);
    history->history = std::move(resume->history);
    progress_ = std::move(*resume);
    progress_.history_epochs.clear(), progress_.history.clear();
  }
  Feeder feeder(batches, true, detail::staging_memory(*m.strategy));
  m.begin_steps();  // after on_train_begin, which may have loaded weights
  int64_t updates = m.optimizer->iterations();  // for a learning-rate schedule; one per step
  const auto slots = m.metric_slots();          // names and sums per metric, once: not per step
  bool warned_wait = false;
  for (int epoch = progress_.epoch; epoch < o.epochs && !stop_training; ++epoch) {
    m.host_view();  // epoch-start callbacks may read or set variables (LearningRateScheduler)
    for (auto& c : callbacks) c->on_epoch_begin(epoch, {});
    m.host_changed();
    const int64_t updates_before = m.optimizer->iterations();  // a LossScaleOptimizer's skipped steps are not updates
    // Which pass over the data this epoch is part of, and its batches of that pass.
    const int64_t epochs_per_pass = (batches.num_batches() + per_epoch - 1) / per_epoch;
    const int64_t first = (epoch % epochs_per_pass) * per_epoch, last = std::min(batches.num_batches(), first + per_epoch);
    feeder.drain();  // the last epoch's gathers ahead of its end read the order start_epoch rewrites
    batches.start_epoch(static_cast<int>(epoch / epochs_per_pass));
    Accumulator acc{0, std::vector<double>(m.metric_sums(), 0.0), 0};
    int64_t done = 0;  // batches of this epoch already run
    if (resumed_epoch) {  // its sums so far, then the rest of its batches
      acc = {progress_.loss_sum, progress_.metric_sums, progress_.rows};
      done = progress_.batch;
      resumed_epoch = false;
    }
    // Looked up once per epoch: the loop below runs compiled steps and nothing else heavy.
    const int64_t full_rows = batches.batch_rows(0), group = m.sync_every();
    m.strategy->check_batch(full_rows);
    CompiledStep& full = m.step(StepKind::Train, full_rows, target_types(data, full_rows, weighted), group);
    feeder.select_rows(*m.strategy, [&](int64_t rows) -> const CompiledStep& {
      return rows == full_rows ? full : m.step(StepKind::Train, rows, target_types(data, rows, weighted), 1);
    });
    feeder.start_epoch(first + done);
    double waited = 0, stepping = 0;  // seconds this epoch: waiting for input, and whole steps
    int64_t epoch_steps = 0;
    // One step runs a group of `group` consecutive batches of equal rows (one batch unless the
    // strategy synchronises every k); an epoch's last batches that do not fill one are a group of
    // their own. The group from batch b: its batch count, and its step.
    auto group_at = [&](int64_t b) {
      const int64_t rows = batches.batch_rows(b);
      int64_t count = 1;
      while (count < group && b + count < last && batches.batch_rows(b + count) == rows) ++count;
      return count;
    };
    auto step_at = [&](int64_t b, int64_t count) -> CompiledStep& {
      const int64_t rows = batches.batch_rows(b);
      return rows == full_rows && count == group ? full : m.step(StepKind::Train, rows, target_types(data, rows, weighted), count);
    };
    bool fed = false;  // the group at b was written while the previous step ran
    for (int64_t b = first + done; b < last;) {
      const int64_t rows = batches.batch_rows(b), count = group_at(b);
      CompiledStep& step = step_at(b, count);
      const auto started = std::chrono::steady_clock::now();
      const bool trace = !o.trace_path.empty() && steps_run == o.trace_step;
      runtime::Tracer& tracer = step.exe->tracer();
      if (trace) tracer.clear(), tracer.enable(true);
      const double feed_begin = trace ? tracer.now() : 0;
      if (!std::exchange(fed, false))
        for (int64_t i = 0; i < count; ++i) feeder.feed(b + i, step, i);
      const double step_wait = feeder.prefetcher().take_wait_seconds();
      if (trace) {  // the wait comes before the copies of each batch; shown as one span, then the copies
        const int track = tracer.track("input pipeline");
        tracer.record(track, "data_wait", feed_begin, feed_begin + step_wait * 1e6);
        tracer.record(track, "copy to devices", feed_begin + step_wait * 1e6, tracer.now());
      }
      for (int64_t i = 0; i < count; ++i)
        for (auto& c : callbacks) c->on_train_batch_begin(b - first + i, {});
      m.before_step();
      if (m.optimizer->follow_schedule(updates)) m.homes.to_devices({m.optimizer->variables()[1]});
      // Where the devices copy asynchronously (GPUs: see runtime::Executable::write_feed), the
      // next group's batches are copied into its inboxes while this step runs. Its step is
      // looked up (compiled) before: compiling reads the variables this step writes. Not for a
      // step that is traced (its trace shows its own input copies), nor across epochs.
      const int64_t next = b + count;
      CompiledStep* next_step = nullptr;
      if (next < last && step.exe->stages_inputs() && !(!o.trace_path.empty() && steps_run + 1 == o.trace_step)) {
        CompiledStep& s = step_at(next, group_at(next));
        if (s.exe->stages_inputs()) next_step = &s;
      }
      if (next_step) {
        step.exe->run([&] {
          for (int64_t i = 0, n = group_at(next); i < n; ++i) feeder.feed(next + i, *next_step, i);
          fed = true;
        });
        // The next step's data_wait: none when the wait was hidden behind this step.
        if (step.exe->meanwhile_hidden()) feeder.prefetcher().take_wait_seconds();
      } else {
        step.exe->run();
      }
      ++updates;
      m.after_step(true);
      if (trace) step.exe->tracer().enable(false), step.exe->tracer().write_json(o.trace_path);
      ++steps_run;
      acc.add(step.scalars(), rows * count);
      waited += step_wait, ++epoch_steps;
      stepping += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      // The group's batches are done together: the progress a callback saves is the group's end.
      progress_.batch = b + count - first, progress_.steps += count;
      progress_.loss_sum = acc.loss, progress_.metric_sums = acc.metric_sums, progress_.rows = acc.rows;
      Logs logs = acc.logs(slots);
      if (data.streamed()) logs["data_wait"] = 1000.0 * waited / double(epoch_steps);  // ms per step
      for (int64_t i = 0; i < count; ++i)
        for (auto& c : callbacks) c->on_train_batch_end(b - first + i, logs);
      b += count;
      if (stop_training) break;
    }
    m.last_train = &full;
    Logs logs = acc.logs(slots);
    if (data.streamed()) {
      if (epoch_steps) logs["data_wait"] = 1000.0 * waited / double(epoch_steps);
      warn_about_input(batches, feeder.prefetcher(), "fit: epoch " + std::to_string(epoch + 1), waited, stepping, epoch_steps, &warned_wait);
    }
    if (validation) {
      const Logs val = evaluate(*validation, {.batch_size = o.batch_size, .verbose = 0});
      for (const auto& [k, v] : val) logs["val_" + k] = v;
    }
    m.host_view();  // callbacks read the weights (a checkpoint, a layer's get_weights)
    if (dynamic_cast<const LossScaleOptimizer*>(m.optimizer.get()))
      logs["skipped_steps"] = static_cast<double>(epoch_steps - (m.optimizer->iterations() - updates_before));
    for (auto& c : callbacks) c->add_epoch_logs(epoch, logs);
    for (auto& c : callbacks) c->on_epoch_end(epoch, logs);
    m.host_changed();  // and may have written them
    progress_ = {.epoch = epoch + 1, .steps = progress_.steps, .shuffle_seed = progress_.shuffle_seed,
                 .metric_sums = std::vector<double>(m.metric_sums(), 0.0)};
  }
  m.host_view();
  for (auto& c : callbacks) c->on_train_end({});
  return *history;
}

Logs Model::evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options) { return evaluate(Dataset(x, y), options); }
Logs Model::evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const EvaluateOptions& options) {
  return evaluate(Dataset(x, y), options);
}

Logs Model::evaluate(const Dataset& input_data, const EvaluateOptions& o) {
  Impl& m = *impl_;
  m.settle_steps();
  if (!m.compiled) throw ValueError("Model \"" + name() + "\": call compile() before evaluate()");
  if (o.batch_size < 1) throw ValueError("evaluate: batch_size must be >= 1, got " + std::to_string(o.batch_size));
  ensure_built(input_data.x_row().shape, input_data.x_row().dtype);
  const Dataset data = prepare(input_data, "evaluate");
  data::Batcher batches(data, o.batch_size, false, 0);
  Feeder feeder(batches, true, detail::staging_memory(*m.strategy));
  m.begin_steps();
  feeder.select_rows(*m.strategy, [&](int64_t rows) -> const CompiledStep& { return m.step(StepKind::Test, rows, target_types(data, rows)); });
  feeder.start_epoch();
  const std::vector<CallbackPtr> callbacks =
      detail::loop_callbacks(o.callbacks, progress_verbosity(o.verbose, m.strategy.get()), batches.num_batches(), this);
  for (auto& c : callbacks) c->on_test_begin({});
  const auto slots = m.metric_slots();
  Accumulator acc{0, std::vector<double>(m.metric_sums(), 0.0), 0};
  bool fed = false;  // batch b was written while the previous step ran
  for (int64_t b = 0; b < batches.num_batches(); ++b) {
    const int64_t rows = batches.batch_rows(b);
    CompiledStep& step = m.step(StepKind::Test, rows, target_types(data, rows));
    for (auto& c : callbacks) c->on_test_batch_begin(b, {});
    if (!std::exchange(fed, false)) feeder.feed(b, step);
    detail::run_feeding_next(step, feeder, b + 1, b + 1 < batches.num_batches() ? [&]() -> CompiledStep& {
      const int64_t next_rows = batches.batch_rows(b + 1);
      return m.step(StepKind::Test, next_rows, target_types(data, next_rows));
    } : std::function<CompiledStep&()>(), fed);
    m.after_step(false);
    acc.add(step.scalars(), rows);
    const Logs logs = acc.logs(slots);
    for (auto& c : callbacks) c->on_test_batch_end(b, logs);
  }
  const Logs logs = acc.logs(slots);
  if (data.streamed()) warn_about_input(batches, feeder.prefetcher(), "evaluate", 0, 0, 0, nullptr);
  for (auto& c : callbacks) c->on_test_end(logs);
  return logs;
}

}  // namespace tandem
