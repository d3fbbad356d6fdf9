#include "distribute/stages.h"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <limits>

#include "graph/op_registry.h"
#include "tandem/errors.h"

namespace tandem::distribute {

namespace {
double elements(const TensorType& t) { return static_cast<double>(t.shape.num_elements()); }

double flops(const graph::Graph& g, const graph::Node& n) {
  auto in = [&](int i) -> const TensorType& { return g.type(n.inputs[static_cast<std::size_t>(i)]); };
  if (n.op == "matmul" || n.op == "batch_matmul") {
    const Shape& a = in(0).shape;
    const int64_t k = n.attrs.b("transpose_a") ? a[a.rank() - 2] : a.back();
    return 2.0 * elements(n.outputs[0]) * static_cast<double>(k);
  }
  if (n.op == "conv2d" || n.op == "conv2d_backprop_input") {  // (x or dy, kernel (kh, kw, C, F))
    const Shape& k = in(1).shape;
    const double per_output = n.op == "conv2d" ? double(k[0] * k[1] * k[2]) : double(k[0] * k[1] * k[3]);
    return 2.0 * elements(n.outputs[0]) * per_output;
  }
  if (n.op == "conv2d_backprop_filter") {  // (x, dy) -> kernel (kh, kw, C, F)
    const Shape& kernel = n.outputs[0].shape;
    return 2.0 * elements(in(1)) * double(kernel[0] * kernel[1] * kernel[2]);
  }
  double e = 0;
  for (const TensorType& t : n.outputs) e += elements(t);
  return e;
}

// The nodes a step runs: those its updates (side effects), loss and metrics depend on. A gradient
// rule also makes gradients nobody reads (a first layer's input gradient); those never run.
std::vector<bool> runs(const graph::Graph& g) {
  std::vector<bool> live(static_cast<std::size_t>(g.size()), false);
  for (int id = g.size(); id-- > 0;) {
    const graph::Node& n = g.node(id);
    if (n.def->has_side_effects || n.role == graph::Role::Loss || n.phase == graph::Phase::Metric) live[static_cast<std::size_t>(id)] = true;
    if (!live[static_cast<std::size_t>(id)]) continue;
    for (graph::Value in : n.inputs) live[static_cast<std::size_t>(in.node)] = true;
    for (int a : n.after) live[static_cast<std::size_t>(a)] = true;
  }
  return live;
}

std::string names(const std::vector<LayerCost>& costs) {
  std::string s;
  for (const LayerCost& c : costs) s += (s.empty() ? "" : ", ") + c.layer;
  return s;
}
}  // namespace

std::vector<LayerCost> layer_costs(const graph::Graph& g) {
  std::vector<LayerCost> costs;
  std::map<std::string, std::size_t> index;
  for (const std::string& layer : g.layers) {  // the model's order; layers without nodes cost 0
    index[layer] = costs.size();
    costs.push_back({layer, 0});
  }
  for (int id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    const bool computes = n.def->source == ops::Source::Kernel;  // variables' nodes carry their owner's path
    if (computes && n.phase == graph::Phase::Forward && !n.scope.empty() && n.role != graph::Role::Loss && !index.count(n.scope)) {
      index[n.scope] = costs.size();
      costs.push_back({n.scope, 0});
    }
  }
  const std::vector<bool> live = runs(g);
  for (int id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (auto it = index.find(n.scope); it != index.end() && n.def->source == ops::Source::Kernel && live[static_cast<std::size_t>(id)])
      costs[it->second].cost += flops(g, n);
  }
  return costs;
}

std::vector<LayerCost> parameter_bytes(const graph::Graph& g) {
  std::vector<LayerCost> layers = layer_costs(g);
  for (LayerCost& l : layers) {
    l.cost = 0;
    for (int id = 0; id < g.size(); ++id) {
      const graph::Node& n = g.node(id);
      if (n.def->source == ops::Source::Variable && n.scope == l.layer) l.cost += static_cast<double>(n.outputs[0].bytes());
    }
  }
  return layers;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * fraction);
  return buf;
}

std::vector<std::size_t> balanced_cuts(const std::vector<LayerCost>& costs, int stages) {
  const std::size_t n = costs.size(), s = static_cast<std::size_t>(stages);
  std::vector<double> prefix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i].cost;
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the least largest cost of the first i layers in k groups; from[k][i]: where the
  // last of those groups starts.
  std::vector<std::vector<double>> best(s + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> from(s + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t k = 1; k <= s; ++k)
    for (std::size_t i = k; i <= n; ++i)
      for (std::size_t j = k - 1; j < i; ++j) {
        const double c = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (c < best[k][i]) best[k][i] = c, from[k][i] = j;
      }
  std::vector<std::size_t> firsts(s);
  for (std::size_t k = s, i = n; k >= 1; --k) {
    firsts[k - 1] = from[k][i];
    i = from[k][i];
  }
  return firsts;
}

std::vector<std::size_t> interleaved_cuts(const std::vector<LayerCost>& costs, int chunks, int devices) {
  if (chunks == devices) return balanced_cuts(costs, chunks);
  const std::size_t n = costs.size(), k_all = static_cast<std::size_t>(chunks), s = static_cast<std::size_t>(devices);
  std::vector<double> prefix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i].cost;
  // A device's load sums chunks far apart, so the best cut of the first i layers into k chunks
  // does not extend to the best of all of them: keep the kBeam best partial cuts per (k, i) by
  // (busiest device, sum of squared chunk costs), one per distinct set of device loads. On random
  // models of up to 16 layers and 12 chunks it finds the exhaustive search's optimum or comes
  // within 1% of it (tests/test_pipeline.cpp).
  constexpr std::size_t kBeam = 128;
  struct Partial {
    double busiest = 0, squares = 0;
    std::vector<double> loads;
    std::vector<std::size_t> firsts;
    bool operator<(const Partial& o) const { return std::tie(busiest, squares, loads) < std::tie(o.busiest, o.squares, o.loads); }
  };
  std::vector<std::vector<Partial>> before(n + 1), after(n + 1);
  before[0].push_back({0, 0, std::vector<double>(s, 0), {}});
  for (std::size_t k = 1; k <= k_all; ++k) {
    const std::size_t device = (k - 1) % s;
    for (std::size_t i = k; i + (k_all - k) <= n; ++i) {
      if (k == k_all && i != n) continue;
      std::vector<Partial> found;
      for (std::size_t j = k - 1; j < i; ++j)
        for (const Partial& p : before[j]) {
          Partial q = p;
          const double chunk = prefix[i] - prefix[j];
          q.loads[device] += chunk;
          q.busiest = std::max(q.busiest, q.loads[device]);
          q.squares += chunk * chunk;
          q.firsts.push_back(j);
          found.push_back(std::move(q));
        }
      // Of the cuts that load the devices alike, the one with the evenest chunks.
      std::sort(found.begin(), found.end(), [](const Partial& a, const Partial& b) { return std::tie(a.loads, a.squares) < std::tie(b.loads, b.squares); });
      found.erase(std::unique(found.begin(), found.end(), [](const Partial& a, const Partial& b) { return a.loads == b.loads; }), found.end());
      std::sort(found.begin(), found.end());
      if (found.size() > kBeam) found.resize(kBeam);
      after[i] = std::move(found);
    }
    before.swap(after);
    for (auto& a : after) a.clear();
  }
  return before[n].front().firsts;
}

std::map<std::string, int> assign_stages(const graph::Graph& g, const std::vector<std::string>& boundaries, int stages, int devices) {
  const std::vector<LayerCost> costs = layer_costs(g);
  if (static_cast<int>(costs.size()) < stages)
    throw ValueError("Pipeline: " + std::to_string(stages) + " stages for a model of " + std::to_string(costs.size()) +
                     " layers (" + names(costs) + "); use at most " + std::to_string(costs.size()) + " stages");
  std::vector<std::size_t> firsts{0};
  if (boundaries.empty()) {
    firsts = interleaved_cuts(costs, stages, devices > 0 ? devices : stages);
  } else {
    for (const std::string& b : boundaries) {
      const auto it = std::find_if(costs.begin(), costs.end(), [&](const LayerCost& c) { return c.layer == b; });
      if (it == costs.end())
        throw ValueError("Pipeline: boundary '" + b + "' is not a layer of the model; its layers are " + names(costs));
      const auto at = static_cast<std::size_t>(it - costs.begin());
      if (at <= firsts.back())
        throw ValueError("Pipeline: boundary '" + b + "' must come after '" + costs[firsts.back()].layer +
                         "' (boundaries name the first layer of stages 1, 2, ..., in the model's order; the model's first layer starts stage 0)");
      firsts.push_back(at);
    }
  }
  std::map<std::string, int> stage_of;
  for (std::size_t k = 0; k < firsts.size(); ++k) {
    const std::size_t end = k + 1 < firsts.size() ? firsts[k + 1] : costs.size();
    for (std::size_t i = firsts[k]; i < end; ++i) stage_of[costs[i].layer] = static_cast<int>(k);
  }
  return stage_of;
}

}  // namespace tandem::distribute
