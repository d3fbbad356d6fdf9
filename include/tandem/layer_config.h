// A custom layer's config: its own constructor arguments by name, as Keras's get_config returns
// them and from_config reads them. Numbers, booleans, strings and lists of integers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tandem {

namespace config {
class ConfigReader;
}

class LayerConfig {
 public:
  LayerConfig();
  ~LayerConfig();
  LayerConfig(const LayerConfig& other);
  LayerConfig& operator=(const LayerConfig& other);

  LayerConfig& set(const std::string& key, int64_t value);
  LayerConfig& set(const std::string& key, int value) { return set(key, int64_t{value}); }
  LayerConfig& set(const std::string& key, double value);
  LayerConfig& set(const std::string& key, bool value);
  LayerConfig& set(const std::string& key, const std::string& value);
  LayerConfig& set(const std::string& key, const char* value) { return set(key, std::string(value)); }
  LayerConfig& set(const std::string& key, const std::vector<int64_t>& value);

  // Reading, in a factory given to register_layer. A missing key or a value of another kind
  // throws ValueError naming the class, the layer and the key. Keys the factory does not read
  // are refused after it returns, so a config never asks for what the layer ignores.
  int64_t integer(const std::string& key) const;
  double number(const std::string& key) const;
  bool boolean(const std::string& key) const;
  std::string string(const std::string& key) const;
  std::vector<int64_t> integers(const std::string& key) const;
  bool has(const std::string& key) const;
  // The name of the layer being rebuilt ("" = name it automatically): pass it to the constructor.
  std::string name() const;

  // Library use: the JSON object text, and a config read from a saved one.
  std::string json() const;
  explicit LayerConfig(const config::ConfigReader& reader);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem
