// TensorParallel2D: tensor parallelism for Dense layers over a rows × columns mesh of devices.
// Every node runs on every device, on the whole batch; each Dense kernel (in, out) is cut into
// rows·columns blocks over the two mesh axes, each bias with its kernel's units, each optimizer
// slot with its weight. That is all this file says: the ops' layout rules carry the splits through
// the activations and gradients, and the lowering's boxing adds the collectives where they must
// change.
//
// How each kernel is cut, along each mesh axis: by units (its columns) or by input features (its
// rows). A product x·W splits either way; its weight gradient xᵀ·dy is split only if dy arrives
// split by units or x split by features. So a kernel may be cut by rows along an axis only where
// its input arrives split by features along it — after a layer cut by units there — and the last
// layer must be (the loss reads whole rows of logits, so their gradient comes back whole). The
// first layer reads the batch whole, so it is cut by units. In between, the two axes take turns:
// rows over the mesh's rows and units over its columns, then the other way round — the 2-D blocks.
// The layer before the last is cut by units along both axes, so that the last can be cut by rows
// along both. Every device then does 1/(rows·columns) of each matrix product.
#include <array>
#include <map>
#include <memory>

#include "comm/local.h"
#include "compile/lower.h"
#include "distribute/stages.h"
#include "distribute/strategy.h"
#include "graph/op_registry.h"
#include "tandem/errors.h"

namespace tandem::distribute {

namespace {
const char* const kAxes[2] = {"row", "col"};  // the mesh's axes: 0 rows, 1 columns

// The axis of a weight split over each mesh axis (-1: whole along that mesh axis).
using Cut = std::array<int, 2>;
constexpr Cut kWhole{-1, -1};

// The variable node an input of `n` reads, or null.
const graph::Node* variable_at(const graph::Graph& g, const graph::Node& n, std::size_t input) {
  if (input >= n.inputs.size()) return nullptr;
  const graph::Node& in = g.node(n.inputs[input].node);
  return in.def->source == ops::Source::Variable ? &in : nullptr;
}
int variable_id(const graph::Node& v) { return static_cast<int>(v.attrs.i("var")); }

// How each Dense layer's weights are cut (by variable id): the n layers' kernels in forward order
// (products by a weight), layer k as cut_of(k, n) says. A bias follows its kernel's units, an
// optimizer slot its weight.
Cut cut_of(int k, int n) {
  constexpr int kRows = 0, kUnits = 1;
  if (n == 1 || k == 0 || k == n - 2) return {kUnits, kUnits};
  if (k == n - 1) return {kRows, kRows};
  return k % 2 ? Cut{kRows, kUnits} : Cut{kUnits, kRows};
}

std::map<int, Cut> dense_cuts(const graph::Graph& g) {
  std::map<int, int> bias_of;  // product node -> its bias's variable id
  std::vector<std::pair<int, int>> layers;  // (product node, kernel variable id)
  for (int id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (const graph::Node* b = variable_at(g, n, 1); b && n.op == "bias_add") bias_of[n.inputs[0].node] = variable_id(*b);
    const graph::Node* kernel = variable_at(g, n, 1);
    if (kernel && n.op == "matmul" && n.phase == graph::Phase::Forward && !n.attrs.b("transpose_a") && !n.attrs.b("transpose_b"))
      layers.emplace_back(id, variable_id(*kernel));
  }
  std::map<int, Cut> cuts;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const Cut cut = cut_of(static_cast<int>(k), static_cast<int>(layers.size()));
    cuts[layers[k].second] = cut;
    if (auto b = bias_of.find(layers[k].first); b != bias_of.end()) cuts[b->second] = {cut[0] == 1 ? 0 : -1, cut[1] == 1 ? 0 : -1};
  }
  for (int id = 0; id < g.size(); ++id) {  // the updates: slots written with their variable
    const graph::Node& n = g.node(id);
    if (n.def->writes_inputs.empty() || n.def->gradient_input < 0) continue;
    const graph::Node* var = variable_at(g, n, static_cast<std::size_t>(n.def->writes_inputs[0]));
    const auto it = var ? cuts.find(variable_id(*var)) : cuts.end();
    if (it == cuts.end()) continue;
    for (int w : n.def->writes_inputs)
      if (const graph::Node* slot = variable_at(g, n, static_cast<std::size_t>(w))) cuts[variable_id(*slot)] = it->second;
  }
  return cuts;
}

class TensorParallel2DStrategy : public Strategy {
 public:
  TensorParallel2DStrategy(const std::vector<std::string>& devices, int64_t rows, int64_t columns, TensorParallel2DOptions o)
      : devices_(distinct_devices("TensorParallel2D", devices)), mesh_{rows, columns} {
    for (int a = 0; a < 2; ++a)
      if (mesh_[a] < 1)
        throw ValueError(std::string("TensorParallel2D: ") + (a ? "columns" : "rows") + " must be >= 1, got " + std::to_string(mesh_[a]));
    if (rows * columns != static_cast<int64_t>(devices_.size()))
      throw ValueError("TensorParallel2D: a mesh of " + shape() + " needs " + std::to_string(rows * columns) + " devices, got " +
                       std::to_string(devices_.size()));
    if (o.timeout_ms < 1) throw ValueError("TensorParallel2D: timeout_ms must be >= 1, got " + std::to_string(o.timeout_ms));
    comm_ = comm::devices_communicator(devices_, std::chrono::milliseconds(o.timeout_ms));
    span_workers("TensorParallel2D", devices_);  // device (i, j) is program i·columns + j
  }

  std::vector<std::string> devices() const override { return local_devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }

  // Device (i, j) is devices[i·columns + j]; every node runs on the whole mesh.
  compile::LoweringOptions describe(const graph::Graph& g, int micro_batches) const override {
    auto cuts = std::make_shared<const std::map<int, Cut>>(dense_cuts(g));
    check(g, *cuts);
    compile::LoweringOptions o;
    o.devices = devices_;
    std::vector<int> all(devices_.size());
    for (std::size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int>(d);
    const std::vector<int> mesh{static_cast<int>(mesh_[0]), static_cast<int>(mesh_[1])};
    o.place = [all, mesh](const graph::Node&) { return compile::Placement{all, mesh}; };
    o.variable_layout = [cuts](const graph::VariableInfo& v, const std::vector<int>& mesh) {
      const auto it = cuts->find(v.id);
      const Cut cut = it == cuts->end() ? kWhole : it->second;
      return graph::MeshLayout::even_splits(v.type.shape, {cut[0], cut[1]}, mesh);
    };
    o.micro_batches = micro_batches;
    keep_this_workers(o);  // the programs of this process's devices, where they span workers
    return o;
  }

  PlacementTable placement(const graph::Graph& g) const override {
    const std::map<int, Cut> cuts = dense_cuts(g);
    PlacementTable t{"TensorParallel2D: mesh " + shape() + " (row, col) over " + join(devices_),
                     {"Weight", "Shape", "Split", "Block per device"}, {false, false, false, false}, {}, {}};
    std::size_t whole = 0, per_device = 0;
    for (const graph::VariableInfo& v : g.variables()) {
      const auto it = cuts.find(v.id);
      const Cut cut = it == cuts.end() ? kWhole : it->second;
      std::vector<int64_t> block = v.type.shape.dims();
      std::string split;
      for (std::size_t d = 0; d < block.size(); ++d) {
        std::string axes;
        for (int a = 0; a < 2; ++a)
          if (cut[static_cast<std::size_t>(a)] == static_cast<int>(d)) {
            axes += std::string(axes.empty() ? "" : "×") + kAxes[a];
            block[d] = (block[d] + mesh_[a] - 1) / mesh_[a];
          }
        split += std::string(d ? ", " : "") + (axes.empty() ? "None" : axes);
      }
      const TensorType local{Shape(block), v.type.dtype};
      whole += v.type.bytes();
      per_device += local.bytes();
      t.rows.push_back({v.path, v.type.shape.str(), cut == kWhole ? "whole" : "(" + split + (block.size() == 1 ? ",)" : ")"),
                        local.shape.str()});
    }
    t.notes.push_back("Each device holds " + std::to_string(per_device) + " of the " + std::to_string(whole) + " weight bytes (" +
                      percent(whole ? double(per_device) / double(whole) : 0) + "); optimizer slots are split with their weights");
    return t;
  }

 private:
  // Every device needs a block of each weight's split axes: at least as many units (or input
  // features) as devices that split them.
  void check(const graph::Graph& g, const std::map<int, Cut>& cuts) const {
    for (const graph::VariableInfo& v : g.variables()) {
      const auto it = cuts.find(v.id);
      if (it == cuts.end()) continue;
      for (int d = 0; d < v.type.shape.rank(); ++d) {
        int64_t parts = 1;
        std::string over;
        for (int a = 0; a < 2; ++a)
          if (it->second[static_cast<std::size_t>(a)] == d) parts *= mesh_[a], over += std::string(over.empty() ? "" : " × ") + kAxes[a];
        if (v.type.shape[d] < parts)
          throw ValueError("TensorParallel2D: weight '" + v.path + "' of shape " + v.type.shape.str() + " is split along axis " +
                           std::to_string(d) + " over mesh axes " + over + ": expected at least " + std::to_string(parts) + " there, got " +
                           std::to_string(v.type.shape[d]));
      }
    }
  }

  std::string shape() const { return std::to_string(mesh_[0]) + " × " + std::to_string(mesh_[1]); }
  static std::string join(const std::vector<std::string>& parts) {
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
    return s;
  }

  std::vector<std::string> devices_;
  std::array<int64_t, 2> mesh_;
  std::shared_ptr<comm::Communicator> comm_;
};
}  // namespace

StrategyPtr TensorParallel2D(const std::vector<std::string>& devices, int64_t rows, int64_t columns, const TensorParallel2DOptions& options) {
  return std::make_shared<TensorParallel2DStrategy>(devices, rows, columns, options);
}

}  // namespace tandem::distribute
