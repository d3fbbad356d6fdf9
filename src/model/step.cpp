// Builds the graph of one step (train, test or predict) for one global batch size, has the
// strategy lower it to per-device programs and binds them to memory. Cached per batch size.
#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "autodiff/autodiff.h"
#include "graph/autocast.h"
#include "distribute/strategy.h"
#include "layer_base/call_context.h"
#include "metrics/metrics.h"
#include "model/model_impl.h"
#include "model/regularization.h"
#include "ops/attention.h"
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

// Per-sample losses (rows, ...) times each row's weight (rows,), broadcast over the other axes.
graph::Value weigh_rows(graph::Graph& g, graph::Value per, graph::Value weights) {
  const TensorType t = g.type(per);
  std::vector<int64_t> dims(static_cast<std::size_t>(t.shape.rank()), 1);
  dims[0] = t.shape[0];
  return ops::mul(g, per, ops::reshape(g, ops::cast(g, weights, t.dtype), Shape(dims)));
}

// The loss of an output that carries a mask, as Keras 3's apply_mask with "sum_over_batch_size":
// each unmasked element weighs total/valid, so the mean becomes Σ loss·mask / Σ mask (0 when
// nothing counts), times `scale`. The per-sample losses must have the mask's shape (batch,
// steps). With several micro-batches each is normalised by its own count.
graph::Value masked_loss(graph::Graph& g, graph::Value per, graph::Value mask, const std::string& output, double scale) {
  const TensorType t = g.type(per);
  if (g.type(mask).shape != t.shape)
    throw ValueError("output \"" + output + "\" carries a mask of shape " + g.type(mask).shape.str() + ", but its loss gives per-sample values of shape " +
                     t.shape.str() + "; a masked loss needs one value per step (a sequence output: (batch, steps, features))");
  if (g.type(mask).dtype != t.dtype) mask = ops::cast(g, mask, t.dtype);
  const graph::Value kept = sum_over_all(g, ops::mul(g, per, mask));
  const graph::Value valid = ops::maximum(g, sum_over_all(g, mask), ops::fill(g, {Shape{}, t.dtype}, 1.0));  // Σ mask is 0 or >= 1
  return ops::scale(g, ops::div(g, kept, valid), scale);
}

}  // namespace

std::vector<double> CompiledStep::scalars() const {
  // The buffers below keep their capacity between steps, so a step allocates only the result.
  std::vector<double> values;
  auto read = [&](const Sums& f) {
    const compile::FetchSite& site = exe->plan().fetches[static_cast<std::size_t>(f.fetch)];
    const std::size_t at = values.size(), n = static_cast<std::size_t>(f.count), bytes = n * dtype_size(f.dtype);
    values.resize(at + n, 0.0);
    // Partial sums are added over every program that holds one; of a value each holder has
    // whole, the first holder's copy counts (over several workers, perhaps another's).
    if (!site.layout.is_partial() && (site.programs.empty() || site.place(0) != 0)) return;
    fetched_.resize(std::max(fetched_.size(), bytes));
    for (int p : site.programs) {
      exe->copy_fetch(p, f.fetch, fetched_.data(), bytes);
      for (std::size_t i = 0; i < n; ++i)
        values[at + i] += f.dtype == DType::F64 ? reinterpret_cast<const double*>(fetched_.data())[i]
                                                : double(reinterpret_cast<const float*>(fetched_.data())[i]);
      if (!site.layout.is_partial()) break;  // every program holds all of it
    }
  };
  read(loss);
  for (const Sums& f : metrics) read(f);
  strategy->sum_over_workers(values);  // in one exchange for all of them (none for a worker alone)
  return values;
}

void CompiledStep::write(const std::vector<Feed>& to, const std::byte* batch, std::size_t row_bytes, int64_t index) const {
  for (int64_t piece = 0; piece < pieces; ++piece) {
    const std::byte* micro = batch + static_cast<std::size_t>(piece * micro_rows) * row_bytes;
    const auto j = static_cast<std::size_t>(index * pieces + piece);
    for (std::size_t p = 0; p < to.size(); ++p)
      if (!to[p].at.empty() && to[p].at[j])
        exe->write_feed(static_cast<int>(p), to[p].at[j], micro + static_cast<std::size_t>(to[p].offset) * row_bytes,
                        static_cast<std::size_t>(to[p].rows) * row_bytes);
  }
}

void CompiledStep::read_rows(int fetch, std::byte* host, std::size_t row_bytes, int64_t rows) const {
  const compile::FetchSite& site = exe->plan().fetches[static_cast<std::size_t>(fetch)];
  std::vector<int> places;  // this worker's
  if (!site.layout.is_split()) {
    if (!site.programs.empty()) exe->copy_fetch(site.programs.front(), fetch, host, row_bytes * static_cast<std::size_t>(rows)), places = {site.place(0)};
    strategy->gather_rows(host, row_bytes * static_cast<std::size_t>(rows), site.layout, places);
    return;
  }
  if (site.layout.axis != 0) throw Error("internal: a per-row fetch split along axis " + std::to_string(site.layout.axis));
  for (std::size_t i = 0; i < site.programs.size(); ++i) {  // the blocks of rows, in order
    const int place = site.place(i);
    exe->copy_fetch(site.programs[i], fetch, host + static_cast<std::size_t>(site.layout.offset(place)) * row_bytes,
                    static_cast<std::size_t>(site.layout.shares[static_cast<std::size_t>(place)]) * row_bytes);
    places.push_back(place);
  }
  strategy->gather_rows(host, row_bytes, site.layout, places);
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
  if (strategy && strategy->spreads_variables()) share_over_workers();
  devices_newer = false;
}

std::vector<char> Model::Impl::current_trainability() const {
  std::vector<char> out;
  for (const auto& layer : layers) out.push_back(layer->trainable());
  for (const VariablePtr& w : weights()) out.push_back(w->trainable());
  return out;
}

void Model::Impl::begin_steps() {
  host_view();
  if (std::vector<char> now = current_trainability(); now != trainability) {
    steps.clear();  // made for other trainable weights (and BatchNormalization modes)
    last_train = nullptr;
    trainability = std::move(now);
  }
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

CompiledStep& Model::Impl::step(StepKind kind, int64_t rows, const std::vector<TensorType>& y_types, int64_t batches) {
  const bool weighted = kind != StepKind::Predict && y_types.size() > outputs.size();
  const auto key = std::make_tuple(kind, rows, batches, weighted);
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
  g.autocast = true;  // the layers' dtype policies place casts as the step is built
  std::vector<graph::Value> fetches;
  // Dropout masks follow the count of training steps.
  const graph::Value counter = train ? g.read_variable(*optimizer->variables()[0]) : ops::fill(g, {Shape{}, DType::I64}, 0);
  CallContext ctx(g, train, counter);
  ctx.micro_batches = static_cast<int>(micro_batches);
  std::vector<graph::Value> masks;  // per output: its mask, or invalid
  std::vector<graph::Value> preds = trace(ctx, input_placeholders(g, step.micro_rows), &masks);
  // Outputs of a 16-bit layer (mixed precision) go on in float32, as Keras's losses and metrics
  // compute in float32 and predict returns float32.
  for (graph::Value& p : preds)
    if (graph::is_16bit(g.type(p).dtype)) p = g.cast(p, DType::F32);
  if (kind == StepKind::Predict) {
    for (graph::Value pred : preds) {
      step.outputs.push_back(static_cast<int>(fetches.size()));
      fetches.push_back(pred);
    }
  } else {
    const bool several = outputs.size() > 1;
    std::vector<graph::Value> ys, per_output;  // targets; each output's per-sample losses
    graph::Value loss_value;
    {
      graph::ScopeGuard scope(g, "loss", graph::Role::Loss);
      for (std::size_t i = 0; i < y_types.size(); ++i) {  // the targets, then the row weights
        const TensorType& t = y_types[i];
        const std::string name = i == outputs.size() ? std::string("sample_weight") : several ? std::string("y").append(std::to_string(i)) : std::string("y");
        ys.push_back(g.placeholder(name, {t.shape.without_batch().with_batch(step.micro_rows), t.dtype}));
      }
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        per_output.push_back(losses[i]->per_sample(g, preds[i], ys[i]));
        if (weighted) per_output[i] = weigh_rows(g, per_output[i], ys.back());
        // Keras's "sum_over_batch_size": the mean over every per-sample loss element of the step's
        // batches, so the sum over micro-batches of each one's loss is the step's loss.
        const auto elements = static_cast<double>(g.type(per_output[i]).shape.num_elements()) * static_cast<double>(micro_batches);
        graph::Value term = ops::scale(g, sum_over_all(g, per_output[i]), loss_weights[i] / elements);
        if (masks[i].valid()) term = masked_loss(g, per_output[i], masks[i], output_name(i), loss_weights[i] / static_cast<double>(micro_batches));
        loss_value = loss_value.valid() ? ops::add(g, loss_value, term) : term;
      }
      loss_value = add_regularization_losses(ctx, weights(), loss_value);
    }
    step.loss = {0, 1, g.type(loss_value).dtype};
    fetches.push_back(over_step(g, loss_value));
    {
      graph::ScopeGuard phase(g, graph::Phase::Metric);
      // Per-row values of rank > 1 (sequence outputs) average within each row first; fit keeps
      // the running mean of their sums over rows.
      auto add_sums = [&](graph::Value sums) {
        const TensorType t = g.type(sums);
        step.metrics.push_back({static_cast<int>(fetches.size()), t.shape.num_elements(), t.dtype});
        fetches.push_back(over_step(g, sums));
      };
      auto add_row_sum = [&](graph::Value per) {
        const Shape ps = g.type(per).shape;
        if (ps.rank() > 1)
          per = ops::scale(g, ops::reduce_sum(g, ops::reshape(g, per, {ps[0], ps.num_elements() / ps[0]}), {1}),
                           double(ps[0]) / double(ps.num_elements()));
        add_sums(sum_over_all(g, per));
      };
      // A masked output's values count at its unmasked steps only: (Σ value·mask, Σ mask).
      auto add_masked_sums = [&](graph::Value per, std::size_t i, const std::string& what) {
        const graph::Value mask = masks[i].valid() && g.type(masks[i]).dtype != g.type(per).dtype ? ops::cast(g, masks[i], g.type(per).dtype)
                                                                                                 : masks[i];
        if (g.type(mask).shape != g.type(per).shape)
          throw ValueError("Model \"" + name + "\": output \"" + output_name(i) + "\" carries a mask of shape " + g.type(mask).shape.str() +
                           ", but " + what + " gives per-sample values of shape " + g.type(per).shape.str() +
                           "; a masked output needs one value per step");
        const Shape one{1};
        add_sums(ops::concat(g, {ops::reshape(g, sum_over_all(g, ops::mul(g, per, mask)), one), ops::reshape(g, sum_over_all(g, mask), one)}, 0));
      };
      if (several)
        for (std::size_t i = 0; i < outputs.size(); ++i) {
          graph::ScopeGuard scope(g, output_name(i).append("_loss"));
          masks[i].valid() ? add_masked_sums(per_output[i], i, "its loss") : add_row_sum(per_output[i]);
        }
      for (std::size_t i = 0; i < outputs.size(); ++i)
        for (const std::string& m : metrics[i]) {
          graph::ScopeGuard scope(g, several ? output_name(i).append("_").append(m) : m);
          const metrics::Emitted e = metrics::emit(g, m, *losses[i], preds[i], ys[i], masks[i]);  // counts weighed by the mask
          if (masks[i].valid() && e.per_sample) add_masked_sums(e.value, i, std::string("metric \"").append(m).append("\""));
          else e.per_sample ? add_row_sum(e.value) : add_sums(e.value);
        }
    }
    if (train) {
      std::vector<VariablePtr> trainable;
      std::vector<graph::Value> wrt;
      for (const VariablePtr& w : weights())
        if (w->trainable()) trainable.push_back(w), wrt.push_back(ctx.variable(*w));
      // The loss as the optimizer scales it (LossScaleOptimizer); the step reports the loss itself.
      std::vector<graph::Value> grads = autodiff::gradients(g, optimizer->scale_loss(g, loss_value), wrt);
      graph::ScopeGuard phase(g, graph::Phase::Backward);
      for (graph::Value& grad : grads)
        if (grad.valid()) grad = over_step(g, grad);
      const int first_update = g.size();
      optimizer->emit_updates(g, trainable, grads);
      emit_constraints(ctx, trainable, first_update);
    }
  }

  g.autocast = false;  // the lowering's own nodes keep the dtypes the step gave their values
  auto plan = std::make_shared<compile::Plan>(compile::lower(g, fetches, strategy->describe(g, static_cast<int>(micro_batches))));
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
  const std::size_t n_in = inputs.size(), n_out = outputs.size();
  step.x.resize(n_in), step.y.resize(kind == StepKind::Predict ? 0 : n_out + (weighted ? 1 : 0));
  for (int p = 0; p < step.exe->programs(); ++p) {
    for (std::size_t i = 0; i < n_in; ++i) step.x[i].push_back(feed(p, n_in == 1 ? std::string("x") : std::string("x").append(std::to_string(i))));
    for (std::size_t i = 0; i < step.y.size(); ++i)
      step.y[i].push_back(feed(p, i == n_out ? std::string("sample_weight") : n_out == 1 ? std::string("y") : std::string("y").append(std::to_string(i))));
  }
  CompiledStep& made = steps.emplace(key, std::move(step)).first->second;
  if (train) last_train = &made;
  return made;
}

}  // namespace tandem
