// The JSON helpers model and compile configs share.
#include "model/config_json.h"

#include <new>

#include "tandem/errors.h"

namespace tandem::detail {

std::string shorten(const std::string& text) { return text.size() <= 80 ? text : text.substr(0, 77) + "..."; }

Json parse_json(const std::string& text, const std::string& where) {
  // The parser itself keeps its own stack; its callback sees each array and object as it opens.
  const auto bound_depth = [&](int depth, nlohmann::json::parse_event_t event, Json&) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw ValueError(where + ": the JSON nests arrays and objects more than " + std::to_string(kMaxJsonDepth) +
                       " levels deep; a Keras config nests about ten (the file is damaged or not a Keras config)");
    return true;
  };
  try {
    return Json::parse(text, bound_depth);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(where + ": not valid JSON: " + e.what());
  }
}

Json parse_object(const std::string& text, const std::string& what) {
  Json c;
  try {
    c = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(what + ": config_json() returned text that is not JSON: " + e.what());
  }
  if (!c.is_object()) throw ValueError(what + ": config_json() must return a JSON object, got " + shorten(c.dump()));
  return c;
}

const Json& member(const Json& object, const char* key, const std::string& where) {
  if (!object.is_object()) throw ValueError(where + ": expected a JSON object, got " + shorten(object.dump()));
  if (!object.contains(key)) throw ValueError(where + ": the key \"" + key + "\" is missing");
  return object.at(key);
}

std::string string_member(const Json& object, const char* key, const std::string& where) {
  const Json& v = member(object, key, where);
  if (!v.is_string()) throw ValueError(where + ": \"" + key + "\" must be a string, got " + shorten(v.dump()));
  return v.get<std::string>();
}

void rethrow_with(const std::string& prefix) {
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(prefix + "malformed config: " + e.what());
  } catch (const std::bad_alloc&) {
    throw Error(prefix + "out of memory (does the config ask for an impossibly large layer?)");
  }
}

}  // namespace tandem::detail
