// What the strategy tests share: virtual CPU device names, a separable classification dataset,
// and how far two sets of weights are apart.
#pragma once

#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "graph/graph.h"
#include "ops/ops.h"

inline std::vector<std::string> cpus(int k) {
  std::vector<std::string> d;
  for (int i = 0; i < k; ++i) d.push_back("cpu:" + std::to_string(i));
  return d;
}

// `rows` rows of `features` normal values; row r has class r mod `classes`, and the features
// f ≡ r (mod classes) are shifted by 1.5, so the classes separate.
inline tandem::Dataset blobs(int64_t rows, int64_t features, int classes) {
  std::mt19937_64 gen(11);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(rows * features));
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    y[static_cast<std::size_t>(r)] = static_cast<int32_t>(r % classes);
    for (int64_t f = 0; f < features; ++f)
      x[static_cast<std::size_t>(r * features + f)] = normal(gen) + (f % classes == r % classes ? 1.5f : 0.0f);
  }
  return {tandem::Tensor::from({rows, features}, std::span<const float>(x)), tandem::Tensor::from({rows}, std::span<const int32_t>(y))};
}

// Per weight tensor, the largest elementwise difference relative to the tensor's largest value
// (at least `floor`); the worst over tensors. (Elementwise relative error is meaningless for
// weights near zero.)
inline double max_relative_difference(const std::vector<tandem::Tensor>& a, const std::vector<tandem::Tensor>& b, double floor = 1e-12) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double diff = 0, scale = floor;
    for (int64_t j = 0; j < a[i].size(); ++j) {
      diff = std::max(diff, std::abs(a[i].item(j) - b[i].item(j)));
      scale = std::max(scale, std::abs(b[i].item(j)));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// The graph of one micro-batch of a training step through layers of matmul and tanh, (name,
// units) each, every node in the scope of its layer; `optimizer` emits the updates.
struct LayeredGraph {
  tandem::graph::Graph g;
  std::vector<tandem::graph::Value> fetches;
  LayeredGraph(const std::vector<std::pair<std::string, int64_t>>& layers, int64_t rows, int64_t in,
               tandem::OptimizerPtr optimizer = tandem::optimizers::SGD(0.1)) {
    tandem::graph::Value h = g.placeholder("x", {tandem::Shape{rows, in}, tandem::DType::F32});
    std::vector<tandem::graph::Value> weights;
    std::vector<tandem::VariablePtr> vars;
    for (const auto& [name, units] : layers) {
      tandem::graph::ScopeGuard scope(g, name);
      const int64_t from = g.type(h).shape[1];
      vars.push_back(std::make_shared<tandem::Variable>(name + "/kernel", tandem::Tensor({from, units}, tandem::DType::F32), true));
      weights.push_back(g.variable({vars.back()->id(), vars.back()->path(), vars.back()->value().type(), true}));
      h = tandem::ops::tanh(g, tandem::ops::matmul(g, h, weights.back()));
    }
    tandem::graph::Value loss;
    {
      tandem::graph::ScopeGuard scope(g, "loss", tandem::graph::Role::Loss);
      loss = tandem::ops::micro_sum(g, tandem::ops::reduce_sum(g, tandem::ops::mul(g, h, h), {0, 1}));
    }
    std::vector<tandem::graph::Value> grads = tandem::autodiff::gradients(g, g.node(loss.node).inputs[0], weights);
    {
      tandem::graph::ScopeGuard phase(g, tandem::graph::Phase::Backward);
      for (tandem::graph::Value& grad : grads) grad = tandem::ops::micro_sum(g, grad);
    }
    optimizer->emit_updates(g, vars, grads);
    fetches = {loss};
  }
};

// The row of `layer` in the placement table under `title` of a summary() text.
inline std::string placement_row(const std::string& text, const std::string& title, const std::string& layer) {
  const std::size_t table = text.find(title);
  const std::size_t at = table == std::string::npos ? table : text.find("│ " + layer + " ", table);
  if (at == std::string::npos) return "(no row for " + layer + " under " + title + ")";
  return text.substr(at, text.find('\n', at) - at);
}

// The Transformer example's blocks at small sizes, trained for five steps (batch 16, SGD with
// momentum) from seed 12 under `strategy`: tokens -> embedding + positions -> 2 × (layer norm,
// causal self-attention "attn_i" with dropout, residual add, layer norm, feed-forward "up_i"
// (gelu) and "down_i", residual add) -> layer norm -> next-token logits "logits".
inline std::vector<tandem::Tensor> train_transformer(tandem::distribute::StrategyPtr strategy) {
  namespace tl = tandem::layers;
  const int64_t V = 8, T = 6, D = 16, rows = 80;
  std::mt19937_64 gen(5);
  std::uniform_int_distribution<int32_t> tok(0, V - 1);
  std::vector<int32_t> x(static_cast<std::size_t>(rows * T)), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = tok(gen);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = (i + 1) % static_cast<std::size_t>(T) ? x[i + 1] : x[i];
  tandem::set_random_seed(12);
  auto in = tandem::Input({T}, tandem::DType::I32);
  auto e = tl::Embedding(V, D, {.name = "tokens"})(in);
  auto h = tl::Add()({e, tl::PositionEmbedding(T)(e)});
  for (int block = 0; block < 2; ++block) {
    const std::string i = std::to_string(block);
    auto n = tl::LayerNormalization()(h);
    h = tl::Add()({h, tl::MultiHeadAttention(2, 8, {.dropout = 0.1, .use_causal_mask = true, .name = "attn_" + i})({n, n})});
    auto n1 = tl::LayerNormalization()(h);
    h = tl::Add()({h, tl::Dense(D, "", {.name = "down_" + i})(tl::Dense(2 * D, "gelu", {.name = "up_" + i})(n1))});
  }
  tandem::Model model(in, tl::Dense(V, "", {.name = "logits"})(tl::LayerNormalization()(h)));
  // SGD: attention's key bias has a zero gradient up to rounding (softmax ignores a shift),
  // which Adam's division by √v would turn into steps of the learning rate's size.
  model.compile({.optimizer = tandem::optimizers::SGD(0.1, {.momentum = 0.9}),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
  model.fit(tandem::Tensor::from({rows, T}, std::span<const int32_t>(x)), tandem::Tensor::from({rows, T}, std::span<const int32_t>(y)),
            {.epochs = 1, .batch_size = 16, .verbose = 0});
  return model.get_weights();
}
