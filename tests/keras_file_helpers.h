// What the tests of Keras-made files share: reading tests/data/keras's JSON values as tensors,
// comparing predictions, reading an archive's entries, and comparing configs with Keras's.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tandem/tandem.h>
#include <vector>

#include "io/zip_archive.h"

namespace keras_file_helpers {

using Json = nlohmann::json;
using tandem::DType;
using tandem::Tensor;

inline Json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p);
  return Json::parse(in);
}

inline Tensor tensor_of(const Json& t, DType dtype) {
  const std::vector<double> v = t.at("values").get<std::vector<double>>();
  return Tensor::from(tandem::Shape(t.at("shape").get<std::vector<int64_t>>()), std::span<const double>(v)).cast(dtype);
}

inline double max_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const Tensor x = a.cast(DType::F64), y = b.cast(DType::F64);
  double d = 0;
  for (int64_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x.values<double>()[i] - y.values<double>()[i]));
  return d;
}

inline std::string zip_entry(const std::filesystem::path& archive, const std::string& name) {
  for (const auto& e : tandem::io::read_zip(archive.string()))
    if (e.name == name) return e.bytes;
  FAIL("no entry " << name << " in " << archive);
  return {};
}

// Keras's config with what differs by process removed: the id Keras gives a shared dtype policy
// object, and seeds Keras leaves null where Tandem records the one it drew.
inline Json comparable(Json j, const Json& keras) {
  if (j.is_object()) {
    j.erase("shared_object_id");
    for (auto& [key, value] : j.items()) {
      const Json* other = keras.is_object() && keras.contains(key) ? &keras.at(key) : nullptr;
      if (key == "seed" && other && other->is_null() && value.is_number_integer()) value = nullptr;
      value = comparable(value, other ? *other : Json());
    }
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) j[i] = comparable(j[i], keras.is_array() && i < keras.size() ? keras[i] : Json());
  }
  return j;
}
inline Json without_ids(Json j) { return comparable(std::move(j), Json()); }

}  // namespace keras_file_helpers
