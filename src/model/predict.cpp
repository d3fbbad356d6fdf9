// predict, and the *_on_batch calls, which run fit, evaluate and predict on a single batch.
#include <algorithm>

#include "model/feeder.h"
#include "model/model_impl.h"
#include "tandem/errors.h"

namespace tandem {

using detail::Feeder;
using detail::progress_verbosity;

Tensor Model::predict(const Tensor& x, const PredictOptions& o) {
  if (x.shape().rank() < 1) throw ShapeError("predict: x must have a batch dimension, got shape " + x.shape().str());
  ensure_built(x.shape().without_batch(), x.dtype());
  const Impl& m = *impl_;
  if (m.inputs.size() != 1 || m.outputs.size() != 1)
    throw ValueError("Model \"" + name() + "\": predict(x) is for one input and one output; the model has " + std::to_string(m.inputs.size()) +
                     " inputs and " + std::to_string(m.outputs.size()) + " outputs: call predict({x0, x1, ...})");
  return predict(std::vector<Tensor>{x}, o).front();
}

std::vector<Tensor> Model::predict(const std::vector<Tensor>& x_in, const PredictOptions& o) {
  if (x_in.empty()) throw ValueError("predict: no x given");
  for (const Tensor& t : x_in)
    if (t.shape().rank() < 1) throw ShapeError("predict: x must have a batch dimension, got shape " + t.shape().str());
  // An unused target column, as every Dataset has one; the feeder does not stage it.
  return predict_dataset(Dataset(x_in, {Tensor(Shape{x_in[0].shape()[0]}, DType::I32)}), o);
}

std::vector<Tensor> Model::predict_dataset(const Dataset& input, const PredictOptions& o) {
  Impl& m = *impl_;
  m.settle_steps();
  if (o.batch_size < 1) throw ValueError("predict: batch_size must be >= 1, got " + std::to_string(o.batch_size));
  ensure_built(input.x_row().shape, input.x_row().dtype);
  if (!m.strategy) m.strategy = distribute::Default();
  if (input.num_x() != m.inputs.size())
    throw ValueError("Model \"" + name() + "\": predict expected " + std::to_string(m.inputs.size()) + " x tensors (one per input), got " +
                     std::to_string(input.num_x()));
  const int64_t n = input.size();
  const Dataset data = input.streamed() ? (check_inputs({}, &input), streamed_inputs(input)) : input.with(check_inputs(input.xs(), &input), input.ys());
  data::Batcher batches(data, o.batch_size, false, 0);
  Feeder feeder(batches, false, detail::staging_memory(*m.strategy));
  m.begin_steps();
  feeder.select_rows(*m.strategy, [&](int64_t rows) -> const CompiledStep& { return m.step(StepKind::Predict, rows, {}); });
  feeder.start_epoch();
  std::vector<Tensor> results;
  for (const Symbol& out : m.outputs) results.emplace_back(out.shape().without_batch().with_batch(n), out.dtype());
  const std::vector<CallbackPtr> callbacks =
      detail::loop_callbacks(o.callbacks, progress_verbosity(o.verbose, m.strategy.get()), batches.num_batches(), this);
  for (auto& c : callbacks) c->on_predict_begin({});
  int64_t done = 0;
  bool fed = false;  // batch b was written while the previous step ran
  for (int64_t b = 0; b < batches.num_batches(); ++b) {
    const int64_t rows = batches.batch_rows(b);
    CompiledStep& step = m.step(StepKind::Predict, rows, {});
    for (auto& c : callbacks) c->on_predict_batch_begin(b, {});
    if (!std::exchange(fed, false)) feeder.feed(b, step);
    detail::run_feeding_next(step, feeder, b + 1, b + 1 < batches.num_batches() ? [&]() -> CompiledStep& {
      return m.step(StepKind::Predict, batches.batch_rows(b + 1), {});
    } : std::function<CompiledStep&()>(), fed);
    for (std::size_t i = 0; i < results.size(); ++i) {
      const std::size_t row_bytes = results[i].bytes() / static_cast<std::size_t>(std::max<int64_t>(1, n));
      step.read_rows(step.outputs[i], static_cast<std::byte*>(results[i].raw()) + row_bytes * static_cast<std::size_t>(done), row_bytes, rows);
    }
    done += rows;
    for (auto& c : callbacks) c->on_predict_batch_end(b, {});
  }
  for (auto& c : callbacks) c->on_predict_end({});
  return results;
}

// The batch is a dataset of one batch: the loops above run it as Keras runs its *_on_batch.
Logs Model::train_on_batch(const Tensor& x, const Tensor& y) { return train_on_batch(std::vector<Tensor>{x}, std::vector<Tensor>{y}); }
Logs Model::train_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y) {
  const Dataset batch(x, y);
  const History h = fit(batch, {.epochs = 1, .batch_size = std::max<int64_t>(1, batch.size()), .shuffle = false, .verbose = 0});
  Logs logs;
  for (const auto& [key, values] : h.history) logs[key] = values.back();
  return logs;
}
Logs Model::test_on_batch(const Tensor& x, const Tensor& y) { return test_on_batch(std::vector<Tensor>{x}, std::vector<Tensor>{y}); }
Logs Model::test_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y) {
  const Dataset batch(x, y);
  return evaluate(batch, {.batch_size = std::max<int64_t>(1, batch.size()), .verbose = 0});
}
Tensor Model::predict_on_batch(const Tensor& x) {
  return predict(x, {.batch_size = x.shape().rank() > 0 ? std::max<int64_t>(1, x.shape()[0]) : 1});
}
std::vector<Tensor> Model::predict_on_batch(const std::vector<Tensor>& x) {
  return predict(x, {.batch_size = !x.empty() && x[0].shape().rank() > 0 ? std::max<int64_t>(1, x[0].shape()[0]) : 1});
}

}  // namespace tandem
