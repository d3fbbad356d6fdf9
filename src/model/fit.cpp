// compile, fit, evaluate and predict: the loops around compiled steps.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "data/batcher.h"
#include "data/prefetcher.h"
#include "layer_base/initializers.h"
#include "metrics/metrics.h"
#include "distribute/strategy.h"
#include "model/model_impl.h"
#include "tandem/errors.h"

namespace tandem {

namespace {
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
  Logs logs(const std::vector<std::string>& names, const std::string& prefix = "") const {
    Logs l{{prefix + "loss", rows ? loss / double(rows) : 0.0}};
    for (std::size_t i = 0; i < names.size(); ++i) l[prefix + names[i]] = rows ? metric_sums[i] / double(rows) : 0.0;
    return l;
  }
};

// verbose 1's live bar redraws its line with carriage returns, which in a log file or a pipe is
// one long line of repeats: there, as Keras's verbose="auto" does, it prints one line per epoch.
// Of several workers, only the chief prints.
int progress_verbosity(int verbose, const distribute::Strategy* strategy) {
  if (strategy && strategy->workers() > 1 && !distribute::this_worker().chief()) return 0;
  return verbose == 1 && !isatty(fileno(stdout)) ? 2 : verbose;
}

// Copies batch b, staged by the prefetch thread, into the step's inputs: each device gets the
// rows of the batch its program reads.
class Feeder {
 public:
  Feeder(const data::Batcher& batches, const Dataset& data, bool with_targets)
      : x_row_(row_bytes(data.x())), y_row_(with_targets ? row_bytes(data.y()) : 0), prefetch_(batches, x_row_, y_row_) {}
  void start_epoch() { prefetch_.start_epoch(); }
  void skip(int64_t b) {  // batch b is not run (a resumed epoch's batches done before)
    prefetch_.x(b);
    prefetch_.release(b);
  }
  // Batch b as the index-th batch of the step.
  void feed(int64_t b, const CompiledStep& step, int64_t index = 0) {
    step.write(step.x, prefetch_.x(b), x_row_, index);
    if (y_row_) step.write(step.y, prefetch_.y(b), y_row_, index);
    prefetch_.release(b);
  }

 private:
  static std::size_t row_bytes(const Tensor& t) { return t.shape()[0] ? t.bytes() / static_cast<std::size_t>(t.shape()[0]) : 0; }
  std::size_t x_row_, y_row_;
  data::Prefetcher prefetch_;
};
}  // namespace

void Model::compile(const CompileOptions& o) {
  Impl& m = *impl_;
  if (!o.optimizer.ptr) throw ValueError("compile: an optimizer is required");
  if (!o.loss.ptr) throw ValueError("compile: a loss is required (for example losses::SparseCategoricalCrossentropy())");
  for (const std::string& name : o.metrics) metrics::check(name, *o.loss.ptr);
  m.optimizer = o.optimizer.ptr;
  m.loss = o.loss.ptr;
  m.metrics = o.metrics;
  m.strategy = o.strategy ? o.strategy : distribute::Default();
  m.host_view();  // the values trained so far, before the steps and their devices go
  m.steps.clear();
  m.homes.clear();
  m.compiled = true;
}

// Checks x against the model's input and y against the loss, and converts dtypes once so that
// batches can be copied straight into the step's buffers.
Dataset Model::prepare(const Dataset& data, const char* where) {
  Impl& m = *impl_;
  Model& model = *this;
  if (data.size() == 0) throw ValueError(std::string(where) + ": the dataset is empty");
  const Shape expected = m.input.shape();
  const Shape got = data.x().shape();
  if (got.without_batch() != expected.without_batch())
    throw ShapeError("Model \"" + model.name() + "\": expected input of shape " + expected.str() + ", got x of shape " + got.str());
  Tensor x = data.x().dtype() == m.input.dtype() ? data.x() : data.x().cast(m.input.dtype());
  Tensor y = data.y();
  const Shape out = m.output.shape();
  if (m.loss->sparse_targets()) {
    if (y.dtype() != DType::I32 && y.dtype() != DType::I64) y = y.cast(DType::I32);
    if (y.shape().rank() == out.rank() && y.shape().back() == 1)  // (N, 1) class ids -> (N,)
      y = y.reshape(Shape(std::vector<int64_t>(y.shape().dims().begin(), y.shape().dims().end() - 1)));
    const int64_t classes = out.back();
    for (int64_t i = 0; i < y.size(); ++i) {
      const double label = y.item(i);
      if (label < 0 || label >= double(classes))
        throw ValueError(m.loss->name() + ": label " + std::to_string(int64_t(label)) + " at row " + std::to_string(i) +
                         " is out of range [0, " + std::to_string(classes) + ") for model output " + out.str());
    }
  } else if (y.dtype() != m.output.dtype()) {
    y = y.cast(m.output.dtype());
  }
  return Dataset(x, y);
}

static TensorType target_type(const Dataset& d, int64_t rows) { return {d.y().shape().without_batch().with_batch(rows), d.y().dtype()}; }

History Model::fit(const Tensor& x, const Tensor& y, const FitOptions& options) { return fit(Dataset(x, y), options); }

History Model::fit(const Dataset& input_data, const FitOptions& o) {
  Impl& m = *impl_;
  m.host_view();
  if (!m.compiled) throw ValueError("Model \"" + name() + "\": call compile() before fit()");
  if (o.batch_size < 1) throw ValueError("fit: batch_size must be >= 1, got " + std::to_string(o.batch_size));
  if (o.epochs < 0) throw ValueError("fit: epochs must be >= 0, got " + std::to_string(o.epochs));
  if (!(o.validation_split >= 0.0 && o.validation_split < 1.0))
    throw ValueError("fit: validation_split must be in [0, 1), got " + std::to_string(o.validation_split));
  ensure_built(input_data.x().shape().without_batch(), input_data.x().dtype());
  Dataset data = prepare(input_data, "fit");
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
  }

  uint64_t shuffle_seed = next_seed();
  m.strategy->from_chief(&shuffle_seed, sizeof shuffle_seed);  // one shuffle for every worker
  data::Batcher batches(data, o.batch_size, o.shuffle, shuffle_seed, o.transforms);
  auto history = std::make_shared<History>();
  std::vector<CallbackPtr> callbacks;
  const int verbose = progress_verbosity(o.verbose, m.strategy.get());
  if (verbose > 0) callbacks.push_back(std::make_shared<ProgbarLogger>(std::cout));
  callbacks.insert(callbacks.end(), o.callbacks.begin(), o.callbacks.end());
  callbacks.push_back(history);
  const TrainParams params{o.epochs, batches.num_batches(), verbose};
  for (auto& c : callbacks) c->set_model(this), c->set_params(params);

  stop_training = false;
  int64_t steps_run = 0;  // in this call, for trace_step
  progress_ = {.epoch = o.initial_epoch, .shuffle_seed = shuffle_seed, .metric_sums = std::vector<double>(m.metrics.size(), 0.0)};
  resume_.reset();
  for (auto& c : callbacks) c->on_train_begin({});
  // A callback (BackupAndRestore) may have asked to continue an interrupted run.
  std::optional<FitProgress> resume = std::exchange(resume_, std::nullopt);
  bool resumed_epoch = resume.has_value();  // the first epoch below continues an interrupted one
  if (resume) {
    const std::string where = "fit: cannot resume at epoch " + std::to_string(resume->epoch + 1) + ", batch " + std::to_string(resume->batch) + ": ";
    if (resume->epoch < 0 || resume->batch < 0 || resume->batch > batches.num_batches())
      throw ValueError(where + "this fit has " + std::to_string(batches.num_batches()) + " batches per epoch");
    if (resume->metric_sums.size() != m.metrics.size())
      throw ValueError(where + "the saved progress has " + std::to_string(resume->metric_sums.size()) + " metrics, the model is compiled with " +
                       std::to_string(m.metrics.size()));
    if (resume->shuffle_seed != shuffle_seed) batches = data::Batcher(data, o.batch_size, o.shuffle, resume->shuffle_seed, o.transforms);
    history->epoch = std::move(resume->history_epochs);
    history->history = std::move(resume->history);
    progress_ = std::move(*resume);
    progress_.history_epochs.clear(), progress_.history.clear();
  }
  Feeder feeder(batches, data, true);
  m.begin_steps();  // after on_train_begin, which may have loaded weights
  int64_t updates = m.optimizer->iterations();  // for a learning-rate schedule; one per step
  for (int epoch = progress_.epoch; epoch < o.epochs && !stop_training; ++epoch) {
    m.host_view();  // epoch-start callbacks may read or set variables (LearningRateScheduler)
    for (auto& c : callbacks) c->on_epoch_begin(epoch, {});
    m.host_changed();
    batches.start_epoch(epoch);
    feeder.start_epoch();
    Accumulator acc{0, std::vector<double>(m.metrics.size(), 0.0), 0};
    int64_t first_batch = 0;
    if (resumed_epoch) {  // its sums so far, then the rest of its batches
      acc = {progress_.loss_sum, progress_.metric_sums, progress_.rows};
      first_batch = progress_.batch;
      for (int64_t b = 0; b < first_batch; ++b) feeder.skip(b);
      resumed_epoch = false;
    }
    // Looked up once per epoch: the loop below runs compiled steps and nothing else heavy.
    const int64_t full_rows = batches.batch_rows(0), group = m.sync_every();
    m.strategy->check_batch(o.batch_size);
    CompiledStep& full = m.step(StepKind::Train, full_rows, target_type(data, full_rows), group);
    for (int64_t b = first_batch; b < batches.num_batches();) {
      // One step runs a group of `group` consecutive batches of equal rows (one batch unless the
      // strategy synchronises every k); an epoch's last batches that do not fill one are a
      // group of their own.
      const int64_t rows = batches.batch_rows(b);
      int64_t count = 1;
      while (count < group && b + count < batches.num_batches() && batches.batch_rows(b + count) == rows) ++count;
      CompiledStep& step = rows == full_rows && count == group ? full : m.step(StepKind::Train, rows, target_type(data, rows), count);
      for (int64_t i = 0; i < count; ++i) feeder.feed(b + i, step, i);
      for (int64_t i = 0; i < count; ++i)
        for (auto& c : callbacks) c->on_train_batch_begin(b + i, {});
      const bool trace = !o.trace_path.empty() && steps_run == o.trace_step;
      if (trace) step.exe->tracer().clear(), step.exe->tracer().enable(true);
      m.before_step();
      if (m.optimizer->follow_schedule(updates)) m.homes.to_devices({m.optimizer->variables()[1]});
      step.exe->run();
      ++updates;
      m.after_step(true);
      if (trace) step.exe->tracer().enable(false), step.exe->tracer().write_json(o.trace_path);
      ++steps_run;
      acc.add(step.scalars(), rows * count);
      // The group's batches are done together: the progress a callback saves is the group's end.
      progress_.batch = b + count, progress_.steps += count;
      progress_.loss_sum = acc.loss, progress_.metric_sums = acc.metric_sums, progress_.rows = acc.rows;
      const Logs logs = acc.logs(m.metrics);
      for (int64_t i = 0; i < count; ++i)
        for (auto& c : callbacks) c->on_train_batch_end(b + i, logs);
      b += count;
      if (stop_training) break;
    }
    m.last_arena_bytes = full.exe->arena_bytes(0);
    Logs logs = acc.logs(m.metrics);
    if (validation) {
      const Logs val = evaluate(*validation, {.batch_size = o.batch_size, .verbose = 0});
      for (const auto& [k, v] : val) logs["val_" + k] = v;
    }
    m.host_view();  // callbacks read the weights (a checkpoint, a layer's get_weights)
    for (auto& c : callbacks) c->on_epoch_end(epoch, logs);
    m.host_changed();  // and may have written them
    progress_ = {.epoch = epoch + 1, .steps = progress_.steps, .shuffle_seed = progress_.shuffle_seed,
                 .metric_sums = std::vector<double>(m.metrics.size(), 0.0)};
  }
  m.host_view();
  for (auto& c : callbacks) c->on_train_end({});
  return *history;
}

Logs Model::evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options) { return evaluate(Dataset(x, y), options); }

Logs Model::evaluate(const Dataset& input_data, const EvaluateOptions& o) {
  Impl& m = *impl_;
  m.settle_steps();
  if (!m.compiled) throw ValueError("Model \"" + name() + "\": call compile() before evaluate()");
  if (o.batch_size < 1) throw ValueError("evaluate: batch_size must be >= 1, got " + std::to_string(o.batch_size));
  ensure_built(input_data.x().shape().without_batch(), input_data.x().dtype());
  const Dataset data = prepare(input_data, "evaluate");
  data::Batcher batches(data, o.batch_size, false, 0);
  Feeder feeder(batches, data, true);
  feeder.start_epoch();
  m.begin_steps();
  std::vector<CallbackPtr> callbacks = o.callbacks;
  const int verbose = progress_verbosity(o.verbose, m.strategy.get());
  if (verbose > 0) {
    auto bar = std::make_shared<ProgbarLogger>(std::cout);
    bar->set_test_steps(batches.num_batches());
    callbacks.insert(callbacks.begin(), bar);
  }
  for (auto& c : callbacks) c->set_model(this), c->set_params({1, batches.num_batches(), verbose});
  for (auto& c : callbacks) c->on_test_begin({});
  Accumulator acc{0, std::vector<double>(m.metrics.size(), 0.0), 0};
  for (int64_t b = 0; b < batches.num_batches(); ++b) {
    const int64_t rows = batches.batch_rows(b);
    CompiledStep& step = m.step(StepKind::Test, rows, target_type(data, rows));
    feeder.feed(b, step);
    step.exe->run();
    m.after_step(false);
    acc.add(step.scalars(), rows);
    const Logs logs = acc.logs(m.metrics);
    for (auto& c : callbacks) c->on_test_batch_end(b, logs);
  }
  const Logs logs = acc.logs(m.metrics);
  for (auto& c : callbacks) c->on_test_end(logs);
  return logs;
}

Tensor Model::predict(const Tensor& x_in, const PredictOptions& o) {
  Impl& m = *impl_;
  m.settle_steps();
  if (o.batch_size < 1) throw ValueError("predict: batch_size must be >= 1, got " + std::to_string(o.batch_size));
  if (x_in.shape().rank() < 1) throw ShapeError("predict: x must have a batch dimension, got shape " + x_in.shape().str());
  ensure_built(x_in.shape().without_batch(), x_in.dtype());
  if (!m.strategy) m.strategy = distribute::Default();
  if (x_in.shape().without_batch() != m.input.shape().without_batch())
    throw ShapeError("Model \"" + name() + "\": expected input of shape " + m.input.shape().str() + ", got x of shape " + x_in.shape().str());
  const Tensor x = x_in.dtype() == m.input.dtype() ? x_in : x_in.cast(m.input.dtype());
  const Dataset data(x, Tensor(Shape{x.shape()[0]}, DType::I32));
  data::Batcher batches(data, o.batch_size, false, 0);
  Feeder feeder(batches, data, false);
  feeder.start_epoch();
  m.begin_steps();
  Tensor result(m.output.shape().without_batch().with_batch(x.shape()[0]), m.output.dtype());
  std::shared_ptr<ProgbarLogger> bar;
  if (const int verbose = progress_verbosity(o.verbose, m.strategy.get()); verbose > 0) {
    bar = std::make_shared<ProgbarLogger>(std::cout);
    bar->set_test_steps(batches.num_batches());
    bar->set_model(this);
    bar->set_params({1, batches.num_batches(), verbose});
    bar->on_predict_begin({});
  }
  std::size_t offset = 0;
  for (int64_t b = 0; b < batches.num_batches(); ++b) {
    const int64_t rows = batches.batch_rows(b);
    CompiledStep& step = m.step(StepKind::Predict, rows, {});
    feeder.feed(b, step);
    step.exe->run();
    const std::size_t row_bytes = result.bytes() / static_cast<std::size_t>(std::max<int64_t>(1, x.shape()[0]));
    step.read_rows(step.output, static_cast<std::byte*>(result.raw()) + offset, row_bytes, rows);
    offset += row_bytes * static_cast<std::size_t>(rows);
    if (bar) bar->on_predict_batch_end(b, {});
  }
  if (bar) bar->on_predict_end({});
  return result;
}

}  // namespace tandem
