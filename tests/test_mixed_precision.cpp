// Keras's dtype policies: the names and the dtypes they give, the global policy that layers take
// when they are made, the per-layer override, and the `dtype` key of layer configs written and read
// exactly as Keras 3 does (DTypePolicy objects and plain names), with Keras-made models under
// mixed_bfloat16, float16 and bfloat16 policies (tests/data/make_keras_files.py, MIXED_MODELS)
// loading with their policies and weights. Tandem computes those models in their policies' 16-bit
// dtypes, as Keras does, but casts in other places (docs/mixed-precision.md), so their predictions
// are compared with Keras's at a 16-bit tolerance, not as equal arithmetic; the losses of larger
// models under mixed_bfloat16 are compared with Keras's in tests/test_keras_mixed_loss.cpp.
#include <doctest/doctest.h>

#include <filesystem>
#include <tandem/tandem.h>

#include "io/hdf5_file.h"
#include "layers/config.h"
#include "global_policy.h"
#include "scratch_dir.h"
#include "tests/keras_file_helpers.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
namespace mp = tandem::mixed_precision;
using namespace keras_file_helpers;
using tandem::DTypePolicy;

namespace {

const fs::path kData = fs::path(TANDEM_TEST_DATA) / "keras";
const ScratchRoot scratch_root("tandem_mixed_precision");

Json keras_policy(const std::string& name) {
  return Json{{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", name}}}, {"registered_name", nullptr}};
}

// The config entry of the layer called `name` in an archive's config.json.
Json layer_entry(const Json& config, const std::string& name) {
  for (const Json& l : config.at("config").at("layers"))
    if (l.at("config").at("name") == name) return l.at("config");
  FAIL("no layer " << name);
  return {};
}

}  // namespace

TEST_CASE("DTypePolicy: Keras's names and the compute and variable dtypes they give") {
  struct Case {
    const char* name;
    DType compute, variable;
  };
  for (const Case& c : {Case{"mixed_float16", DType::F16, DType::F32}, Case{"mixed_bfloat16", DType::BF16, DType::F32},
                        Case{"float32", DType::F32, DType::F32}, Case{"float64", DType::F64, DType::F64},
                        Case{"bfloat16", DType::BF16, DType::BF16}, Case{"float16", DType::F16, DType::F16}}) {
    const DTypePolicy p(c.name);
    CHECK(p.name() == c.name);
    CHECK(p.compute_dtype() == c.compute);
    CHECK(p.variable_dtype() == c.variable);
    CHECK(p.is_mixed() == (c.compute != c.variable));
  }
  CHECK(DTypePolicy("mixed_bfloat16").str() == "<DTypePolicy \"mixed_bfloat16\">");
  CHECK_THROWS_WITH_AS(DTypePolicy("mixed_float8"),
                       "DTypePolicy: cannot convert \"mixed_float8\" to a dtype policy; the policies are \"mixed_float16\", "
                       "\"mixed_bfloat16\", \"float32\", \"float64\", \"bfloat16\", \"float16\"",
                       tandem::ValueError);
  CHECK_THROWS_AS(mp::set_global_policy("int8"), tandem::ValueError);
}

TEST_CASE("layers take the global policy when they are made; a layer's own policy overrides it") {
  CHECK(mp::global_policy().name() == "float32");
  CHECK(DTypePolicy().name() == "float32");
  const auto before = tl::Dense(3);
  {
    const GlobalPolicy mixed("mixed_bfloat16");
    CHECK(mp::global_policy() == DTypePolicy("mixed_bfloat16"));
    CHECK(DTypePolicy().name() == "mixed_bfloat16");
    const auto during = tl::Dense(3);
    CHECK(during->dtype_policy().name() == "mixed_bfloat16");
    during->set_dtype_policy("float32");
    CHECK(during->dtype_policy().name() == "float32");
    CHECK(tl::LayerNormalization()->dtype_policy().compute_dtype() == DType::BF16);
  }
  CHECK(before->dtype_policy().name() == "float32");
  CHECK(tl::Dense(3)->dtype_policy().name() == "float32");
  const auto d = tl::Dense(3, "", {.name = "head"});
  CHECK_THROWS_WITH_AS(d->set_dtype_policy("half"),
                       doctest::Contains("Dense \"head\": dtype cannot convert \"half\" to a dtype policy; the policies are \"mixed_float16\""),
                       tandem::ValueError);
}

TEST_CASE("a mixed-policy model's .keras records each layer's policy as Keras writes it, with float32 weights, and loads back") {
  tandem::set_random_seed(5);
  std::unique_ptr<tandem::Model> model;
  {
    const GlobalPolicy mixed("mixed_bfloat16");
    const tandem::Symbol x = tandem::Input({6}, DType::F32, "x");
    const auto hidden = tl::Dense(8, "relu", {.name = "hidden"});
    const auto head = tl::Dense(3, "", {.name = "head"});
    head->set_dtype_policy("float32");  // Keras's Dense(3, dtype="float32")
    model = std::make_unique<tandem::Model>(x, head(hidden(x)));
  }
  model->compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const fs::path file = scratch_root.fresh("archive") / "mixed.keras";
  model->save(file.string());
  const Json config = Json::parse(zip_entry(file, "config.json"));
  CHECK(layer_entry(config, "hidden").at("dtype") == keras_policy("mixed_bfloat16"));
  CHECK(layer_entry(config, "head").at("dtype") == keras_policy("float32"));
  CHECK(layer_entry(config, "x").at("dtype") == "float32");  // the input's dtype, as Keras writes it
  // The policies' variable dtype: float32 in the weights file.
  const auto weights = tandem::io::H5File::open_image("model.weights.h5", zip_entry(file, "model.weights.h5"));
  int checked = 0;
  for (const std::string& layer : weights.children("layers"))
    for (const char* var : {"/vars/0", "/vars/1"})
      if (weights.exists("layers/" + layer + var)) {
        CHECK(weights.dataset_info("layers/" + layer + var).type_name == "float32");
        ++checked;
      }
  CHECK(checked == 4);

  // Loading sets the recorded policies, whatever the global policy is now.
  const GlobalPolicy other("mixed_float16");
  const std::unique_ptr<tandem::Model> again = tandem::load_model(file.string());
  CHECK(again->get_layer("hidden")->dtype_policy().name() == "mixed_bfloat16");
  CHECK(again->get_layer("head")->dtype_policy().name() == "float32");
  for (const Tensor& w : again->get_layer("hidden")->get_weights()) CHECK(w.dtype() == DType::F32);
}

TEST_CASE("a Sequential records the global policy when it was made, as Keras's config does, and keeps it through a save and load") {
  std::unique_ptr<tandem::Sequential> model;
  {
    const GlobalPolicy mixed("mixed_bfloat16");
    model = std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{tl::InputLayer({6}), tl::Dense(4)});
  }
  const fs::path dir = scratch_root.fresh("sequential");
  model->save((dir / "seq.keras").string());
  const Json config = Json::parse(zip_entry(dir / "seq.keras", "config.json")).at("config");
  CHECK(config.at("dtype") == keras_policy("mixed_bfloat16"));
  CHECK(config.at("layers").at(1).at("config").at("dtype") == keras_policy("mixed_bfloat16"));
  const std::unique_ptr<tandem::Model> again = tandem::load_model((dir / "seq.keras").string());  // the global policy is float32 here
  again->save((dir / "again.keras").string());
  CHECK(Json::parse(zip_entry(dir / "again.keras", "config.json")).at("config").at("dtype") == keras_policy("mixed_bfloat16"));
  // A Sequential made under float32 writes its input's float dtype, as before.
  tandem::Sequential plain({tl::InputLayer({6}), tl::Dense(4)});
  plain.save((dir / "plain.keras").string());
  CHECK(Json::parse(zip_entry(dir / "plain.keras", "config.json")).at("config").at("dtype") == keras_policy("float32"));
}

TEST_CASE("a layer config's dtype: Keras's DTypePolicy, its older FloatDTypePolicy, or a plain name; anything else is refused") {
  Json dense = {{"name", "d"}, {"trainable", true}, {"units", 2}};
  for (const Json& dtype : {Json("mixed_float16"), keras_policy("mixed_float16"),
                            Json{{"module", "keras"}, {"class_name", "FloatDTypePolicy"}, {"config", {{"name", "mixed_float16"}}}, {"registered_name", nullptr}}}) {
    dense["dtype"] = dtype;
    const auto layer = tl::layer_from_config("Dense", tl::Json::parse(dense.dump()));
    CHECK(layer->dtype_policy().name() == "mixed_float16");
    CHECK(Json::parse(layer->config_json()).at("dtype") == keras_policy("mixed_float16"));  // always written as Keras 3 writes it
  }
  dense["dtype"] = Json{{"class_name", "DTypePolicy"}, {"config", {{"name", "float8"}}}};
  CHECK_THROWS_WITH_AS(tl::layer_from_config("Dense", tl::Json::parse(dense.dump())),
                       doctest::Contains("Dense \"d\": config key \"dtype\": expected a dtype policy (\"mixed_float16\", \"mixed_bfloat16\", "
                                         "\"float32\", \"float64\", \"bfloat16\", \"float16\"), as a name or Keras's DTypePolicy"),
                       tandem::ValueError);
}

TEST_CASE("Keras-made models under mixed_bfloat16, float16 and bfloat16 policies load with their policies and are written back as Keras wrote them") {
  const Json refs = read_json(kData / "mixed_models.json");
  for (const std::string name : {"mixed_bf16", "low_float_policies"}) {
    INFO("model " << name);
    const Json& m = refs.at(name);
    const fs::path keras_file = kData / (name + ".keras");
    const std::unique_ptr<tandem::Model> model = tandem::load_model(keras_file.string());
    for (const auto& [layer, policy] : m.at("policies").items()) {
      if (layer == "input_layer") continue;  // an InputLayer's config records the input's dtype, not a policy
      INFO("layer " << layer);
      CHECK(model->get_layer(layer)->dtype_policy().name() == policy.get<std::string>());
    }
    // The weights as Keras stored them (float32 for the mixed policies; float16 and Keras's bfloat16
    // for the others), widened exactly into Tandem's float32 weights.
    const auto weights = tandem::io::H5File::open_image("model.weights.h5", zip_entry(keras_file, "model.weights.h5"));
    for (const std::string& layer : weights.children("layers")) {
      if (!weights.exists("layers/" + layer + "/vars/0")) continue;
      const std::vector<Tensor> mine = model->get_layer(layer)->get_weights();
      for (std::size_t v = 0; v < mine.size(); ++v) {
        const std::string at = "layers/" + layer + "/vars/" + std::to_string(v);
        const std::string policy = m.at("policies").at(layer).get<std::string>();
        CHECK(weights.dataset_info(at).type_name == (policy.rfind("mixed_", 0) == 0 ? std::string("float32") : policy));
        CHECK(mine[v].dtype() == DType::F32);
        CHECK(max_difference(mine[v], weights.read_dataset(at)) == 0.0);
      }
    }

    // Both compute in bfloat16 or float16, rounding in different places (Keras casts every layer's
    // inputs; Tandem casts where its op classes say). The difference is a few 16-bit roundings
    // carried through a few layers, each within 2^-8 relative, on outputs of order 1 (measured:
    // 6.6e-3 for mixed_bf16, 0 for low_float_policies): 0.02 bounds it with margin, it is not a
    // check of equal arithmetic.
    const Tensor x = tensor_of(m.at("x"), DType::F32), y = tensor_of(m.at("y"), DType::F32);
    const double diff = max_difference(model->predict(x), y);
    MESSAGE(name << ": max |y_keras - y_tandem| = " << diff);
    CHECK(diff <= 0.02);

    // Written back: the same config as Keras's, policies included.
    const fs::path mine = scratch_root.fresh("keras_" + name) / (name + ".keras");
    model->save(mine.string());
    const Json keras_config = Json::parse(zip_entry(keras_file, "config.json")), config = Json::parse(zip_entry(mine, "config.json"));
    CHECK(comparable(config.at("config"), keras_config.at("config")) == without_ids(keras_config.at("config")));
  }
}
