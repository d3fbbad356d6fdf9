// The table behind Tandem's three static registries (ops, kernels, layer classes): one entry per
// key, and a key registered twice is an error that names both places.
//
// Registrations run from static initialisers, before main, where an exception ends the program
// with no readable message. So a duplicate does not throw when it is registered: the registry keeps
// the first entry and records the error, and every lookup — and check() — then throws one
// tandem::Error listing every such error. The program starts, and the first thing that uses a
// broken registry says what is wrong and where. Tests build registries of their own to provoke
// duplicates without breaking the process's.
//
// Registration happens only during static initialisation; lookups come after it, so the table
// itself needs no lock.
#pragma once

#include <map>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace tandem::core {

// "src/ops/unary.cpp:19": the path relative to Tandem's source tree when the file is inside it.
std::string where(const std::source_location& loc);

// Throws one tandem::Error listing `errors` (one per line when there are several).
[[noreturn]] void throw_registry_errors(const std::vector<std::string>& errors);

// How a string key reads in messages: `"relu"`. Registries with other keys overload describe()
// in their key's namespace.
inline std::string describe(const std::string& key) { return '"' + key + '"'; }

template <class Key, class Entry>
class Registry {
 public:
  struct Slot {
    Entry entry;
    std::source_location registered_at;
  };

  // `what` names the kind of entry in messages: "op", "kernel", "layer class".
  explicit Registry(std::string what) : what_(std::move(what)) {}

  void add(Key key, Entry entry, std::source_location loc) {
    auto [it, inserted] = slots_.try_emplace(std::move(key), Slot{std::move(entry), loc});
    if (!inserted)
      errors_.push_back(what_ + " " + describe(it->first) + " registered twice: first at " + where(it->second.registered_at) +
                        ", again at " + where(loc));
  }

  // The entry for `key`, or nullptr when none is registered. Throws if any registration failed.
  const Entry* find(const Key& key) const {
    check();
    auto it = slots_.find(key);
    return it == slots_.end() ? nullptr : &it->second.entry;
  }

  // Throws if any registration failed.
  void check() const {
    if (!errors_.empty()) throw_registry_errors(errors_);
  }

  const std::vector<std::string>& errors() const { return errors_; }
  // Every entry in key order, with where it was registered.
  const std::map<Key, Slot>& entries() const { return slots_; }

 private:
  std::string what_;
  std::map<Key, Slot> slots_;
  std::vector<std::string> errors_;
};

}  // namespace tandem::core
