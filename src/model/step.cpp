// Builds the graph of one step (train, test or predict) for one batch size, lowers it with the
// model's strategy and binds it to memory. Cached: each batch size is compiled once.
#include <numeric>
#include <unordered_map>

#include "autodiff/autodiff.h"
#include "distribute/strategy.h"
#include "metrics/metrics.h"
#include "model/call_context.h"
#include "model/model_impl.h"
#include "ops/ops.h"
#include "runtime/devices.h"

namespace tandem {

namespace {
graph::Value mean_over_all(graph::Graph& g, graph::Value v, double count) {
  std::vector<int64_t> axes(static_cast<std::size_t>(g.type(v).shape.rank()));
  std::iota(axes.begin(), axes.end(), 0);
  return ops::scale(g, ops::reduce_sum(g, v, axes), 1.0 / count);
}

graph::Value sum_over_all(graph::Graph& g, graph::Value v) {
  std::vector<int64_t> axes(static_cast<std::size_t>(g.type(v).shape.rank()));
  std::iota(axes.begin(), axes.end(), 0);
  return ops::reduce_sum(g, v, axes);
}
}  // namespace

CompiledStep& Model::Impl::step(StepKind kind, int64_t batch, const TensorType& y_type) {
  const auto key = std::make_pair(kind, batch);
  if (auto it = steps.find(key); it != steps.end()) return it->second;

  graph::Graph g;
  const bool train = kind == StepKind::Train;
  const graph::Value counter = train ? g.variable({optimizer->variables()[0]->id(), optimizer->variables()[0]->path(),
                                                   optimizer->variables()[0]->value().type(), false})
                                     : ops::fill(g, {Shape{}, DType::I64}, 0);
  const graph::Value x = g.placeholder("x", {input.shape().without_batch().with_batch(batch), input.dtype()});
  CallContext ctx(g, train, counter);
  const graph::Value pred = trace(ctx, x);

  CompiledStep step;
  std::vector<graph::Value> fetches;
  if (kind == StepKind::Predict) {
    step.output = 0;
    fetches.push_back(pred);
  } else {
    const graph::Value y = g.placeholder("y", y_type);
    graph::Value loss_value;
    {
      graph::ScopeGuard scope(g, "loss");
      const graph::Value per = loss->per_sample(g, pred, y);
      // Keras's "sum_over_batch_size": the mean over every per-sample loss element.
      loss_value = mean_over_all(g, per, static_cast<double>(g.type(per).shape.num_elements()));
    }
    step.loss = 0;
    fetches.push_back(loss_value);
    {
      graph::ScopeGuard phase(g, graph::Phase::Metric);
      for (const std::string& m : metrics) {
        graph::ScopeGuard scope(g, m);
        step.metrics.push_back(static_cast<int>(fetches.size()));
        graph::Value per = metrics::per_sample(g, m, *loss, pred, y);
        // Per-row metrics of rank > 1 (sequence outputs) average within the row first.
        const Shape& ps = g.type(per).shape;
        if (ps.rank() > 1) per = ops::scale(g, ops::reduce_sum(g, ops::reshape(g, per, {ps[0], ps.num_elements() / ps[0]}), {1}), double(ps[0]) / double(ps.num_elements()));
        fetches.push_back(sum_over_all(g, per));
      }
    }
    if (train) {
      std::vector<VariablePtr> trainable;
      std::vector<graph::Value> wrt;
      for (const VariablePtr& w : weights())
        if (w->trainable()) trainable.push_back(w), wrt.push_back(ctx.variable(*w));
      const std::vector<graph::Value> grads = autodiff::gradients(g, loss_value, wrt);
      optimizer->emit_updates(g, trainable, grads);
    }
  }

  auto plan = std::make_shared<compile::Plan>(strategy->lower(g, fetches));
  std::unordered_map<int, VariablePtr> vars;  // bind time only
  for (const VariablePtr& w : weights()) vars[w->id()] = w;
  if (optimizer)
    for (const VariablePtr& v : optimizer->variables()) vars[v->id()] = v;
  const auto devices = strategy->devices();
  step.exe = std::make_unique<runtime::Executable>(
      plan, [&](int p) { return runtime::device_context(devices[static_cast<std::size_t>(p)]); },
      [&](int, int id) { return vars.at(id)->value().raw(); });
  step.x = step.exe->feed(0, "x");
  if (kind != StepKind::Predict) step.y = step.exe->feed(0, "y");
  if (train) last_arena_bytes = step.exe->arena_bytes(0);
  return steps.emplace(key, std::move(step)).first->second;
}

}  // namespace tandem
