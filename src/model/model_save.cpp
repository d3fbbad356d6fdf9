// Model::save and load_model: one HDF5 file with the model's config, compile settings, weights,
// optimizer state and training state (docs/saving.md).
//
//   (512-byte user block: Tandem's size and CRC-32 check, io/checksum.h)
//   /  attributes  format "tandem.model", format_version "1", backend "tandem",
//                  model_config (JSON), training_config (JSON; compiled models only),
//                  training_state (JSON)
//   /model_weights/...  the whole Keras 3 `.weights.h5` tree (io/weights_file.h), optimizer included
#include <algorithm>

#include "io/atomic_file.h"
#include "io/checksum.h"
#include "io/hdf5_file.h"
#include "layer_base/initializers.h"
#include "model/model_config.h"
#include "model/model_impl.h"
#include "tandem/errors.h"
#include "tandem/saving.h"

namespace tandem {

namespace {

using detail::Json;

constexpr const char* kFormat = "tandem.model";
constexpr const char* kFormatVersion = "1";
constexpr const char* kWeightsRoot = "model_weights";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void check_extension(const std::string& path) {
  if (ends_with(path, ".weights.h5"))
    throw ValueError("Model::save writes a whole model, not a weights file: use save_weights for `.weights.h5` paths. Received: filepath=" +
                     path);
  if (!ends_with(path, ".h5") && !ends_with(path, ".hdf5"))
    throw ValueError("Model::save writes an HDF5 file: the filename must end in `.h5` or `.hdf5`. Received: filepath=" + path);
}

// A root attribute holding JSON; empty when the attribute is absent.
std::optional<Json> json_attribute(const io::H5File& f, const char* name) {
  const std::optional<std::string> text = f.read_string_attribute("/", name);
  if (!text) return std::nullopt;
  try {
    return Json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(f.path() + ": " + name + ": not valid JSON: " + e.what());
  }
}

// Opens a model file: checks the checksum, the HDF5 structure and the format marker.
io::H5File open_model_file(const std::string& path) {
  io::verify_checksum(path);
  io::H5File f = io::H5File::open(path);
  const std::optional<std::string> format = f.read_string_attribute("/", "format");
  if (const auto keras = f.read_string_attribute("/", "keras_version"); keras && !format)
    throw ValueError(path + ": a Keras whole-model HDF5 file (Keras's legacy format, written by Keras " + *keras +
                     "), not one written by Model::save; load_model does not read Keras's formats yet. In Keras, save the weights "
                     "with model.save_weights(\"model.weights.h5\") and load them into the same model built with Tandem (load_weights)");
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
  return f;
}

int64_t integer_field(const Json& state, const char* key, const std::string& where) {
  if (!state.contains(key) || !state.at(key).is_number_integer())
    throw ValueError(where + ": \"" + key + "\" must be an integer" + (state.contains(key) ? ", got " + state.at(key).dump() : " (missing)"));
  return state.at(key).get<int64_t>();
}

TrainingState parse_training_state(const io::H5File& f) {
  const std::optional<Json> state = json_attribute(f, "training_state");
  const std::string where = f.path() + ": training_state";
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

}  // namespace

void Model::save(const std::string& path) {
  check_extension(path);
  impl_->host_view();
  const Impl& m = *impl_;
  const io::WeightsModel weights = m.weights_model("save");
  const Json model_config = detail::model_config({m.name, m.class_name, m.input, m.output, m.calls, weights.layers});
  std::optional<Json> training_config;
  if (m.compiled) training_config = detail::compile_config({m.optimizer, m.loss, m.metrics});
  io::weights_layout(weights);  // the optimizer's slots must fit the model before any file is touched

  const RandomState random = random_state();
  Json state{{"epoch", progress_.epoch}, {"batch", progress_.batch}, {"iterations", m.compiled ? m.optimizer->iterations() : 0}};
  state["learning_rate"] = m.compiled ? Json(m.optimizer->learning_rate()) : Json(nullptr);
  state["random"] = {{"seed", random.seed}, {"drawn", random.drawn}};

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
    const io::H5File f = open_model_file(path);
    const TrainingState state = parse_training_state(f);
    const std::optional<Json> model_config = json_attribute(f, "model_config");
    const std::optional<Json> training_config = json_attribute(f, "training_config");

    std::unique_ptr<Model> model;
    try {
      model = detail::model_from_config(*model_config);
    } catch (...) {
      detail::rethrow_with(path + ": model_config: ");
    }
    if (training_config) {
      try {
        const detail::CompileSettings s = detail::compile_from_config(*training_config);
        model->compile({.optimizer = s.optimizer, .loss = s.loss, .metrics = s.metrics});
      } catch (...) {
        detail::rethrow_with(path + ": training_config: ");
      }
    }
    if (!f.is_group(kWeightsRoot))
      throw ValueError(path + ": the group /" + std::string(kWeightsRoot) + " is missing (the file is incomplete)");
    io::read_weights(f, model->impl_->weights_model("load_model"), kWeightsRoot);

    model->progress_.epoch = state.epoch;
    model->progress_.batch = state.batch;
    model->progress_.metric_sums.assign(model->impl_->metrics.size(), 0.0);
    set_random_state({state.seed, state.seeds_drawn});
    return model;
  } catch (...) {
    set_random_state(before);
    throw;
  }
}

TrainingState load_training_state(const std::string& path) { return parse_training_state(open_model_file(path)); }

}  // namespace tandem
