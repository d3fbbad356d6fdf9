// Tandem against Keras 3 under the mixed_bfloat16 policy: three Keras-made models (an MLP and a CNN
// on Fashion-MNIST-shaped images, a small Transformer block on tokens), every layer under
// mixed_bfloat16, loaded from their .keras files and evaluated on the batch Keras evaluated
// (tests/data/make_mixed_loss_refs.py, JAX backend). The losses agree within 1e-2 relative: on the
// batch, after one SGD step on it, and for that step's own loss. Both frameworks round to bfloat16,
// but in different places (Keras casts each layer's inputs and runs the softmax heads in bfloat16;
// Tandem runs softmax and the loss in float32), so equal arithmetic is not expected.
// The same weights under the float32 policy give a loss that differs measurably from the
// mixed_bfloat16 one, in Tandem as in Keras: the low dtype is really used.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <tandem/tandem.h>

#include "tests/keras_file_helpers.h"

namespace fs = std::filesystem;
using namespace keras_file_helpers;

namespace {

const fs::path kData = fs::path(TANDEM_TEST_DATA) / "keras";
constexpr double kTolerance = 1e-2;  // relative, Tandem's loss against Keras's
// float32 alone (summation order) moves a loss of order 1 by ~1e-7 relative; the bfloat16 policy
// must move it by far more than that.
constexpr double kLowDtypeEffect = 1e-5;

double relative(double a, double b) { return std::abs(a - b) / std::abs(b); }

struct Batch {
  Tensor x, y;
};

// The batch as the script gave it to Keras: images stored as integers 0..255 and read as
// integer * image_scale (exact in float32), tokens and labels as integers.
Batch batch_of(const Json& refs, const std::string& name) {
  const Json& b = refs.at("batches").at(name);
  Tensor x = tensor_of(b.at("x"), DType::I32);
  if (name == "images") {
    std::vector<double> v = b.at("x").at("values").get<std::vector<double>>();
    for (double& p : v) p *= refs.at("image_scale").get<double>();
    x = Tensor::from(tandem::Shape(b.at("x").at("shape").get<std::vector<int64_t>>()), std::span<const double>(v)).cast(DType::F32);
  }
  return {x, tensor_of(b.at("y"), DType::I32)};
}

double loss_on(tandem::Model& model, const Batch& b) {
  return model.evaluate(b.x, b.y, {.batch_size = b.x.shape()[0], .verbose = 0}).at("loss");
}

}  // namespace

TEST_CASE("Keras-made models under mixed_bfloat16 give Keras's loss on the same weights and batch, within 1e-2 relative") {
  const Json refs = read_json(kData / "mixed_loss_refs.json");
  REQUIRE(refs.at("policy") == "mixed_bfloat16");
  for (const std::string name : {"mixed_loss_mlp", "mixed_loss_cnn", "mixed_loss_transformer"}) {
    INFO("model " << name << ", Keras " << refs.at("keras_version").get<std::string>());
    const Json& m = refs.at("models").at(name);
    const Batch batch = batch_of(refs, m.at("batch").get<std::string>());
    const fs::path file = kData / (name + ".keras");

    // Every layer carries the policy Keras gave it (an InputLayer's config records its input's
    // dtype, not a policy).
    std::unique_ptr<tandem::Model> model = tandem::load_model(file.string());
    int mixed = 0;
    for (const auto& layer : model->layers()) {
      if (layer->class_name() == "InputLayer") continue;
      INFO("layer " << layer->name());
      CHECK(layer->dtype_policy().name() == "mixed_bfloat16");
      CHECK(layer->dtype_policy().name() == m.at("policies").at(layer->name()).get<std::string>());
      for (const Tensor& w : layer->get_weights()) CHECK(w.dtype() == DType::F32);
      ++mixed;
    }
    CHECK(mixed + 1 == static_cast<int>(m.at("policies").size()));

    const double loss = loss_on(*model, batch), keras_loss = m.at("loss").get<double>();

    // The same weights with every layer under float32.
    std::unique_ptr<tandem::Model> plain = tandem::load_model(file.string());
    for (const auto& layer : plain->layers()) layer->set_dtype_policy("float32");
    const double loss_float32 = loss_on(*plain, batch), keras_float32 = m.at("loss_float32").get<double>();

    // One SGD step (the compiled optimizer, SGD(0.1)) on the batch, then the batch's loss again.
    REQUIRE(model->optimizer());
    const double step_loss = model->train_on_batch(batch.x, batch.y).at("loss");
    const double after = loss_on(*model, batch);

    MESSAGE(name << ": loss Tandem " << loss << ", Keras " << keras_loss << ", relative difference " << relative(loss, keras_loss)
                 << "; train step loss relative difference " << relative(step_loss, m.at("train_step_loss").get<double>())
                 << "; loss after the step relative difference " << relative(after, m.at("loss_after_step").get<double>()));
    MESSAGE(name << ": float32 policy, same weights: Tandem " << loss_float32 << " (Keras " << keras_float32
                 << ", relative difference " << relative(loss_float32, keras_float32) << "); mixed_bfloat16 against float32: Tandem "
                 << relative(loss, loss_float32) << ", Keras " << relative(keras_loss, keras_float32));
    CHECK(relative(loss, keras_loss) <= kTolerance);
    CHECK(relative(step_loss, m.at("train_step_loss").get<double>()) <= kTolerance);
    CHECK(relative(after, m.at("loss_after_step").get<double>()) <= kTolerance);
    // float32 against float32 is near-equal arithmetic: a much tighter check of the same weights
    // and batch, so the bfloat16 comparison above is not a loose match of different inputs.
    CHECK(relative(loss_float32, keras_float32) <= 1e-5);
    // The low dtype is used: the mixed_bfloat16 loss is not the float32 one.
    CHECK(relative(loss, loss_float32) >= kLowDtypeEffect);
  }
}
