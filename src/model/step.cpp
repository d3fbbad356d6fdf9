// Builds the graph of one step (train, test or predict) for one global batch size, has the
// strategy lower it to per-device programs and binds them to memory. Cached per batch size.
#include <numeric>
#include <unordered_map>

#include "autodiff/autodiff.h"
#include "distribute/strategy.h"
#include "layer_base/call_context.h"
#include "metrics/metrics.h"
#include "model/model_impl.h"
#include "ops/ops.h"
#include "backend/device.h"
#include "tandem/errors.h"

namespace tandem {

namespace {
graph::Value sum_over_all(graph::Graph& g, graph::Value v) {
  std::vector<int64_t> axes(static_cast<std::size_t>(g.type(v).shape.rank()));
  std::iota(axes.begin(), axes.end(), 0);
  return ops::reduce_sum(g, v, axes);
}

graph::Value read(graph::Graph& g, const Variable& v) { return g.variable({v.id(), v.path(), v.value().type(), v.trainable()}); }
}  // namespace

double CompiledStep::scalar(int fetch) const {
  const compile::FetchSite& site = exe->plan().fetches[static_cast<std::size_t>(fetch)];
  double s = 0;
  for (int p : site.programs) {
    float v = 0;
    exe->copy_fetch(p, fetch, &v, sizeof v);
    s += v;
    if (!site.layout.is_partial()) break;  // every program holds all of it
  }
  return s;
}

void CompiledStep::write(const std::vector<Feed>& to, const std::byte* batch, std::size_t row_bytes) const {
  for (std::size_t p = 0; p < to.size(); ++p)
    if (to[p].at)
      exe->device(static_cast<int>(p)).copy_in(to[p].at, batch + static_cast<std::size_t>(to[p].offset) * row_bytes,
                                                 static_cast<std::size_t>(to[p].rows) * row_bytes);
}

void CompiledStep::read_rows(int fetch, std::byte* host, std::size_t row_bytes, int64_t rows) const {
  const compile::FetchSite& site = exe->plan().fetches[static_cast<std::size_t>(fetch)];
  if (!site.layout.is_split()) {
    exe->copy_fetch(site.programs.front(), fetch, host, row_bytes * static_cast<std::size_t>(rows));
    return;
  }
  if (site.layout.axis != 0) throw Error("internal: a per-row fetch split along axis " + std::to_string(site.layout.axis));
  for (std::size_t i = 0; i < site.programs.size(); ++i)  // the blocks of rows, in order
    exe->copy_fetch(site.programs[i], fetch, host + static_cast<std::size_t>(site.layout.offset(static_cast<int>(i))) * row_bytes,
                    static_cast<std::size_t>(site.layout.shares[i]) * row_bytes);
}

int Model::Impl::accumulation_steps() const { return strategy ? strategy->sync_every() : 1; }

bool Model::Impl::next_step_syncs() const {
  const int k = accumulation_steps();
  if (k == 1) return true;
  homes.to_host(*micro_step);  // the devices count the steps
  return (micro_step->value().data<int64_t>()[0] + 1) % k == 0;
}

std::vector<VariablePtr> Model::Impl::all_variables() const {
  std::vector<VariablePtr> vars = weights();
  if (optimizer)
    for (const VariablePtr& v : optimizer->variables()) vars.push_back(v);
  for (const VariablePtr& a : accumulators) vars.push_back(a);
  if (micro_step) vars.push_back(micro_step);
  return vars;
}

std::unordered_map<int, VariablePtr> Model::Impl::variables_by_id() const {
  std::unordered_map<int, VariablePtr> vars;
  for (const VariablePtr& v : all_variables()) vars[v->id()] = v;
  return vars;
}

void Model::Impl::settle_steps() {
  for (auto& [key, step] : steps) step.exe->settle();
}

void Model::Impl::host_view() {
  settle_steps();
  if (!devices_newer) return;
  homes.to_host(all_variables());
  devices_newer = false;
}

void Model::Impl::begin_steps() {
  host_view();
  homes.to_devices(all_variables());
  host_newer = false;
}

void Model::Impl::before_step() {
  if (!host_newer) return;
  homes.to_devices(all_variables());
  host_newer = false;
}

// Between synchronisations the gradients are added to the accumulators; the synchronising step
// updates with (accumulated + current) / k — the mean gradient over the k batches — and clears them.
void Model::Impl::emit_accumulation(graph::Graph& g, bool sync, const std::vector<VariablePtr>& trainable,
                                    const std::vector<graph::Value>& grads, graph::Value counter) {
  const int k = accumulation_steps();
  graph::ScopeGuard phase(g, graph::Phase::Update);
  std::vector<VariablePtr> vars;
  std::vector<graph::Value> totals;
  std::vector<int> reads;
  for (std::size_t i = 0; i < trainable.size(); ++i) {
    if (!grads[i].valid()) continue;
    const graph::Value acc = read(g, *accumulators[i]);
    if (!sync) {
      g.add_multi("accumulate", {acc, grads[i]});
      continue;
    }
    graph::ScopeGuard back(g, graph::Phase::Backward);  // part of the gradient, so strategies reduce it
    totals.push_back(ops::scale(g, ops::add(g, acc, grads[i]), 1.0 / k));
    reads.push_back(totals.back().node);
    vars.push_back(trainable[i]);
  }
  if (sync) {
    optimizer->emit_updates(g, vars, totals);
    for (std::size_t i = 0; i < trainable.size(); ++i) {
      if (!grads[i].valid()) continue;
      g.add_multi("assign_zero", {read(g, *accumulators[i])});
      g.node(g.size() - 1).after = reads;  // after the sums that read the accumulators
    }
  }
  g.add_multi("increment", {counter});
}

CompiledStep& Model::Impl::step(StepKind kind, int64_t batch, const TensorType& y_type) {
  const auto key = std::make_pair(kind, batch);
  if (auto it = steps.find(key); it != steps.end()) return it->second;

  const bool train = kind == StepKind::Train || kind == StepKind::Accumulate;
  const int k = accumulation_steps();
  if (train && k > 1 && accumulators.empty()) {
    for (const VariablePtr& w : weights())
      if (w->trainable())
        accumulators.push_back(std::make_shared<Variable>("accumulator/" + w->path(), Tensor(w->value().shape(), w->value().dtype()), false));
    micro_step = std::make_shared<Variable>("accumulator/step", Tensor(Shape{}, DType::I64), false);
  }
  CompiledStep step;
  graph::Graph g;
  std::vector<graph::Value> fetches;
  // Dropout masks follow the count of training steps.
  const graph::Value counter = !train ? ops::fill(g, {Shape{}, DType::I64}, 0)
                               : k > 1 ? read(g, *micro_step)
                                       : read(g, *optimizer->variables()[0]);
  const graph::Value x = g.placeholder("x", {input.shape().without_batch().with_batch(batch), input.dtype()});
  CallContext ctx(g, train, counter);
  const graph::Value pred = trace(ctx, x);
  if (kind == StepKind::Predict) {
    step.output = 0;
    fetches.push_back(pred);
  } else {
    const graph::Value y = g.placeholder("y", {y_type.shape.without_batch().with_batch(batch), y_type.dtype});
    graph::Value loss_value;
    {
      graph::ScopeGuard scope(g, "loss");
      const graph::Value per = loss->per_sample(g, pred, y);
      // Keras's "sum_over_batch_size": the mean over every per-sample loss element of the batch.
      loss_value = ops::scale(g, sum_over_all(g, per), 1.0 / static_cast<double>(g.type(per).shape.num_elements()));
    }
    step.loss = 0;
    fetches.push_back(loss_value);
    {
      graph::ScopeGuard phase(g, graph::Phase::Metric);
      for (const std::string& m : metrics) {
        graph::ScopeGuard scope(g, m);
        step.metrics.push_back(static_cast<int>(fetches.size()));
        graph::Value per = metrics::per_sample(g, m, *loss, pred, y);
        // Metrics of rank > 1 (sequence outputs) average within each row first.
        const Shape ps = g.type(per).shape;
        if (ps.rank() > 1)
          per = ops::scale(g, ops::reduce_sum(g, ops::reshape(g, per, {ps[0], ps.num_elements() / ps[0]}), {1}),
                           double(ps[0]) / double(ps.num_elements()));
        fetches.push_back(sum_over_all(g, per));
      }
    }
    if (train) {
      std::vector<VariablePtr> trainable;
      std::vector<graph::Value> wrt;
      for (const VariablePtr& w : weights())
        if (w->trainable()) trainable.push_back(w), wrt.push_back(ctx.variable(*w));
      const std::vector<graph::Value> grads = autodiff::gradients(g, loss_value, wrt);
      if (k == 1) optimizer->emit_updates(g, trainable, grads);
      else emit_accumulation(g, kind == StepKind::Train, trainable, grads, counter);
    }
  }

  auto plan = std::make_shared<compile::Plan>(strategy->lower(g, fetches));
  host_view();  // new homes are filled from the host tensors
  const auto vars = variables_by_id();  // bind time only
  std::vector<backend::Device*> devices;
  for (const std::string& d : strategy->devices()) devices.push_back(&backend::open_device(d, strategy->threads_per_device()));
  step.exe = std::make_unique<runtime::Executable>(
      plan, devices, [&](int p, int id) { return homes.home(*devices[static_cast<std::size_t>(p)], *vars.at(id)); },
      strategy->communicator());
  auto feed = [&](int p, const std::string& name) {
    const compile::Program& prog = plan->programs[static_cast<std::size_t>(p)];
    const auto it = prog.feeds.find(name);
    if (it == prog.feeds.end()) return CompiledStep::Feed{};
    return CompiledStep::Feed{step.exe->feed(p, name), it->second.offset, it->second.rows};
  };
  for (int p = 0; p < step.exe->programs(); ++p) {
    step.x.push_back(feed(p, "x"));
    step.y.push_back(kind == StepKind::Predict ? CompiledStep::Feed{} : feed(p, "y"));
  }
  if (train) last_arena_bytes = step.exe->arena_bytes(0);
  return steps.emplace(key, std::move(step)).first->second;
}

}  // namespace tandem
