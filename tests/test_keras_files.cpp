// Whole models in Keras's files, checked against files and values Keras 3 wrote
// (tests/data/keras/, made by tests/data/make_keras_files.py): `.keras` archives and legacy `.h5`
// files load and predict as Keras did, their optimizer state continues training as Keras's did,
// every layer config Keras writes is read and written back with the same keys and values, and the
// archives Tandem writes carry Keras's config.json.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tandem/tandem.h>

#include "io/zip_archive.h"
#include "keras_file_helpers.h"
#include "layers/config.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
using Json = nlohmann::json;
using tandem::DType;
using tandem::Tensor;
using namespace keras_file_helpers;

namespace {

const fs::path kData = fs::path(TANDEM_TEST_DATA) / "keras";
constexpr double kTolerance = 1e-5;
// After one more training step in each framework: float32 rounding of two different programs.
constexpr double kStepTolerance = 1e-4;

const ScratchRoot scratch_root("tandem_keras_files");
// A file in this program's scratch folder.
fs::path scratch(const std::string& name) {
  static const fs::path dir = scratch_root.fresh("files");
  return dir / name;
}

const char* const kModels[] = {"mlp", "cnn", "attn", "branch", "zoo", "seq1d", "pool2d", "rnn", "birnn"};

}  // namespace

TEST_CASE("keras files: every layer config Keras 3 writes is read and written back with Keras's keys and values") {
  const Json fixtures = read_json(kData / "layer_configs.json");
  REQUIRE(fixtures.at("layers").size() >= 20);
  for (const Json& entry : fixtures.at("layers")) {
    const std::string label = entry.at("label");
    INFO("layer case " << label << " (Keras " << fixtures.at("keras_version").get<std::string>() << ")");
    const tandem::layers::Json keras = tandem::layers::Json::parse(entry.at("config").dump());
    std::shared_ptr<tandem::Layer> layer = tandem::layers::layer_from_config(entry.at("class_name"), keras);
    if (label == "multi_head_attention_built") {
      // Keras computes attention_axes when it builds: build Tandem's the same way.
      const tandem::Symbol x = tandem::Input({5, 4});
      (*layer)(std::vector<tandem::Symbol>{x, x});
    }
    const Json written = Json::parse(layer->config_json());
    CHECK(comparable(written, entry.at("config")) == without_ids(entry.at("config")));
  }
}

TEST_CASE("keras files: a layer config with a key or value Tandem does not implement is refused by layer, key and value") {
  const Json fixtures = read_json(kData / "layer_configs.json");
  auto config_of = [&](const std::string& label) {
    for (const Json& e : fixtures.at("layers"))
      if (e.at("label") == label) return tandem::layers::Json::parse(e.at("config").dump());
    FAIL("no case " << label);
    return tandem::layers::Json();
  };
  tandem::layers::Json dense = config_of("dense");
  dense["kernel_quantizer"] = "int8";
  CHECK_THROWS_WITH_AS(tandem::layers::layer_from_config("Dense", dense),
                       doctest::Contains("Dense \"dense\": config key \"kernel_quantizer\": Tandem's Dense has no such argument (value \"int8\")"),
                       tandem::ValueError);
  dense = config_of("dense");
  dense["kernel_regularizer"] = {{"class_name", "L3"}, {"config", {{"l3", 0.01}}}};  // no such Keras class
  CHECK_THROWS_WITH_AS(tandem::layers::layer_from_config("Dense", dense), doctest::Contains("config key \"kernel_regularizer\""),
                       tandem::ValueError);
  tandem::layers::Json attention = config_of("multi_head_attention");
  attention["attention_axes"] = {1, 2};
  CHECK_THROWS_WITH_AS(tandem::layers::layer_from_config("MultiHeadAttention", attention),
                       doctest::Contains("MultiHeadAttention \"multi_head_attention\": config key \"attention_axes\": expected null or [1]"),
                       tandem::ValueError);
  tandem::layers::Json conv = config_of("conv2d");
  conv["data_format"] = "channels_first";
  CHECK_THROWS_WITH_AS(tandem::layers::layer_from_config("Conv2D", conv),
                       doctest::Contains("Conv2D \"conv2d\": config key \"data_format\": expected \"channels_last\""), tandem::ValueError);
  tandem::layers::Json norm = config_of("layer_normalization");
  norm["dtype"] = "float8";
  CHECK_THROWS_WITH_AS(tandem::layers::layer_from_config("LayerNormalization", norm),
                       doctest::Contains("LayerNormalization \"layer_normalization\": config key \"dtype\": expected a dtype policy (\"mixed_float16\", "
                                         "\"mixed_bfloat16\", \"float32\", \"float64\", \"bfloat16\", \"float16\")"),
                       tandem::ValueError);
}

TEST_CASE("keras files: Keras 3 archives and legacy .h5 files load, predict as Keras did and continue training as Keras did") {
  const Json models = read_json(kData / "models.json");
  for (const char* name : kModels) {
    const Json& m = models.at(name);
    const DType in = std::string(name) == "attn" ? DType::I32 : DType::F32;
    const Tensor x = tensor_of(m.at("x"), in), y = tensor_of(m.at("y"), DType::F32);
    for (const char* ext : {".keras", ".h5"}) {
      const fs::path file = kData / (std::string(name) + ext);
      INFO(file.filename().string() << ", made by Keras " << models.at("keras_version").get<std::string>());
      std::unique_ptr<tandem::Model> model = tandem::load_model(file.string());
      CHECK(max_difference(model->predict(x), y) <= kTolerance);
      REQUIRE(model->optimizer());
      CHECK(model->optimizer()->iterations() == m.at("iterations").get<int64_t>());
      // The optimizer state (moments, momentum) decides the next step: equal predictions after
      // one more batch show that it was restored.
      model->fit(tensor_of(m.at("x_next"), in), tensor_of(m.at("y_next"), DType::I32), {.epochs = 1, .batch_size = 8, .verbose = 0});
      CHECK(max_difference(model->predict(x), tensor_of(m.at("y_after_next"), DType::F32)) <= kStepTolerance);
    }
  }
}

TEST_CASE("keras files: Tandem's archives hold Keras's config.json and round-trip exactly") {
  const Json models = read_json(kData / "models.json");
  for (const char* name : kModels) {
    INFO("model " << name);
    const fs::path keras_file = kData / (std::string(name) + ".keras"), mine = scratch(std::string(name) + ".keras");
    std::unique_ptr<tandem::Model> model = tandem::load_model(keras_file.string());
    model->save(mine.string());
    // The model's config (every layer's entry, build_config, connections) equals Keras's.
    const Json keras_config = Json::parse(zip_entry(keras_file, "config.json")), config = Json::parse(zip_entry(mine, "config.json"));
    CHECK(comparable(config.at("config"), keras_config.at("config")) == without_ids(keras_config.at("config")));
    for (const char* key : {"module", "class_name", "registered_name", "build_config"}) CHECK(config.at(key) == keras_config.at(key));
    CHECK(config.at("compile_config").at("loss").at("class_name") == keras_config.at("compile_config").at("loss").at("class_name"));
    CHECK(config.at("compile_config").at("optimizer").at("class_name") == keras_config.at("compile_config").at("optimizer").at("class_name"));
    const Json metadata = Json::parse(zip_entry(mine, "metadata.json"));
    CHECK(metadata.at("keras_version") == "3.15.1");
    CHECK(metadata.at("tandem").at("training_state").at("iterations") == 2);

    const DType in = std::string(name) == "attn" ? DType::I32 : DType::F32;
    const Tensor x = tensor_of(models.at(name).at("x"), in);
    std::unique_ptr<tandem::Model> again = tandem::load_model(mine.string());
    const Tensor a = model->predict(x), b = again->predict(x);
    CHECK(max_difference(a, b) == 0.0);
    CHECK(again->optimizer()->iterations() == 2);
    CHECK(tandem::load_training_state(mine.string()).iterations == 2);
  }
}

TEST_CASE("keras files: damaged or foreign archives and Keras files are refused with what they are") {
  const fs::path mlp = kData / "mlp.keras";
  std::ifstream in(mlp, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto load_error = [](const fs::path& p) {
    try {
      tandem::load_model(p.string());
    } catch (const tandem::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  SUBCASE("a damaged entry") {
    // Flip a byte inside the compressed weights entry (the archive's last entry before the
    // central directory): libzip's CRC-32 check refuses it.
    std::string damaged = bytes;
    damaged[damaged.size() / 2] ^= 0x5a;
    std::ofstream(scratch("damaged.keras"), std::ios::binary) << damaged;
    const std::string e = load_error(scratch("damaged.keras"));
    INFO(e);
    CHECK((e.find("damaged") != std::string::npos || e.find("CRC") != std::string::npos || e.find("not valid JSON") != std::string::npos));
  }
  SUBCASE("an archive that is not a Keras model") {
    tandem::io::write_zip(scratch("other.keras").string(), {{"readme.txt", "hello"}});
    CHECK(load_error(scratch("other.keras")).find("a zip archive without config.json: not a Keras 3 `.keras` model archive") != std::string::npos);
  }
  SUBCASE("Keras files record no Tandem training state") {
    CHECK_THROWS_WITH_AS(tandem::load_training_state(mlp.string()), doctest::Contains("without Tandem's training state"), tandem::ValueError);
    CHECK_THROWS_WITH_AS(tandem::load_training_state((kData / "mlp.h5").string()), doctest::Contains("a Keras legacy whole-model file"),
                         tandem::ValueError);
  }
  SUBCASE("whole-model files given to load_weights, and a file named for another kind") {
    std::unique_ptr<tandem::Model> model = tandem::load_model(mlp.string());
    fs::copy_file(kData / "mlp.h5", scratch("keras_legacy.weights.h5"), fs::copy_options::overwrite_existing);
    CHECK_THROWS_WITH_AS(model->load_weights(scratch("keras_legacy.weights.h5").string()),
                         doctest::Contains("a whole-model file (Keras's legacy model.save(\"m.h5\")), not a weights file: load it with tandem::load_model"),
                         tandem::Error);
    model->save(scratch("tandem.h5").string());
    fs::copy_file(scratch("tandem.h5"), scratch("tandem.weights.h5"), fs::copy_options::overwrite_existing);
    CHECK_THROWS_WITH_AS(model->load_weights(scratch("tandem.weights.h5").string()),
                         doctest::Contains("a whole-model file (Tandem's Model::save), not a weights file"), tandem::Error);
    // load_model goes by what a file holds, not by its name: an HDF5 model file named `.keras`
    // and an archive named `.h5` load as what they are.
    fs::copy_file(scratch("tandem.h5"), scratch("hdf5_named.keras"), fs::copy_options::overwrite_existing);
    fs::copy_file(mlp, scratch("archive_named.h5"), fs::copy_options::overwrite_existing);
    CHECK(tandem::load_model(scratch("hdf5_named.keras").string())->optimizer()->iterations() == 2);
    CHECK(tandem::load_model(scratch("archive_named.h5").string())->optimizer()->iterations() == 2);
  }
  SUBCASE("a call argument Tandem does not take") {
    Json config = Json::parse(zip_entry(kData / "attn.keras", "config.json"));
    for (Json& layer : config["config"]["layers"])
      if (layer["class_name"] == "MultiHeadAttention") layer["inbound_nodes"][0]["kwargs"]["return_attention_scores"] = true;
    tandem::io::write_zip(scratch("kwargs.keras").string(), {{"config.json", config.dump()},
                                                              {"model.weights.h5", zip_entry(kData / "attn.keras", "model.weights.h5")}});
    CHECK(load_error(scratch("kwargs.keras")).find("the call argument \"return_attention_scores\" (value true) is not supported") != std::string::npos);
  }
  SUBCASE("a truncated archive and a text file named .keras say what they are") {
    std::ofstream(scratch("truncated.keras"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    const std::string truncated = load_error(scratch("truncated.keras"));
    INFO(truncated);
    CHECK(truncated.find("truncated.keras is not a readable Keras archive: it starts as a zip archive (a `.keras` file is one), but it is "
                         "damaged or truncated (libzip: ") != std::string::npos);
    std::ofstream(scratch("notes.keras")) << "hello\nthis is not a model\n";
    CHECK(load_error(scratch("notes.keras")).find("notes.keras is not a Keras archive: a `.keras` file is a zip archive, and this one is a "
                                                   "text file (it begins \"hello\")") != std::string::npos);
    std::ofstream(scratch("program.keras"), std::ios::binary) << std::string("\x7f" "ELF\x02\x01\x01\x00\x00", 9);
    CHECK(load_error(scratch("program.keras")).find("program.keras is not a Keras archive: a `.keras` file is a zip archive, and this one is "
                                                     "binary data of another kind (it begins 7f 45 4c 46 02 01 01 00 ...)") != std::string::npos);
    std::ofstream(scratch("notes.h5")) << "hello\n";
    CHECK(load_error(scratch("notes.h5")).find("notes.h5 is not a model file: load_model reads Keras archives (zip) and HDF5 files, and this "
                                                "one is a text file") != std::string::npos);
  }
  // The model's config.json replaced, the weights kept.
  auto with_config = [&](const std::string& name, const std::string& config) {
    tandem::io::write_zip(scratch(name).string(), {{"config.json", config}, {"model.weights.h5", zip_entry(mlp, "model.weights.h5")}});
    return load_error(scratch(name));
  };
  SUBCASE("a config.json nested 50,000 levels deep") {
    const std::string e = with_config("deep.keras", std::string(50000, '[') + std::string(50000, ']'));
    CHECK(e.find("deep.keras: config.json: the JSON nests arrays and objects more than 256 levels deep") != std::string::npos);
    std::string objects;
    for (int i = 0; i < 50000; ++i) objects += "{\"a\":";
    CHECK(with_config("deep_objects.keras", objects + "1" + std::string(50000, '}')).find("more than 256 levels deep") != std::string::npos);
  }
  SUBCASE("an enormous kernel_size") {
    Json config = Json::parse(zip_entry(kData / "zoo.keras", "config.json"));
    for (Json& layer : config["config"]["layers"])
      if (layer["class_name"] == "Conv2D") {
        layer["config"]["kernel_size"] = {1000000000, 1000000000};
        layer["config"]["padding"] = "same";  // with "valid" the kernel is refused as larger than the input
      }
    tandem::io::write_zip(scratch("huge.keras").string(), {{"config.json", config.dump()}, {"model.weights.h5", zip_entry(kData / "zoo.keras", "model.weights.h5")}});
    const std::string e = load_error(scratch("huge.keras"));
    INFO(e);
    CHECK(e.find("huge.keras: config.json") != std::string::npos);
    CHECK(e.find("(Conv2D \"conv2d_3\"), inbound_nodes[0]: Conv2D \"conv2d_3\": the weight \"kernel\" of shape (1000000000, 1000000000, 2, 4) has too many elements") !=
          std::string::npos);
  }
}

TEST_CASE("keras files: a functional model with BatchNormalization, Dropout and attention dropout loads from Keras's .keras and .h5") {
  // Keras records {"mask": null} with BatchNormalization's call and {"training": false} with
  // Dropout's: neither changes what the model computes.
  const Json m = read_json(kData / "models.json").at("norm");
  for (const char* file : {"norm.keras", "norm.h5"}) {
    INFO(file);
    std::unique_ptr<tandem::Model> model = tandem::load_model((kData / file).string());
    CHECK(max_difference(model->predict(tensor_of(m.at("x"), DType::F32)), tensor_of(m.at("y"), DType::F32)) <= kTolerance);
    REQUIRE(model->optimizer());
    CHECK(model->optimizer()->iterations() == m.at("iterations").get<int64_t>());
  }
}

TEST_CASE("keras files: call arguments that would change the result are refused, naming the layer; neutral ones load") {
  const Json keras_config = Json::parse(zip_entry(kData / "norm.keras", "config.json"));
  auto load_with = [&](const std::string& cls, const Json& kwargs) -> std::string {
    Json config = keras_config;
    for (Json& layer : config["config"]["layers"])
      if (layer["class_name"] == cls) layer["inbound_nodes"][0]["kwargs"] = kwargs;
    const fs::path file = scratch("kwargs_" + cls + ".keras");
    tandem::io::write_zip(file.string(), {{"config.json", config.dump()}, {"model.weights.h5", zip_entry(kData / "norm.keras", "model.weights.h5")}});
    try {
      tandem::load_model(file.string());
    } catch (const tandem::ValueError& e) {
      return e.what();
    }
    return "";
  };
  // Keras's functional models pass their own training flag to each layer in fit and predict.
  CHECK(load_with("Dropout", {{"training", true}}) == "");
  CHECK(load_with("MultiHeadAttention", {{"query_mask", nullptr}, {"attention_mask", nullptr}, {"return_attention_scores", false}}) == "");
  const Json tensor = {{"class_name", "__keras_tensor__"}, {"config", {{"shape", {nullptr, 20}}, {"dtype", "bool"}, {"keras_history", {"input_layer", 0, 0}}}}};
  const std::string mask = load_with("BatchNormalization", {{"mask", tensor}});
  CHECK(mask.find("(BatchNormalization \"batch_normalization\"), inbound_nodes[0]: the call argument \"mask\" (value {") != std::string::npos);
  CHECK(mask.find("accepts a recorded mask only as the output of the op that computed it") != std::string::npos);
  CHECK(load_with("Dropout", {{"training", "yes"}}).find("(Dropout \"dropout_1\"), inbound_nodes[0]: the call argument \"training\" (value \"yes\") is not supported") !=
        std::string::npos);
}

TEST_CASE("keras files: an uncompiled Keras model loads uncompiled from .keras (compile_config {}) and .h5 (no training_config)") {
  const Json m = read_json(kData / "models.json").at("uncompiled");
  for (const char* file : {"uncompiled.keras", "uncompiled.h5"}) {
    INFO(file);
    std::unique_ptr<tandem::Model> model = tandem::load_model((kData / file).string());
    CHECK(max_difference(model->predict(tensor_of(m.at("x"), DType::F32)), tensor_of(m.at("y"), DType::F32)) <= kTolerance);
    CHECK(model->optimizer() == nullptr);
  }
}

TEST_CASE("keras files: the layer seeds Tandem writes are ones Keras's SeedGenerator accepts (below 2^31)") {
  // Keras keeps a seed in uint32 on JAX and int32 on PyTorch and refuses a larger one on loading.
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    tandem::set_random_seed(seed);
    const tandem::Symbol x = tandem::Input({5, 4});
    const tandem::Symbol a = tl::MultiHeadAttention(2, 2, {.dropout = 0.1})({x, x});
    tandem::Model model(x, tl::Dense(2)(tl::Dropout(0.3)(tl::Flatten()(a))));
    const fs::path file = scratch("seeds.keras");
    model.save(file.string());
    int seeds = 0;
    const Json config = Json::parse(zip_entry(file, "config.json"));
    for (const Json& layer : config.at("config").at("layers"))
      if (layer.at("config").contains("seed")) {
        INFO(layer.at("class_name") << " seed " << layer.at("config").at("seed"));
        CHECK(layer.at("config").at("seed").get<uint64_t>() < (uint64_t(1) << 31));
        ++seeds;
      }
    CHECK(seeds == 2);
  }
  // Older Tandem files hold 64-bit seeds: they load, and the layer's seed is brought into range.
  const auto dropout = tandem::layers::layer_from_config("Dropout", tandem::layers::Json{{"rate", 0.5}, {"seed", 16363363981095120648ull}});
  CHECK(Json::parse(dropout->config_json()).at("seed").get<uint64_t>() < (uint64_t(1) << 31));
}

TEST_CASE("keras files: masks made by Embedding(mask_zero=True) and by Masking load and predict as Keras did") {
  // masked_embed: Embedding(mask_zero) -> GlobalAveragePooling1D -> Dense (functional; Keras records
  // the mask's NotEqual op as an entry of its own, and the mask as GlobalAveragePooling1D's call
  // argument); masking: Masking -> Dense -> GlobalAveragePooling1D -> Dense (Sequential). The
  // inputs are padded with zeros; Keras's predictions average over the unpadded steps only.
  // masked_rnn: Embedding(mask_zero) -> Bidirectional(LSTM, sequences) -> GRU -> Dense: the
  // recurrent layers skip the padded steps.
  for (const char* name : {"masked_embed", "masking", "masked_rnn"}) {
    const Json m = read_json(kData / "models.json").at(name);
    const DType x_dtype = std::string(name) == "masking" ? DType::F32 : DType::I32;
    for (const std::string ext : {".keras", ".h5"}) {
      INFO(name << ext);
      std::unique_ptr<tandem::Model> model = tandem::load_model((kData / (name + ext)).string());
      CHECK(max_difference(model->predict(tensor_of(m.at("x"), x_dtype)), tensor_of(m.at("y"), DType::F32)) <= kTolerance);
    }
  }
}

TEST_CASE("keras files: MultiHeadAttention called with attention_mask= (a model input) loads and predicts as Keras did") {
  // attn_mask: MultiHeadAttention(x, x, attention_mask=m) -> Flatten -> Dense, inputs x (5, 4) and
  // an int32 mask m (5, 5); Keras records the mask as the call's keyword argument.
  const Json m = read_json(kData / "models.json").at("attn_mask");
  const std::vector<Tensor> x{tensor_of(m.at("x")[0], DType::F32), tensor_of(m.at("x")[1], DType::I32)};
  for (const std::string ext : {".keras", ".h5"}) {
    INFO("attn_mask" << ext);
    std::unique_ptr<tandem::Model> model = tandem::load_model((kData / ("attn_mask" + ext)).string());
    CHECK(max_difference(model->predict(x).at(0), tensor_of(m.at("y"), DType::F32)) <= kTolerance);
    // Written back, the mask is again the call's keyword argument, one tensor as Keras passes it.
    const fs::path mine = scratch("attn_mask_again.keras");
    model->save(mine.string());
    const Json config = Json::parse(zip_entry(mine, "config.json"));
    bool found = false;
    for (const Json& layer : config.at("config").at("layers"))
      if (layer.at("class_name") == "MultiHeadAttention") {
        const Json& call = layer.at("inbound_nodes").at(0);
        CHECK(call.at("args").size() == 3);  // query, value, key (the value again)
        CHECK(call.at("kwargs").at("attention_mask").at("class_name") == "__keras_tensor__");
        found = true;
      }
    CHECK(found);
    CHECK(max_difference(tandem::load_model(mine.string())->predict(x).at(0), tensor_of(m.at("y"), DType::F32)) <= kTolerance);
  }
}

TEST_CASE("keras files: frozen layers load frozen, predict as Keras did, and are written back frozen") {
  // frozen: Dense(relu) and BatchNormalization with trainable = False, then a trainable Dense
  // (Adam); Keras's optimizer has slots for the last Dense alone.
  const Json m = read_json(kData / "models.json").at("frozen");
  for (const std::string ext : {".keras", ".h5"}) {
    INFO("frozen" << ext);
    std::unique_ptr<tandem::Model> model = tandem::load_model((kData / ("frozen" + ext)).string());
    CHECK(max_difference(model->predict(tensor_of(m.at("x"), DType::F32)), tensor_of(m.at("y"), DType::F32)) <= kTolerance);
    const auto layers = model->layers();
    REQUIRE(layers.size() == 3);
    CHECK_FALSE(layers[0]->trainable());
    CHECK_FALSE(layers[1]->trainable());
    CHECK(layers[2]->trainable());
    CHECK(model->trainable_weights().size() == 2);
    CHECK(model->optimizer()->iterations() == m.at("iterations").get<int64_t>());
    const fs::path mine = scratch("frozen_again" + ext);
    model->save(mine.string());
    const auto again = tandem::load_model(mine.string());
    CHECK_FALSE(again->layers()[0]->trainable());
    CHECK(again->trainable_weights().size() == 2);
  }
}
