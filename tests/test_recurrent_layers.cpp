// The recurrent layers (LSTM, GRU, SimpleRNN, Bidirectional) as layers: shapes, weights and their
// initialisation (orthogonal recurrent kernels, unit_forget_bias) against closed forms, dropout,
// argument errors, and an LSTM stage under Pipeline against Default. Their values and gradients
// against PyTorch and finite differences are tests/test_recurrent_ops.cpp's; against Keras (files
// Keras made, predictions and one more training step) tests/test_keras_files.cpp's.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>

#include "tests/strategy_helpers.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
using tandem::Shape;
using tandem::Tensor;

namespace {
std::vector<double> values(const Tensor& t) {
  const Tensor d = t.cast(tandem::DType::F64);
  return {d.values<double>().begin(), d.values<double>().end()};
}

// max |QᵀQ − I| over the columns of an (rows, cols) matrix with rows >= cols, or QQᵀ when rows < cols.
double orthonormality_error(const Tensor& w) {
  const std::vector<double> v = values(w);
  const int64_t r = w.shape()[0], c = w.shape()[1];
  const bool by_columns = r >= c;
  const int64_t n = by_columns ? c : r, len = by_columns ? r : c;
  auto at = [&](int64_t vec, int64_t i) { return by_columns ? v[static_cast<std::size_t>(i * c + vec)] : v[static_cast<std::size_t>(vec * c + i)]; };
  double worst = 0;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b) {
      double dot = 0;
      for (int64_t i = 0; i < len; ++i) dot += at(a, i) * at(b, i);
      worst = std::max(worst, std::abs(dot - (a == b ? 1.0 : 0.0)));
    }
  return worst;
}

Tensor random_sequences(int64_t n, int64_t steps, int64_t features, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<std::size_t>(n * steps * features));
  for (float& x : v) x = normal(rng);
  return Tensor::from(Shape{n, steps, features}, v);
}
}  // namespace

TEST_CASE("recurrent layers: output shapes for return_sequences, the weights Keras has, orthogonal recurrent kernels and the forget bias") {
  tandem::set_random_seed(1);
  auto x = tandem::Input({7, 5});
  auto lstm = tl::LSTM(4, {.return_sequences = true});
  auto gru = tl::GRU(3);
  auto gru_before = tl::GRU(3, {.reset_after = false, .name = "gru_before"});
  auto rnn = tl::SimpleRNN(6, {.return_sequences = true});
  auto bi = tl::Bidirectional(tl::LSTM(2, {.return_sequences = true}));
  auto bi_sum = tl::Bidirectional(tl::GRU(2), {.merge_mode = "sum"});
  CHECK(lstm(x).shape() == Shape{-1, 7, 4});
  CHECK(gru(x).shape() == Shape{-1, 3});
  CHECK(gru_before(x).shape() == Shape{-1, 3});
  CHECK(rnn(x).shape() == Shape{-1, 7, 6});
  CHECK(bi(x).shape() == Shape{-1, 7, 4});
  CHECK(bi_sum(x).shape() == Shape{-1, 2});

  auto shapes = [](const tandem::LayerRef& l) {
    std::vector<Shape> s;
    for (const auto& w : l->weights()) s.push_back(w->value().shape());
    return s;
  };
  CHECK(shapes(lstm) == std::vector<Shape>{{5, 16}, {4, 16}, {16}});
  CHECK(shapes(gru) == std::vector<Shape>{{5, 9}, {3, 9}, {2, 9}});
  CHECK(shapes(gru_before) == std::vector<Shape>{{5, 9}, {3, 9}, {9}});
  CHECK(shapes(rnn) == std::vector<Shape>{{5, 6}, {6, 6}, {6}});
  CHECK(shapes(bi) == std::vector<Shape>{{5, 8}, {2, 8}, {8}, {5, 8}, {2, 8}, {8}});

  // Keras's default recurrent initializer is orthogonal: (units, gates·units) has orthonormal rows.
  CHECK(orthonormality_error(lstm->weights()[1]->value()) < 1e-6);
  CHECK(orthonormality_error(rnn->weights()[1]->value()) < 1e-6);
  // unit_forget_bias: the forget gate's quarter of the bias is 1, the rest the initializer's zeros.
  const std::vector<double> b = values(lstm->weights()[2]->value());
  for (std::size_t j = 0; j < b.size(); ++j) CHECK(b[j] == (j >= 4 && j < 8 ? 1.0 : 0.0));
}

TEST_CASE("recurrent layers: Bidirectional names its copies as Keras does and wraps recurrent layers only") {
  auto bi = tl::Bidirectional(tl::GRU(2, {.name = "enc"}));
  bi(tandem::Input({3, 2}));
  const auto& w = bi->weights();
  REQUIRE(w.size() == 6);
  CHECK(w[0]->path() == "forward_enc/kernel");
  CHECK(w[3]->path() == "backward_enc/kernel");
  CHECK_THROWS_WITH_AS(tl::Bidirectional(tl::Dense(3)), doctest::Contains("expected an LSTM, GRU or SimpleRNN layer to wrap, got Dense"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Bidirectional(tl::LSTM(2), {.merge_mode = "max"}), doctest::Contains("merge_mode must be"), tandem::ValueError);
}

TEST_CASE("recurrent layers: arguments that do not belong to the layer or that the kernels lack are refused naming the layer") {
  CHECK_THROWS_WITH_AS(tl::SimpleRNN(3, {.recurrent_activation = "tanh", .name = "s"}),
                       doctest::Contains("SimpleRNN \"s\": recurrent_activation is an LSTM and GRU argument"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::LSTM(3, {.reset_after = false, .name = "l"}), doctest::Contains("LSTM \"l\": reset_after is a GRU argument"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::GRU(3, {.activation = "gelu", .name = "g"}),
                       doctest::Contains("GRU \"g\": activation must be \"tanh\", \"sigmoid\", \"relu\" or \"linear\""), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::LSTM(0), doctest::Contains("units must be positive, got 0"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::GRU(2, {.dropout = 1.0}), doctest::Contains("dropout must be in [0, 1), got 1"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::LSTM(2, {.name = "flat"})(tandem::Input({6})), doctest::Contains("LSTM \"flat\": expected a sequence input"),
                       tandem::ValueError);
}

TEST_CASE("recurrent layers: dropout and recurrent dropout change training, and the same seed trains the same weights") {
  auto train = [](double dropout, double recurrent_dropout) {
    tandem::set_random_seed(4);
    tandem::Sequential model({tl::InputLayer({6, 3}), tl::LSTM(5, {.dropout = dropout, .recurrent_dropout = recurrent_dropout, .return_sequences = true}),
                              tl::GRU(4, {.dropout = dropout, .recurrent_dropout = recurrent_dropout, .return_sequences = true}),
                              tl::SimpleRNN(3, {.dropout = dropout, .recurrent_dropout = recurrent_dropout}), tl::Dense(2)});
    model.compile({.optimizer = tandem::optimizers::Adam(1e-2), .loss = tandem::losses::MeanSquaredError()});
    const Tensor x = random_sequences(16, 6, 3, 7);
    std::vector<float> y(32, 0.5f);
    model.fit(x, Tensor::from(Shape{16, 2}, y), {.epochs = 2, .batch_size = 8, .verbose = 0});
    return model.get_weights();
  };
  const auto plain = train(0, 0);
  const auto dropped = train(0.3, 0.3);
  CHECK(max_relative_difference(dropped, train(0.3, 0.3)) == 0.0);
  CHECK(max_relative_difference(dropped, plain) > 1e-4);
  CHECK(max_relative_difference(train(0.3, 0), plain) > 1e-4);
  CHECK(max_relative_difference(train(0, 0.3), plain) > 1e-4);
}

TEST_CASE("recurrent layers: an LSTM stage under Pipeline on 2 devices (and under Mirrored and ModelSplit) ends five steps with Default's weights") {
  auto five_steps = [](dist::StrategyPtr strategy) {
    tandem::set_random_seed(5);
    tandem::Sequential model({tl::InputLayer({24}), tl::Reshape({6, 4}), tl::LSTM(8, {.return_sequences = true, .name = "lstm"}),
                              tl::GRU(6, {.name = "gru"}), tl::Dense(5, "", {.name = "head"})});
    model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
    model.fit(blobs(80, 24, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
    CHECK(model.optimizer()->iterations() == 5);
    return model.get_weights();
  };
  const auto reference = five_steps(dist::Default());
  for (int64_t micro : {1, 2, 4}) {
    INFO(micro << " micro-batches");
    const auto piped = five_steps(dist::Pipeline(cpus(2), {.boundaries = {"gru"}, .micro_batches = micro}));
    CHECK(max_relative_difference(piped, reference, 1e-3) <= 1e-5);
  }
  const auto mirrored = five_steps(dist::Mirrored(cpus(2)));
  CHECK(max_relative_difference(mirrored, reference, 1e-3) <= 1e-5);
  // Each recurrent layer is one placement unit: the LSTM on one device, the GRU on the other.
  const auto split = five_steps(dist::ModelSplit(cpus(2), {.placement = {{"lstm", "cpu:0"}, {"gru", "cpu:1"}}}));
  CHECK(max_relative_difference(split, reference, 1e-3) <= 1e-5);
}

TEST_CASE("recurrent layers: return_state gives the states as more outputs, and initial states are inputs") {
  tandem::set_random_seed(9);
  auto x = tandem::Input({5, 3});
  auto lstm = tl::LSTM(4, {.return_sequences = true, .return_state = true, .name = "lstm_states"});
  const std::vector<tandem::Symbol> outs = lstm.outputs(x);
  REQUIRE(outs.size() == 3);
  CHECK(outs[0].shape() == Shape{-1, 5, 4});
  CHECK(outs[1].shape() == Shape{-1, 4});
  CHECK(outs[2].shape() == Shape{-1, 4});
  CHECK_THROWS_WITH_AS(lstm(x), doctest::Contains("LSTM \"lstm_states\": its call has 3 outputs"), tandem::ValueError);

  // The final h is the sequence's last step; a GRU started from given zeros equals one started
  // from its own; started from the LSTM's final state it differs.
  auto gru = tl::GRU(4, {.name = "gru_from_state"});
  auto h0 = tandem::Input({4});
  auto from_state = gru({x, outs[1]});
  auto from_input = gru({x, h0});
  auto from_zeros = gru(x);
  tandem::Model model({x, h0}, {outs[0], outs[1], from_state, from_input, from_zeros});
  const Tensor xs = random_sequences(3, 5, 3, 11);
  const std::vector<Tensor> y = model.predict({xs, Tensor::from(Shape{3, 4}, std::vector<float>(12, 0.0f))});
  const std::vector<double> seq = values(y[0]), h = values(y[1]);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t j = 0; j < 4; ++j) CHECK(h[static_cast<std::size_t>(b * 4 + j)] == seq[static_cast<std::size_t>((b * 5 + 4) * 4 + j)]);
  CHECK(max_relative_difference({y[3]}, {y[4]}) == 0.0);
  CHECK(max_relative_difference({y[2]}, {y[4]}) > 1e-3);
  CHECK_THROWS_WITH_AS(gru({x, h0, h0}), doctest::Contains("expected the sequence alone or the sequence and 1 initial state"), tandem::ValueError);
}
