// LayerConfig, and the config a custom layer saves: the keys every layer starts with, then its
// get_config().
#include "config/config_reader.h"
#include "tandem/errors.h"
#include "tandem/layer.h"

namespace tandem {

using config::ConfigReader;
using config::Json;

// A config being written holds its JSON; one being read (in a factory) reads through the loader's
// ConfigReader, which counts the keys read so that unread ones can be refused.
struct LayerConfig::Impl {
  Json json = Json::object();
  const ConfigReader* reader = nullptr;

  void put(const std::string& key, Json value) {
    if (reader) throw ValueError("LayerConfig: cannot set \"" + key + "\" in a config being read");
    if (key == "name" || key == "trainable" || key == "dtype")
      throw ValueError("LayerConfig: \"" + key + "\" is written for every layer; get_config sets only the layer's own arguments");
    json[key] = std::move(value);
  }

  template <class F>
  auto read(F&& f) const {
    if (reader) return f(*reader);
    const ConfigReader own("LayerConfig", json);
    return f(own);
  }
};

LayerConfig::LayerConfig() : impl_(std::make_unique<Impl>()) {}
LayerConfig::LayerConfig(const ConfigReader& reader) : impl_(std::make_unique<Impl>()) { impl_->reader = &reader; }
LayerConfig::~LayerConfig() = default;
LayerConfig::LayerConfig(const LayerConfig& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
LayerConfig& LayerConfig::operator=(const LayerConfig& other) {
  *impl_ = *other.impl_;
  return *this;
}

LayerConfig& LayerConfig::set(const std::string& key, int64_t value) { return impl_->put(key, value), *this; }
LayerConfig& LayerConfig::set(const std::string& key, double value) { return impl_->put(key, value), *this; }
LayerConfig& LayerConfig::set(const std::string& key, bool value) { return impl_->put(key, value), *this; }
LayerConfig& LayerConfig::set(const std::string& key, const std::string& value) { return impl_->put(key, value), *this; }
LayerConfig& LayerConfig::set(const std::string& key, const std::vector<int64_t>& value) { return impl_->put(key, value), *this; }

int64_t LayerConfig::integer(const std::string& key) const {
  return impl_->read([&](const ConfigReader& r) { return r.integer(key.c_str()); });
}
double LayerConfig::number(const std::string& key) const {
  return impl_->read([&](const ConfigReader& r) { return r.number(key.c_str()); });
}
bool LayerConfig::boolean(const std::string& key) const {
  return impl_->read([&](const ConfigReader& r) {
    if (!r.has(key.c_str())) r.fail(key.c_str(), "true or false (the key is missing)");
    return r.boolean(key.c_str(), false);
  });
}
std::string LayerConfig::string(const std::string& key) const {
  return impl_->read([&](const ConfigReader& r) {
    if (!r.has(key.c_str())) r.fail(key.c_str(), "a string (the key is missing)");
    return r.string(key.c_str(), "");
  });
}
std::vector<int64_t> LayerConfig::integers(const std::string& key) const {
  return impl_->read([&](const ConfigReader& r) { return r.integers(key.c_str()); });
}
bool LayerConfig::has(const std::string& key) const {
  return impl_->read([&](const ConfigReader& r) { return r.has(key.c_str()); });
}
std::string LayerConfig::name() const {
  return impl_->read([](const ConfigReader& r) { return r.name(); });
}
std::string LayerConfig::json() const { return impl_->json.dump(); }

LayerConfig Layer::get_config() const {
  throw ValueError(class_name() + " \"" + name_ +
                   "\": the layer has no config (it overrides neither get_config nor config_json), so Model::save cannot "
                   "store it; use save_weights, or override get_config and register the class with register_layer");
}

std::string Layer::config_json() const {
  Json config = config::layer_basics_json(name_, config::saved_policy_name(dtype_policy_, dtype_));
  config["trainable"] = trainable_;
  const Json own = Json::parse(get_config().json());
  for (const auto& [key, value] : own.items()) config[key] = value;
  return config.dump();
}

}  // namespace tandem
