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

std::vector<double> CompiledStep::scalars() const {
  std::vector<int> fetches{loss};
  fetches.insert(fetches.end(), metrics.begin(), metrics.end());
  std::vector<double> values, partial;
  for (int fetch : fetches) {
    const compile::FetchSite& site = exe->plan().fetches[static_cast<std::size_t>(fetch)];
    double s = 0;
    for (int p : site.programs) {
      float v = 0;
      exe->copy_fetch(p, fetch, &v, sizeof v);
      s += v;
      if (!site.layout.is_partial()) break;  // every program holds all of it
    }
    values.push_back(s);
    if (site.layout.is_partial()) partial.push_back(s);
  }
  if (strategy->workers() == 1) return values;
  strategy->sum_over_workers(partial);  // one exchange for all of them
  for (std::size_t i = 0, j = 0; i < fetches.size(); ++i)
    if (exe->plan().fetches[static_cast<std::size_t>(fetches[i])].layout.is_partial()) values[i] = partial[j++];
  return values;
}

void CompiledStep::write(const std::vector<Feed>& to, const std::byte* batch, std::size_t row_bytes, int64_t index) const {
  for (int64_t piece = 0; piece < pieces; ++piece) {
    const std::byte* micro = batch + static_cast<std::size_t>(piece * micro_rows) * row_bytes;
    const auto j = static_cast<std::size_t>(index * pieces + piece);
    for (std::size_t p = 0; p < to.size(); ++p)
      if (!to[p].at.empty() && to[p].at[j])
        exe->device(static_cast<int>(p)).copy_in(to[p].at[j], micro + static_cast<std::size_t>(to[p].offset) * row_bytes,
                                                   static_cast<std::size_t>(to[p].rows) * row_bytes);
  }
}

void CompiledStep::read_rows(int fetch, std::byte* host, std::size_t row_bytes, int64_t rows) const {
  const compile::FetchSite& site = exe->plan().fetches[static_cast<std::size_t>(fetch)];
  if (!site.layout.is_split()) {
    exe->copy_fetch(site.programs.front(), fetch, host, row_bytes * static_cast<std::size_t>(rows));
    return;
  }
  if (site.layout.axis != 0) throw Error("internal: a per-row fetch split along axis " + std::to_string(site.layout.axis));
  for (std::size_t i = 0; i < site.programs.size(); ++i) {  // the blocks of rows, in order
    const int place = site.place(i);
    exe->copy_fetch(site.programs[i], fetch, host + static_cast<std::size_t>(site.layout.offset(place)) * row_bytes,
                    static_cast<std::size_t>(site.layout.shares[static_cast<std::size_t>(place)]) * row_bytes);
  }
  if (strategy->workers() > 1) strategy->gather_rows(host, row_bytes, site.layout);
}

int Model::Impl::sync_every() const { return strategy ? strategy->sync_every() : 1; }

std::vector<VariablePtr> Model::Impl::all_variables() const {
  std::vector<VariablePtr> vars = weights();
  if (optimizer)
    for (const VariablePtr& v : optimizer->variables()) vars.push_back(v);
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
  // Workers start from the chief's values, whatever each initialised or loaded.
  if (strategy && strategy->workers() > 1)
    for (const VariablePtr& v : all_variables()) strategy->from_chief(v->value().raw(), v->value().bytes());
  homes.to_devices(all_variables());
  host_newer = false;
}

void Model::Impl::before_step() {
  if (!host_newer) return;
  homes.to_devices(all_variables());
  host_newer = false;
}

CompiledStep& Model::Impl::step(StepKind kind, int64_t rows, const TensorType& y_type, int64_t batches) {
  const auto key = std::make_tuple(kind, rows, batches);
  if (auto it = steps.find(key); it != steps.end()) return it->second;

  const bool train = kind == StepKind::Train;
  CompiledStep step;
  step.strategy = strategy.get();
  // The strategy's micro-batches per batch, or the most below that which divide its rows.
  step.pieces = train ? strategy->micro_batches() : 1;
  while (rows % step.pieces != 0) --step.pieces;
  step.micro_rows = rows / step.pieces;
  const int64_t micro_batches = batches * step.pieces;
  const bool summed = micro_batches > 1;  // gradients, loss and metrics are sums over micro-batches
  auto over_step = [&](graph::Graph& g, graph::Value v) { return summed ? ops::micro_sum(g, v) : v; };
  graph::Graph g;
  std::vector<graph::Value> fetches;
  // Dropout masks follow the count of training steps.
  const graph::Value counter = train ? read(g, *optimizer->variables()[0]) : ops::fill(g, {Shape{}, DType::I64}, 0);
  const graph::Value x = g.placeholder("x", {input.shape().without_batch().with_batch(step.micro_rows), input.dtype()});
  CallContext ctx(g, train, counter);
  const graph::Value pred = trace(ctx, x);
  if (kind == StepKind::Predict) {
    step.output = 0;
    fetches.push_back(pred);
  } else {
    const graph::Value y = g.placeholder("y", {y_type.shape.without_batch().with_batch(step.micro_rows), y_type.dtype});
    graph::Value loss_value;
    {
      graph::ScopeGuard scope(g, "loss");
      const graph::Value per = loss->per_sample(g, pred, y);
      // Keras's "sum_over_batch_size": the mean over every per-sample loss element of the step's
      // batches, so the sum over micro-batches of each one's loss is the step's loss.
      const auto elements = static_cast<double>(g.type(per).shape.num_elements()) * static_cast<double>(micro_batches);
      loss_value = ops::scale(g, sum_over_all(g, per), 1.0 / elements);
    }
    step.loss = 0;
    fetches.push_back(over_step(g, loss_value));
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
        fetches.push_back(over_step(g, sum_over_all(g, per)));
      }
    }
    if (train) {
      std::vector<VariablePtr> trainable;
      std::vector<graph::Value> wrt;
      for (const VariablePtr& w : weights())
        if (w->trainable()) trainable.push_back(w), wrt.push_back(ctx.variable(*w));
      std::vector<graph::Value> grads = autodiff::gradients(g, loss_value, wrt);
      graph::ScopeGuard phase(g, graph::Phase::Backward);
      for (graph::Value& grad : grads)
        if (grad.valid()) grad = over_step(g, grad);
      optimizer->emit_updates(g, trainable, grads);
    }
  }

  auto plan = std::make_shared<compile::Plan>(strategy->lower(g, fetches, static_cast<int>(micro_batches)));
  host_view();  // new homes are filled from the host tensors
  const auto vars = variables_by_id();  // bind time only
  std::vector<backend::Device*> devices;
  for (const std::string& d : strategy->devices()) devices.push_back(&backend::open_device(d, strategy->threads_per_device()));
  step.exe = std::make_unique<runtime::Executable>(
      plan, devices,
      [&](int p, int id) {
        const auto& shards = plan->programs[static_cast<std::size_t>(p)].shards;
        const auto it = shards.find(id);
        return homes.home(*devices[static_cast<std::size_t>(p)], *vars.at(id), it == shards.end() ? nullptr : &it->second);
      },
      strategy->communicator());
  auto feed = [&](int p, const std::string& name) {
    const compile::Program& prog = plan->programs[static_cast<std::size_t>(p)];
    const auto it = prog.feeds.find(name);
    if (it == prog.feeds.end()) return CompiledStep::Feed{};
    CompiledStep::Feed f{{}, it->second.offset, it->second.rows};
    for (int64_t j = 0; j < micro_batches; ++j) f.at.push_back(step.exe->feed(p, name, static_cast<int>(j)));
    return f;
  };
  for (int p = 0; p < step.exe->programs(); ++p) {
    step.x.push_back(feed(p, "x"));
    step.y.push_back(kind == StepKind::Predict ? CompiledStep::Feed{} : feed(p, "y"));
  }
  if (train) last_arena_bytes = step.exe->arena_bytes(0);
  return steps.emplace(key, std::move(step)).first->second;
}

}  // namespace tandem
