// StringLookup on the host: Keras 3's StringLookup indices (index_lookup.py) for output_mode "int",
// its config, and its vocabulary.txt asset format.
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tandem/errors.h"
#include "tandem/text.h"

namespace tandem::text {

namespace {
using Json = nlohmann::ordered_json;
const char* const kWho = "StringLookup";
}  // namespace

StringLookup::StringLookup(const StringLookupOptions& options) : options_(options) {
  const std::string who = std::string(kWho) + " \"" + options_.name + "\"";
  if (options_.max_tokens != 0 && options_.max_tokens <= 1)
    throw ValueError(who + ": max_tokens must be greater than 1 (or 0 for no limit), got " + std::to_string(options_.max_tokens));
  if (options_.num_oov_indices < 0 || options_.num_oov_indices > 1)
    throw ValueError(who + ": num_oov_indices must be 0 or 1 (Keras spreads strings over several OOV indices with FarmHash, which Tandem does not have), got " +
                     std::to_string(options_.num_oov_indices));
  if (!options_.vocabulary.empty()) set_vocabulary(options_.vocabulary);
}

void StringLookup::set_vocabulary(std::vector<std::string> vocabulary) {
  const std::string who = std::string(kWho) + " \"" + options_.name + "\"";
  std::vector<std::string> special;
  if (options_.mask_token) special.push_back(*options_.mask_token);
  special.insert(special.end(), static_cast<std::size_t>(options_.num_oov_indices), options_.oov_token);
  if (vocabulary.size() >= special.size() && std::equal(special.begin(), special.end(), vocabulary.begin()))
    vocabulary.erase(vocabulary.begin(), vocabulary.begin() + static_cast<std::ptrdiff_t>(special.size()));
  if (vocabulary.empty()) throw ValueError(who + ": the vocabulary is empty");
  std::unordered_map<std::string, int64_t> index;
  for (std::size_t i = 0; i < vocabulary.size(); ++i) {
    const std::string& t = vocabulary[i];
    if (!index.emplace(t, token_start() + static_cast<int64_t>(i)).second) throw ValueError(who + ": the vocabulary repeats \"" + t + "\"");
    if (options_.mask_token && t == *options_.mask_token)
      throw ValueError(who + ": the vocabulary holds the mask token \"" + t + "\" after its start; give the special tokens only at the start, or not at all");
    if (options_.invert && t == options_.oov_token) throw ValueError(who + ": the vocabulary holds the OOV token \"" + t + "\" after its start (invert)");
  }
  const int64_t size = token_start() + static_cast<int64_t>(vocabulary.size());
  if (options_.max_tokens && size > options_.max_tokens)
    throw ValueError(who + ": a vocabulary of " + std::to_string(size) + " indices is larger than max_tokens " + std::to_string(options_.max_tokens));
  tokens_ = std::move(vocabulary);
  index_ = std::move(index);
}

void StringLookup::adapt(std::span<const std::string> tokens) {
  if (!options_.vocabulary.empty() && !adapted_)
    throw ValueError(std::string(kWho) + " \"" + options_.name + "\": cannot adapt a lookup given a vocabulary");
  std::map<std::string, int64_t> counts;
  for (const std::string& t : tokens) ++counts[t];
  if (options_.mask_token) counts.erase(*options_.mask_token);
  counts.erase(options_.oov_token);
  std::vector<std::pair<std::string, int64_t>> order(counts.begin(), counts.end());
  // np.lexsort((tokens, counts))[::-1]: descending count, ties by descending bytes.
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first > b.first; });
  if (options_.max_tokens) order.resize(std::min<std::size_t>(order.size(), static_cast<std::size_t>(std::max<int64_t>(0, options_.max_tokens - token_start()))));
  std::vector<std::string> vocabulary;
  for (auto& [token, count] : order) vocabulary.push_back(token);
  if (vocabulary.empty()) throw ValueError(std::string(kWho) + " \"" + options_.name + "\": adapt() found no tokens besides the special ones");
  set_vocabulary(vocabulary);
  options_.vocabulary = tokens_;
  adapted_ = true;
}

std::vector<std::string> StringLookup::get_vocabulary(bool include_special_tokens) const {
  std::vector<std::string> v;
  if (include_special_tokens) {
    if (options_.mask_token) v.push_back(*options_.mask_token);
    v.insert(v.end(), static_cast<std::size_t>(options_.num_oov_indices), options_.oov_token);
  }
  v.insert(v.end(), tokens_.begin(), tokens_.end());
  return v;
}

int64_t StringLookup::vocabulary_size() const { return token_start() + static_cast<int64_t>(tokens_.size()); }

int64_t StringLookup::lookup(std::string_view token) const {
  if (options_.mask_token && token == *options_.mask_token) return 0;
  const auto it = index_.find(std::string(token));
  if (it != index_.end()) return it->second;
  if (options_.num_oov_indices == 0)
    throw ValueError(std::string(kWho) + " \"" + options_.name + "\": \"" + std::string(token) +
                     "\" is not in the vocabulary and num_oov_indices is 0 (Keras raises too; set num_oov_indices=1)");
  return options_.mask_token ? 1 : 0;
}

Tensor StringLookup::operator()(std::span<const std::string> tokens, Shape shape) const {
  if (shape.rank() == 0) shape = Shape{static_cast<int64_t>(tokens.size())};
  if (shape.num_elements() != static_cast<int64_t>(tokens.size()))
    throw ShapeError(std::string(kWho) + " \"" + options_.name + "\": " + std::to_string(tokens.size()) + " tokens do not fill shape " + shape.str());
  std::vector<int64_t> ids(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) ids[i] = lookup(tokens[i]);
  return Tensor::from(shape, std::span<const int64_t>(ids));
}

std::vector<std::string> StringLookup::decode(const Tensor& ids) const {
  const Tensor v = ids.cast(DType::I64);
  std::vector<std::string> out;
  for (int64_t id : v.values<int64_t>()) {
    if (options_.mask_token && id == 0) out.push_back(*options_.mask_token);
    else if (id >= token_start() && id < vocabulary_size()) out.push_back(tokens_[static_cast<std::size_t>(id - token_start())]);
    else out.push_back(options_.oov_token);
  }
  return out;
}

void StringLookup::save_vocabulary(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  const std::vector<std::string> v = get_vocabulary(true);
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? "\n" : "") << v[i];  // Keras: "\n".join(...)
  if (!out.good()) throw Error(path + ": cannot write the vocabulary");
}

void StringLookup::load_vocabulary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) throw Error(path + ": cannot read the vocabulary");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  set_vocabulary(std::move(lines));
  options_.vocabulary = tokens_;
}

std::string StringLookup::config_json() const {
  Json c = Json::object();
  c["name"] = options_.name;
  c["trainable"] = true;
  c["dtype"] = {{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", "float32"}}}, {"registered_name", nullptr}};
  c["invert"] = options_.invert;
  c["max_tokens"] = options_.max_tokens ? Json(options_.max_tokens) : Json(nullptr);
  c["num_oov_indices"] = options_.num_oov_indices;
  c["oov_token"] = options_.oov_token;
  c["mask_token"] = options_.mask_token ? Json(*options_.mask_token) : Json(nullptr);
  c["output_mode"] = "int";
  c["sparse"] = false;
  c["pad_to_max_tokens"] = false;
  c["idf_weights"] = nullptr;
  c["vocabulary"] = tokens_.empty() ? Json(nullptr) : Json(get_vocabulary(false));
  c["vocabulary_size"] = tokens_.empty() ? Json(nullptr) : Json(vocabulary_size());
  c["oov_method"] = "floormod";
  c["salt"] = nullptr;
  c["encoding"] = "utf-8";
  return c.dump();
}

StringLookup StringLookup::from_config(const std::string& keras_config_json) {
  const Json c = Json::parse(keras_config_json);
  StringLookupOptions o;
  o.name = c.value("name", o.name);
  const std::string who = std::string(kWho) + " \"" + o.name + "\"";
  auto fail = [&](const std::string& key, const std::string& expected, const Json& got) {
    throw ValueError(who + ": config key \"" + key + "\": expected " + expected + ", got " + got.dump());
  };
  static const std::set<std::string> known = {"name", "trainable", "dtype", "invert", "max_tokens", "num_oov_indices", "oov_token",
                                              "mask_token", "output_mode", "sparse", "pad_to_max_tokens", "idf_weights", "vocabulary",
                                              "vocabulary_size", "oov_method", "salt", "encoding"};
  for (const auto& [key, value] : c.items())
    if (!known.count(key)) fail(key, "no such key (Tandem's StringLookup reads: name, invert, max_tokens, num_oov_indices, ...)", value);
  auto expect = [&](const char* key, const Json& only, const std::string& why) {
    if (c.contains(key) && c.at(key) != only) fail(key, only.dump() + " (" + why + ")", c.at(key));
  };
  expect("output_mode", "int", "the host lookup gives indices; encode them in the model with CategoryEncoding");
  expect("sparse", false, "Tandem's tensors are dense");
  expect("pad_to_max_tokens", false, "only used by the encoded outputs");
  expect("idf_weights", nullptr, "only used by tf_idf output");
  expect("oov_method", "floormod", "FarmHash is not available");
  expect("salt", nullptr, "only used with FarmHash");
  expect("encoding", "utf-8", "tokens are UTF-8 bytes");
  if (c.contains("invert")) o.invert = c.at("invert").get<bool>();
  if (c.contains("max_tokens") && !c.at("max_tokens").is_null()) o.max_tokens = c.at("max_tokens").get<int64_t>();
  if (c.contains("num_oov_indices")) o.num_oov_indices = c.at("num_oov_indices").get<int64_t>();
  if (c.contains("oov_token")) o.oov_token = c.at("oov_token").get<std::string>();
  if (c.contains("mask_token") && !c.at("mask_token").is_null()) o.mask_token = c.at("mask_token").get<std::string>();
  const Json vocabulary = c.value("vocabulary", Json(nullptr));
  if (vocabulary.is_string())
    fail("vocabulary", "a list of strings (a file path is not read; load the vocabulary with load_vocabulary)", vocabulary);
  if (vocabulary.is_array()) o.vocabulary = vocabulary.get<std::vector<std::string>>();
  return StringLookup(o);
}

}  // namespace tandem::text
