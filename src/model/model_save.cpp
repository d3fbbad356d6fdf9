// Model::save and load_model: a whole model (config, compile settings, weights, optimizer state and
// training state) in one file of three kinds (docs/saving.md):
//
// Tandem's `.h5`:
//   (512-byte user block: Tandem's size and CRC-32 check, io/checksum.h)
//   /  attributes  format "tandem.model", format_version "1", backend "tandem",
//                  model_config (JSON), training_config (JSON; compiled models only),
//                  training_state (JSON)
//   /model_weights/...  the whole Keras 3 `.weights.h5` tree (io/weights_file.h), optimizer included
// Keras 3's `.keras` zip archive, written and read:
//   config.json       the model's config with its compile_config (Keras 3's serialised objects)
//   metadata.json     keras_version, date_saved; Tandem adds "tandem": {format, training_state}
//   model.weights.h5  the `.weights.h5` tree, optimizer included
// Keras's legacy whole-model `.h5` (read only): model_config and training_config attributes, the
//   weights by layer and weight name (io/keras_legacy_weights.h).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <fstream>
#include <map>
#include <set>

#include "io/atomic_file.h"
#include "io/checksum.h"
#include "io/hdf5_file.h"
#include "io/keras_legacy_weights.h"
#include "io/zip_archive.h"
#include "layer_base/initializers.h"
#include "model/model_config.h"
#include "model/model_impl.h"
#include "tandem/errors.h"
#include "tandem/saving.h"

namespace tandem {

namespace {

using detail::Json;
using detail::parse_json;

constexpr const char* kFormat = "tandem.model";
constexpr const char* kFormatVersion = "1";
constexpr const char* kWeightsRoot = "model_weights";
// The Keras release whose `.keras` format Tandem writes and tests against (metadata.json).
constexpr const char* kKerasVersion = "3.15.1";
constexpr const char* kArchiveConfig = "config.json";
constexpr const char* kArchiveMetadata = "metadata.json";
constexpr const char* kArchiveWeights = "model.weights.h5";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Whether `path` names a `.keras` archive (else Tandem's HDF5 file).
bool check_extension(const std::string& path) {
  if (ends_with(path, ".weights.h5"))
    throw ValueError("Model::save writes a whole model, not a weights file: use save_weights for `.weights.h5` paths. Received: filepath=" +
                     path);
  if (ends_with(path, ".keras")) return true;
  if (!ends_with(path, ".h5") && !ends_with(path, ".hdf5"))
    throw ValueError("Model::save writes a Keras archive or an HDF5 file: the filename must end in `.keras`, `.h5` or `.hdf5`. Received: filepath=" +
                     path);
  return false;
}

// A root attribute holding JSON; empty when the attribute is absent.
std::optional<Json> json_attribute(const io::H5File& f, const char* name) {
  const std::optional<std::string> text = f.read_string_attribute("/", name);
  if (!text) return std::nullopt;
  return parse_json(*text, f.path() + ": " + name);
}

// What a file that is neither a zip archive nor HDF5 is, from its first bytes: "a text file (it
// begins "...")" or "binary data of another kind (it begins 7f 45 4c 46 ...)"; empty when it cannot
// be read.
std::string file_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(64, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.empty()) return "";
  // Text: printable ASCII, whitespace, or UTF-8's bytes above 0x7f.
  const bool text = std::all_of(head.begin(), head.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b >= 0x20 ? b != 0x7f : (b == '\n' || b == '\r' || b == '\t');
  });
  if (text) return "a text file (it begins \"" + detail::shorten(head.substr(0, head.find('\n'))) + "\")";
  std::string hex;
  for (std::size_t i = 0; i < std::min<std::size_t>(head.size(), 8); ++i) {
    char byte[4];
    std::snprintf(byte, sizeof byte, "%02x ", static_cast<unsigned char>(head[i]));
    hex += byte;
  }
  return "binary data of another kind (it begins " + hex + "...)";
}

// Opens an HDF5 file after checking Tandem's checksum block (when it has one). A file that is
// neither HDF5 nor a zip archive is refused by what it is, with what its name promised.
io::H5File open_hdf5(const std::string& path) {
  io::verify_checksum(path);
  if (!io::is_hdf5_file(path)) {
    const std::string kind = file_kind(path);  // a missing, empty or unreadable file: H5File::open says which
    if (!kind.empty() && ends_with(path, ".keras"))
      throw ValueError(path + " is not a Keras archive: a `.keras` file is a zip archive, and this one is " + kind);
    if (!kind.empty())
      throw ValueError(path + " is not a model file: load_model reads Keras archives (zip) and HDF5 files, and this one is " + kind);
  }
  return io::H5File::open(path);
}

// Checks that an open file is a model file Model::save wrote: its model config and format marker.
void check_tandem_model_file(const io::H5File& f) {
  const std::string& path = f.path();
  const std::optional<std::string> format = f.read_string_attribute("/", "format");
  if (!f.read_string_attribute("/", "model_config")) {
    if (f.is_group("layers") || f.is_group("vars"))
      throw ValueError(path + ": this is a weights file (`.weights.h5`), not a model file: it has no model config. Build the model "
                       "and call load_weights");
    throw ValueError(path + ": not a model file written by Model::save: it has no model_config attribute");
  }
  if (format && *format != kFormat) throw ValueError(path + ": unknown file format \"" + *format + "\"; expected \"" + kFormat + "\"");
  const std::optional<std::string> version = f.read_string_attribute("/", "format_version");
  if (version && *version != kFormatVersion)
    throw ValueError(path + ": the file has format version " + *version + "; this Tandem reads version " + kFormatVersion);
}

int64_t integer_field(const Json& state, const char* key, const std::string& where) {
  if (!state.contains(key) || !state.at(key).is_number_integer())
    throw ValueError(where + ": \"" + key + "\" must be an integer" + (state.contains(key) ? ", got " + state.at(key).dump() : " (missing)"));
  return state.at(key).get<int64_t>();
}

TrainingState parse_training_state(const std::optional<Json>& state, const std::string& where) {
  if (!state) throw ValueError(where + ": missing (the file is incomplete)");
  if (!state->is_object()) throw ValueError(where + ": expected a JSON object");
  TrainingState s;
  s.epoch = static_cast<int>(integer_field(*state, "epoch", where));
  s.batch = integer_field(*state, "batch", where);
  s.iterations = integer_field(*state, "iterations", where);
  if (state->contains("learning_rate") && state->at("learning_rate").is_number()) s.learning_rate = state->at("learning_rate").get<double>();
  if (!state->contains("random") || !state->at("random").is_object()) throw ValueError(where + ": \"random\" is missing");
  const Json& random = state->at("random");
  for (const char* key : {"seed", "drawn"})
    if (!random.contains(key) || !random.at(key).is_number_unsigned())
      throw ValueError(where + ": random \"" + std::string(key) + "\" must be a non-negative integer");
  s.seed = random.at("seed").get<uint64_t>();
  s.seeds_drawn = random.at("drawn").get<uint64_t>();
  if (s.epoch < 0 || s.batch < 0 || s.iterations < 0) throw ValueError(where + ": epoch, batch and iterations must be non-negative");
  return s;
}

// What a `.keras` archive holds: Keras's three entries, parsed, and its assets.
struct Archive {
  Json config, metadata;
  std::string weights;  // the model.weights.h5 image
  std::map<std::string, std::string> assets;  // by entry name: "assets/layers/integer_lookup/vocabulary.txt"
};

// Keras keeps an adapted lookup layer's vocabulary in the archive's assets, at
// assets/<the layer's path>/vocabulary.txt (one value a line, the special tokens first), and writes
// "vocabulary": null in its config. Tandem's IntegerLookup takes its vocabulary from the config, so
// it is put there: in the layers of `model` (a serialised Functional or Sequential) and of the
// models nested in it, whose paths are "layers/<name>", as Keras's saving walks them.
void put_asset_vocabularies(Json& model, const std::map<std::string, std::string>& assets, const std::string& prefix, const std::string& where) {
  if (!model.is_object() || !model.contains("config") || !model.at("config").is_object()) return;
  Json& layers = model.at("config")["layers"];
  if (!layers.is_array()) return;
  for (Json& layer : layers) {
    if (!layer.is_object() || !layer.contains("config") || !layer.at("config").is_object()) continue;
    Json& config = layer.at("config");
    const std::string path = prefix + "layers/" + config.value("name", std::string());
    const std::string cls = layer.value("class_name", std::string());
    if (cls == "Functional" || cls == "Sequential" || cls == "Model") put_asset_vocabularies(layer, assets, path + "/", where);
    if (cls != "IntegerLookup" || !config.value("vocabulary", Json()).is_null()) continue;
    const auto asset = assets.find("assets/" + path + "/vocabulary.txt");
    if (asset == assets.end()) continue;  // the layer says it has no vocabulary when it is called
    std::vector<std::string> lines(1);
    for (char c : asset->second) {
      if (c == '\n') lines.emplace_back();
      else lines.back().push_back(c);
    }
    while (!lines.empty() && lines.back().empty()) lines.pop_back();  // as Keras's load_assets
    Json vocabulary = Json::array();
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::size_t used = 0;
      int64_t value = 0;
      try {
        value = std::stoll(lines[i], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != lines[i].size())
        throw ValueError(where + ": " + asset->first + " line " + std::to_string(i + 1) + ": expected an integer (IntegerLookup \"" +
                         config.value("name", std::string()) + "\"), got \"" + lines[i] + "\"");
      vocabulary.push_back(value);
    }
    config["vocabulary"] = std::move(vocabulary);
  }
}

Archive read_archive(const std::string& path) {
  Archive a;
  bool has_config = false, has_weights = false;
  for (io::ZipEntry& e : io::read_zip(path)) {
    if (e.name == kArchiveConfig) {
      a.config = parse_json(e.bytes, path + ": " + kArchiveConfig);
      has_config = true;
    } else if (e.name == kArchiveMetadata) {
      a.metadata = parse_json(e.bytes, path + ": " + kArchiveMetadata);
    } else if (e.name == kArchiveWeights) {
      a.weights = std::move(e.bytes);
      has_weights = true;
    } else if (e.name.starts_with("assets/")) {
      a.assets[e.name] = std::move(e.bytes);
    } else if (e.name == "model.weights.json") {
      throw ValueError(path + ": the archive's weights are sharded (model.weights.json); Tandem reads archives with one model.weights.h5");
    }
  }
  if (!has_config || !has_weights)
    throw ValueError(path + ": a zip archive without " + (has_config ? kArchiveWeights : kArchiveConfig) +
                     ": not a Keras 3 `.keras` model archive");
  put_asset_vocabularies(a.config, a.assets, "", path);
  return a;
}

// Tandem's training state in an archive's metadata, if Tandem wrote the archive.
std::optional<Json> archive_training_state(const Archive& a, const std::string& path) {
  if (!a.metadata.is_object() || !a.metadata.contains("tandem")) return std::nullopt;
  const Json& tandem = a.metadata.at("tandem");
  const std::string where = path + ": " + kArchiveMetadata + ": tandem";
  if (!tandem.is_object() || tandem.value("format", "") != kFormat) throw ValueError(where + ": expected {\"format\": \"" + std::string(kFormat) + "\", ...}");
  if (tandem.value("format_version", "") != kFormatVersion)
    throw ValueError(where + ": the archive has format version " + tandem.value("format_version", "?") + "; this Tandem reads version " + kFormatVersion);
  return tandem.contains("training_state") ? std::optional<Json>(tandem.at("training_state")) : std::nullopt;
}

std::string date_saved() {
  const std::time_t now = std::time(nullptr);
  std::tm t{};
  localtime_r(&now, &t);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d@%H:%M:%S", &t);
  return text;
}

// The dtype policy a model's config records for the model itself (a Sequential's "dtype", as a
// name or Keras's DTypePolicy), when it is one Tandem knows; its layers' own are read with them.
std::optional<std::string> recorded_model_policy(const Json& model_config) {
  if (!model_config.is_object() || !model_config.contains("config") || !model_config.at("config").is_object()) return std::nullopt;
  const Json& config = model_config.at("config");
  if (!config.contains("dtype")) return std::nullopt;
  const Json& d = config.at("dtype");
  const Json* name = d.is_string() ? &d : d.is_object() && d.contains("config") && d.at("config").is_object() && d.at("config").contains("name") ? &d.at("config").at("name") : nullptr;
  if (!name || !name->is_string()) return std::nullopt;
  const auto& known = DTypePolicy::accepted_names();
  if (std::find(known.begin(), known.end(), name->get<std::string>()) == known.end()) return std::nullopt;
  return name->get<std::string>();
}

// A model rebuilt from its configs and compiled as recorded; `where` names them in messages.
// `before_compile` sets what the model's config records of the model itself (its dtype policy:
// under mixed_float16, compile wraps the optimizer in a LossScaleOptimizer).
std::unique_ptr<Model> model_from_configs(const Json& model_config, const std::optional<Json>& compile, const std::string& model_where,
                                          const std::string& compile_where, const std::function<void(Model&)>& before_compile) {
  std::unique_ptr<Model> model;
  try {
    model = detail::model_from_config(model_config);
  } catch (...) {
    detail::rethrow_with(model_where + ": ");
  }
  before_compile(*model);
  // Keras 3 writes "compile_config": {} for a model that was never compiled (and a legacy `.h5`
  // has no training_config): the model loads uncompiled, as Keras loads it.
  const bool compiled = compile && !compile->is_null() && !(compile->is_object() && compile->empty());
  if (compiled) {
    try {
      const detail::CompileSettings s = detail::compile_from_config(*compile);
      // One loss (and one list of metrics) stands for every output, as Keras reads it.
      const bool one = s.losses.size() == 1;
      const bool per_output_metrics = s.metrics.size() > 1;
      model->compile({.optimizer = s.optimizer,
                      .loss = one ? LossArg(s.losses[0]) : LossArg(),
                      .losses = one ? std::vector<LossArg>{} : std::vector<LossArg>(s.losses.begin(), s.losses.end()),
                      .loss_weights = s.loss_weights,
                      .metrics = per_output_metrics || s.metrics.empty() ? std::vector<std::string>{} : s.metrics[0],
                      .output_metrics = per_output_metrics ? s.metrics : std::vector<std::vector<std::string>>{}});
    } catch (...) {
      detail::rethrow_with(compile_where + ": ");
    }
  }
  return model;
}

// Whether Keras on JAX would compile the model with XLA: its layer classes with supports_jit =
// False (the image transforms, whose JAX code is not traceable, and the lookups, which run in
// TensorFlow) make compile("auto") write false.
bool supports_jit(const std::vector<std::shared_ptr<Layer>>& layers) {
  static const std::set<std::string> without_jit{"RandomTranslation", "RandomRotation", "RandomZoom", "IntegerLookup"};
  return std::none_of(layers.begin(), layers.end(), [](const auto& l) { return without_jit.count(l->class_name()) > 0; });
}

}  // namespace

void Model::save(const std::string& path) {
  const bool archive = check_extension(path);
  impl_->host_view();
  const Impl& m = *impl_;
  const io::WeightsModel weights = m.weights_model("save");
  const detail::ModelGraph graph{m.name, m.class_name, m.inputs, m.outputs, m.calls, weights.layers, m.trainable, m.dtype_policy};
  const detail::ConfigForm form = archive ? detail::ConfigForm::archive : detail::ConfigForm::hdf5;
  Json model_config = detail::model_config(graph, form);
  std::optional<Json> training_config;
  if (m.compiled) training_config = detail::compile_config({m.optimizer, m.losses, m.loss_weights, m.metrics, supports_jit(weights.layers)}, form);
  io::weights_layout(weights);  // the optimizer's slots must fit the model before any file is touched

  const RandomState random = random_state();
  Json state{{"epoch", progress_.epoch}, {"batch", progress_.batch}, {"iterations", m.compiled ? m.optimizer->iterations() : 0}};
  state["learning_rate"] = m.compiled ? Json(m.optimizer->learning_rate()) : Json(nullptr);
  state["random"] = {{"seed", random.seed}, {"drawn", random.drawn}};

  if (archive) {
    if (training_config) model_config["compile_config"] = *training_config;
    io::H5File f = io::H5File::create(path + ": " + kArchiveWeights);  // in memory only
    io::write_weights(f, weights);
    const std::string image = f.close_to_image();
    Json metadata{{"keras_version", kKerasVersion}, {"date_saved", date_saved()}};
    metadata["tandem"] = {{"format", kFormat}, {"format_version", kFormatVersion}, {"training_state", state}};
    const std::vector<io::ZipEntry> entries{
        {kArchiveMetadata, metadata.dump()}, {kArchiveConfig, model_config.dump()}, {kArchiveWeights, image}};
    io::write_atomically(path, [&](const std::string& temp) { io::write_zip(temp, entries); });
    return;
  }
  io::write_atomically(path, [&](const std::string& temp) {
    io::H5File f = io::H5File::create(temp, {.userblock = io::kChecksumBlock});
    f.write_string_attribute("/", "format", kFormat);
    f.write_string_attribute("/", "format_version", kFormatVersion);
    f.write_string_attribute("/", "backend", "tandem");
    f.write_string_attribute("/", "model_config", model_config.dump());
    if (training_config) f.write_string_attribute("/", "training_config", training_config->dump());
    f.write_string_attribute("/", "training_state", state.dump());
    f.create_group(kWeightsRoot);
    io::write_weights(f, weights, kWeightsRoot);
    f.close();
    io::write_checksum(temp);
  });
}

std::unique_ptr<Model> load_model(const std::string& path) {
  // Rebuilding layers draws seeds (initializers); a failed load leaves the random state as it was.
  const RandomState before = random_state();
  try {
    std::unique_ptr<Model> model;
    std::optional<TrainingState> state;  // none in files Keras wrote
    // The model's own dtype policy, where its config records one.
    auto policy_of = [](const Json& model_config) {
      return [policy = recorded_model_policy(model_config)](Model& m) {
        if (policy) m.impl_->dtype_policy = *policy;
      };
    };
    if (io::is_zip_file(path)) {
      const Archive a = read_archive(path);
      const std::string where = path + ": " + kArchiveConfig;
      model = model_from_configs(a.config, a.config.is_object() && a.config.contains("compile_config") ? a.config.at("compile_config") : Json(),
                                 where, where + ": compile_config", policy_of(a.config));
      io::read_weights(io::H5File::open_image(path + ": " + kArchiveWeights, a.weights), model->impl_->weights_model("load_model"));
      if (const std::optional<Json> s = archive_training_state(a, path))
        state = parse_training_state(s, path + ": " + kArchiveMetadata + ": tandem: training_state");
    } else {
      const io::H5File f = open_hdf5(path);
      if (io::is_keras_legacy_model(f)) {
        model = model_from_configs(json_attribute(f, "model_config").value_or(Json()), json_attribute(f, "training_config"),
                                   path + ": model_config", path + ": training_config", policy_of(json_attribute(f, "model_config").value_or(Json())));
        io::read_legacy_weights(f, model->impl_->weights_model("load_model"));
      } else {
        check_tandem_model_file(f);
        state = parse_training_state(json_attribute(f, "training_state"), path + ": training_state");
        model = model_from_configs(*json_attribute(f, "model_config"), json_attribute(f, "training_config"), path + ": model_config",
                                   path + ": training_config", policy_of(*json_attribute(f, "model_config")));
        if (!f.is_group(kWeightsRoot))
          throw ValueError(path + ": the group /" + std::string(kWeightsRoot) + " is missing (the file is incomplete)");
        io::read_weights(f, model->impl_->weights_model("load_model"), kWeightsRoot);
      }
    }
    model->progress_.metric_sums.assign(model->impl_->metric_sums(), 0.0);
    if (state) {
      model->progress_.epoch = state->epoch;
      model->progress_.batch = state->batch;
      set_random_state({state->seed, state->seeds_drawn});
    } else {
      set_random_state(before);  // a Keras file records no random state: rebuilding draws nothing the user sees
    }
    return model;
  } catch (...) {
    set_random_state(before);
    throw;
  }
}

TrainingState load_training_state(const std::string& path) {
  if (io::is_zip_file(path)) {
    const std::optional<Json> s = archive_training_state(read_archive(path), path);
    if (!s) throw ValueError(path + ": a `.keras` archive without Tandem's training state (it was not written by Model::save)");
    return parse_training_state(s, path + ": " + kArchiveMetadata + ": tandem: training_state");
  }
  const io::H5File f = open_hdf5(path);
  if (io::is_keras_legacy_model(f))
    throw ValueError(path + ": a Keras legacy whole-model file, which records no training state (it was not written by Model::save)");
  check_tandem_model_file(f);
  return parse_training_state(json_attribute(f, "training_state"), path + ": training_state");
}

}  // namespace tandem
