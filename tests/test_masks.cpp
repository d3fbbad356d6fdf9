// Keras masks: Embedding(mask_zero=True) and Masking make them, Dense, Dropout, LayerNormalization,
// Add and MultiHeadAttention pass them on, GlobalAveragePooling1D and the loss consume them, and a
// layer that cannot take one refuses it by name. Truth: a padded batch must train exactly as its
// rows do unpadded (the same loss and gradients, within 1e-6), and closed forms on the host.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <functional>

#include "layer_base/symbol.h"

namespace tl = tandem::layers;
using tandem::DType;
using tandem::Symbol;
using tandem::Tensor;

namespace {

constexpr int64_t kSteps = 6;
// Rows of ids with trailing padding (0): the lengths below, ids in [1, 9].
const std::vector<int64_t> kLengths = {6, 2, 4, 1};

std::vector<int32_t> row_ids(std::size_t r, int64_t length) {
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < length; ++t) ids.push_back(static_cast<int32_t>(1 + (3 * r + 5 * static_cast<std::size_t>(t)) % 9));
  return ids;
}

Tensor padded_ids() {
  std::vector<int32_t> all;
  for (std::size_t r = 0; r < kLengths.size(); ++r) {
    std::vector<int32_t> ids = row_ids(r, kLengths[r]);
    ids.resize(kSteps, 0);
    all.insert(all.end(), ids.begin(), ids.end());
  }
  return Tensor::from({static_cast<int64_t>(kLengths.size()), kSteps}, std::span<const int32_t>(all));
}

Tensor labels(std::size_t from, std::size_t count) {
  std::vector<int32_t> y;
  for (std::size_t r = from; r < from + count; ++r) y.push_back(static_cast<int32_t>(r % 3));
  return Tensor::from({static_cast<int64_t>(count)}, std::span<const int32_t>(y));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tandem::Error& e) {
    return e.what();
  }
  return "";
}

// Trains one SGD step (learning rate 1, so a weight's change is minus its gradient) of the model
// `build` makes on the padded batch, and of the same layers on each row unpadded (a batch of one
// of its own length). The padded loss must be the mean of the rows' losses and its gradients
// the mean of theirs: masked steps change nothing.
void check_padding_changes_nothing(const std::function<Symbol(const Symbol&)>& build) {
  const Symbol padded_in = tandem::Input({kSteps}, DType::I32);
  tandem::Model padded(padded_in, build(padded_in));
  padded.compile({.optimizer = tandem::optimizers::SGD(1.0),
                  .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const std::vector<Tensor> start = padded.get_weights();

  double loss_sum = 0;
  std::vector<std::vector<double>> grad_sum(start.size());
  for (std::size_t w = 0; w < start.size(); ++w) grad_sum[w].assign(static_cast<std::size_t>(start[w].size()), 0.0);
  for (std::size_t r = 0; r < kLengths.size(); ++r) {
    const Symbol in = tandem::Input({kLengths[r]}, DType::I32);
    tandem::Model row(in, build(in));  // the same layer objects: the same weights
    row.compile({.optimizer = tandem::optimizers::SGD(1.0),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    row.set_weights(start);
    const std::vector<int32_t> ids = row_ids(r, kLengths[r]);
    loss_sum += row.train_on_batch(Tensor::from({1, kLengths[r]}, std::span<const int32_t>(ids)), labels(r, 1)).at("loss");
    const std::vector<Tensor> after = row.get_weights();
    for (std::size_t w = 0; w < start.size(); ++w)
      for (int64_t i = 0; i < start[w].size(); ++i) grad_sum[w][static_cast<std::size_t>(i)] += start[w].item(i) - after[w].item(i);
  }

  padded.set_weights(start);
  const double loss = padded.train_on_batch(padded_ids(), labels(0, kLengths.size())).at("loss");
  CHECK(std::abs(loss - loss_sum / double(kLengths.size())) <= 1e-6);
  const std::vector<Tensor> after = padded.get_weights();
  double worst = 0, largest = 0;
  for (std::size_t w = 0; w < start.size(); ++w)
    for (int64_t i = 0; i < start[w].size(); ++i) {
      const double grad = start[w].item(i) - after[w].item(i), expected = grad_sum[w][static_cast<std::size_t>(i)] / double(kLengths.size());
      worst = std::max(worst, std::abs(grad - expected));
      largest = std::max(largest, std::abs(expected));
    }
  CHECK(largest > 1e-3);  // the gradients are not all zero
  CHECK(worst <= 1e-6);
}

}  // namespace

TEST_CASE("masks: Embedding(mask_zero) -> GlobalAveragePooling1D trains on a padded batch as on its rows unpadded") {
  tandem::set_random_seed(3);
  const auto emb = tl::Embedding(10, 4, {.mask_zero = true});
  const auto pool = tl::GlobalAveragePooling1D();
  const auto out = tl::Dense(3);
  check_padding_changes_nothing([&](const Symbol& ids) { return out(pool(emb(ids))); });
}

TEST_CASE("masks: a Transformer block with a padding mask trains on a padded batch as on its rows unpadded") {
  tandem::set_random_seed(4);
  const auto emb = tl::Embedding(10, 8, {.mask_zero = true});
  const auto attention = tl::MultiHeadAttention(2, 4);
  const auto add = tl::Add();
  const auto norm = tl::LayerNormalization();
  const auto ffn = tl::Dense(8, "relu");
  const auto pool = tl::GlobalAveragePooling1D();
  const auto out = tl::Dense(3);
  check_padding_changes_nothing([&](const Symbol& ids) {
    const Symbol e = emb(ids);
    const Symbol h = norm(add({e, attention({e, e})}));
    return out(pool(ffn(h)));
  });
}

TEST_CASE("masks: Dense, Dropout and LayerNormalization pass the mask on; the prediction averages the unpadded steps") {
  tandem::set_random_seed(5);
  const auto emb = tl::Embedding(10, 4, {.mask_zero = true, .name = "emb"});
  const auto dense = tl::Dense(5, "tanh");
  const auto drop = tl::Dropout(0.5);
  const auto norm = tl::LayerNormalization();
  const auto pool = tl::GlobalAveragePooling1D();
  auto body = [&](const Symbol& ids) { return norm(drop(dense(emb(ids)))); };
  const Symbol in = tandem::Input({kSteps}, DType::I32);
  const Symbol h = body(in);
  CHECK(h.node()->masked);
  CHECK(h.node()->mask_origin == "Embedding \"emb\"");
  const Symbol pooled = pool(h);
  CHECK(!pooled.node()->masked);
  tandem::Model padded(in, pooled);
  const Tensor p = padded.predict(padded_ids());
  for (std::size_t r = 0; r < kLengths.size(); ++r) {
    const Symbol row_in = tandem::Input({kLengths[r]}, DType::I32);
    tandem::Model row(row_in, pool(body(row_in)));
    const std::vector<int32_t> ids = row_ids(r, kLengths[r]);
    const Tensor q = row.predict(Tensor::from({1, kLengths[r]}, std::span<const int32_t>(ids)));
    for (int64_t j = 0; j < 5; ++j) CHECK(std::abs(p.item(static_cast<int64_t>(r) * 5 + j) - q.item(j)) <= 1e-6);
  }
}

TEST_CASE("masks: a layer that cannot take a mask refuses it, naming itself and where the mask comes from") {
  const auto emb = tl::Embedding(10, 4, {.mask_zero = true, .name = "emb"});
  const Symbol ids = tandem::Input({kSteps}, DType::I32);
  const Symbol e = emb(ids);
  std::string msg = error_of([&] { tl::Flatten("flat")(e); });
  CHECK(msg.find("Flatten \"flat\" cannot take a mask; its input comes from Embedding \"emb\"") != std::string::npos);
  msg = error_of([&] { tl::GlobalMaxPooling1D({.name = "gmp"})(tl::Masking(0.0, "mask")(tandem::Input({3, 2}))); });
  CHECK(msg.find("GlobalMaxPooling1D \"gmp\" cannot take a mask; its input comes from Masking \"mask\"") != std::string::npos);
  // Without mask_zero there is no mask, and Flatten takes the output.
  CHECK(tl::Flatten()(tl::Embedding(10, 4)(ids)).shape() == tandem::Shape({-1, kSteps * 4}));
}

TEST_CASE("masks: Masking zeroes the steps equal to mask_value and masks them") {
  // Two rows of three steps of two features; mask_value 0.5. A step is masked only when every
  // feature equals it.
  const std::vector<float> v = {1, 2, 0.5f, 0.5f, 0.5f, 3,  // row 0: step 1 masked
                                0.5f, 0.5f, 4, 5, 6, 7};   // row 1: step 0 masked
  const Tensor x = Tensor::from({2, 3, 2}, std::span<const float>(v));
  const Symbol in = tandem::Input({3, 2});
  const auto masking = tl::Masking(0.5);
  const Symbol m = masking(in);
  tandem::Model out({in}, {m, tl::GlobalAveragePooling1D()(m)});
  const std::vector<Tensor> p = out.predict(std::vector<Tensor>{x});
  const std::vector<float> zeroed = {1, 2, 0, 0, 0.5f, 3, 0, 0, 4, 5, 6, 7};
  for (int64_t i = 0; i < 12; ++i) CHECK(p[0].item(i) == zeroed[static_cast<std::size_t>(i)]);
  // The mean over the unmasked steps only: row 0 steps 0 and 2, row 1 steps 1 and 2.
  const std::vector<double> mean = {(1 + 0.5) / 2, (2 + 3) / 2.0, (4 + 6) / 2.0, (5 + 7) / 2.0};
  for (int64_t i = 0; i < 4; ++i) CHECK(std::abs(p[1].item(i) - mean[static_cast<std::size_t>(i)]) <= 1e-6);
}

TEST_CASE("masks: the loss of a masked output counts the unmasked steps only (Keras's sum_over_batch_size)") {
  // The model's output is the embedding (batch, steps, 1) of ids whose rows are padded with 0;
  // with a table [0, 1, 2, 3] and targets 0.5, mse per step is (id - 0.5)², and the loss is their
  // sum over the unpadded steps divided by how many there are.
  const auto emb = tl::Embedding(4, 1, {.mask_zero = true});
  const Symbol in = tandem::Input({3}, DType::I32);
  tandem::Model model(in, emb(in));
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const std::vector<double> table = {0, 1, 2, 3};
  model.set_weights({Tensor::from({4, 1}, std::span<const double>(table))});
  const std::vector<int32_t> ids = {1, 3, 0, 2, 0, 0};
  const std::vector<double> target(6, 0.5);
  const double loss = model.evaluate(Tensor::from({2, 3}, std::span<const int32_t>(ids)),
                                     Tensor::from({2, 3, 1}, std::span<const double>(target)).cast(DType::F32), {.verbose = 0})
                          .at("loss");
  const double expected = (0.25 + 6.25 + 2.25) / 3;  // ids 1, 3, 2
  CHECK(std::abs(loss - expected) <= 1e-6);

  // Every step padded: nothing counts, and the loss is 0 (Keras's divide_no_nan).
  const std::vector<int32_t> none(6, 0);
  CHECK(model.evaluate(Tensor::from({2, 3}, std::span<const int32_t>(none)),
                       Tensor::from({2, 3, 1}, std::span<const double>(target)).cast(DType::F32), {.verbose = 0})
            .at("loss") == 0.0);

}

TEST_CASE("masks: the metrics of a masked output count its unmasked steps of the whole epoch, as Keras weighs them by the mask") {
  const auto emb = tl::Embedding(4, 1, {.mask_zero = true});
  const Symbol in = tandem::Input({3}, DType::I32);
  tandem::Model model(in, emb(in));
  model.compile({.optimizer = "sgd", .loss = "mse", .metrics = {"mae", "mse"}});
  const std::vector<double> table = {0, 1, 2, 3};
  model.set_weights({Tensor::from({4, 1}, std::span<const double>(table))});
  // Rows of 2 and 1 real steps, one per batch: Keras's epoch mean is over the 3 real steps, not
  // the mean of the two batches' means.
  const std::vector<int32_t> ids = {1, 3, 0, 3, 0, 0};
  const std::vector<double> target(6, 0.5);
  const tandem::Logs logs = model.evaluate(Tensor::from({2, 3}, std::span<const int32_t>(ids)),
                                           Tensor::from({2, 3, 1}, std::span<const double>(target)).cast(DType::F32),
                                           {.batch_size = 1, .verbose = 0});
  CHECK(std::abs(logs.at("mae") - (0.5 + 2.5 + 2.5) / 3) <= 1e-6);
  CHECK(std::abs(logs.at("mse") - (0.25 + 6.25 + 6.25) / 3) <= 1e-6);

  // Precision and recall count each element by the mask (Keras's sample_weight). Unmasked, the
  // predictions are 1, 3 (row 0) and 3 (row 1), all above 0.5, with targets 1, 0 and 0: precision
  // 1/3, recall 1/1. Counted over the padding too (predictions 0), recall would be 1/4.
  model.compile({.optimizer = "sgd", .loss = "mse", .metrics = {"precision", "recall"}});
  const std::vector<double> labels = {1, 0, 1, 0, 1, 1};
  const tandem::Logs counted = model.evaluate(Tensor::from({2, 3}, std::span<const int32_t>(ids)),
                                              Tensor::from({2, 3, 1}, std::span<const double>(labels)).cast(DType::F32), {.verbose = 0});
  CHECK(std::abs(counted.at("precision") - 1.0 / 3) <= 1e-6);
  CHECK(std::abs(counted.at("recall") - 1.0) <= 1e-6);
}

TEST_CASE("masks: recurrent layers carry their states over masked steps, so a padded batch trains as its rows unpadded") {
  SUBCASE("LSTM, last output") {
    tandem::set_random_seed(5);
    const auto emb = tl::Embedding(10, 4, {.mask_zero = true});
    const auto lstm = tl::LSTM(5);
    const auto out = tl::Dense(3);
    check_padding_changes_nothing([&](const Symbol& ids) { return out(lstm(emb(ids))); });
  }
  SUBCASE("GRU sequences into GlobalAveragePooling1D (the mask passes through the GRU)") {
    tandem::set_random_seed(6);
    const auto emb = tl::Embedding(10, 4, {.mask_zero = true});
    const auto gru = tl::GRU(5, {.return_sequences = true});
    const auto pool = tl::GlobalAveragePooling1D();
    const auto out = tl::Dense(3);
    check_padding_changes_nothing([&](const Symbol& ids) { return out(pool(gru(emb(ids)))); });
  }
  SUBCASE("GRU without reset_after, SimpleRNN going backwards") {
    tandem::set_random_seed(7);
    const auto emb = tl::Embedding(10, 4, {.mask_zero = true});
    const auto gru = tl::GRU(4, {.reset_after = false, .return_sequences = true});
    const auto rnn = tl::SimpleRNN(3, {.go_backwards = true});
    const auto out = tl::Dense(3);
    check_padding_changes_nothing([&](const Symbol& ids) { return out(rnn(gru(emb(ids)))); });
  }
  SUBCASE("Bidirectional LSTM: the backward direction starts at each row's last real step") {
    tandem::set_random_seed(8);
    const auto emb = tl::Embedding(10, 4, {.mask_zero = true});
    const auto bi = tl::Bidirectional(tl::LSTM(3, {.return_sequences = true}));
    const auto pool = tl::GlobalAveragePooling1D();
    const auto out = tl::Dense(3);
    check_padding_changes_nothing([&](const Symbol& ids) { return out(pool(bi(emb(ids)))); });
  }
}
