// The JSON helpers that model configs (model_config.cpp) and compile settings (compile_config.cpp)
// share: reading members with errors that say where, and the text of a config_json() object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tandem::detail {

using Json = nlohmann::ordered_json;

std::string shorten(const std::string& text);  // at most 80 characters, "..." where cut

// Keras's configs nest about ten levels deep (a model's layers, a layer's config, its initializer's
// config); nested models add a few each. A file that nests deeper is refused before it is parsed
// whole: the code that reads, copies and prints JSON recurses once per level.
constexpr int kMaxJsonDepth = 256;

// The JSON in `text`, read from a file; `where` names the file (and the entry or attribute) in the
// ValueError thrown for text that is not JSON or nests deeper than kMaxJsonDepth.
Json parse_json(const std::string& text, const std::string& where);

// The JSON object `text` returned by a layer's, optimizer's or loss's config_json(); `what` names it.
Json parse_object(const std::string& text, const std::string& what);

// `object[key]`, throwing ValueError naming `where` if `object` is not an object or lacks the key.
const Json& member(const Json& object, const char* key, const std::string& where);
std::string string_member(const Json& object, const char* key, const std::string& where);  // must be a string

// Inside a catch block: rethrows the exception with `prefix` before its message, keeping its type
// (a JSON library error becomes a ValueError).
[[noreturn]] void rethrow_with(const std::string& prefix);

}  // namespace tandem::detail
