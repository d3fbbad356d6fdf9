// The registries of ops, kernels and layer classes: a key registered twice is an error naming both
// places, and every op the graph can hold has the CPU kernels training and gradient checks need.
#include <doctest/doctest.h>

#include <map>
#include <source_location>
#include <string>

#include "backend/kernel_registry.h"
#include "graph/op_registry.h"
#include "layers/config.h"
#include "model/registries.h"
#include "tandem/errors.h"

using namespace tandem;
using backend::DeviceKind;

namespace {

std::string at(const std::source_location& loc) { return "tests/test_registry.cpp:" + std::to_string(loc.line()); }

// Registers `key` twice into a fresh registry and checks that both lookups and check() report it.
template <class Registry, class Key, class Entry>
void check_duplicate_is_reported(Registry& fresh, const Key& key, const Entry& entry, const std::string& described) {
  const auto first = std::source_location::current();
  fresh.add(key, entry, first);
  CHECK(fresh.find(key) != nullptr);
  const auto again = std::source_location::current();
  fresh.add(key, entry, again);
  const std::string expected = described + " registered twice: first at " + at(first) + ", again at " + at(again);
  CHECK_THROWS_WITH_AS(fresh.find(key), expected.c_str(), Error);
  CHECK_THROWS_WITH_AS(fresh.check(), expected.c_str(), Error);
}

}  // namespace

TEST_CASE("registry: an op registered twice is an error naming both places") {
  ops::OpRegistry fresh;
  const auto first = std::source_location::current();
  fresh.add({.name = "relu"}, first);
  const auto again = std::source_location::current();
  fresh.add({.name = "relu"}, again);
  const std::string expected = "op \"relu\" registered twice: first at " + at(first) + ", again at " + at(again);
  CHECK_THROWS_WITH_AS(fresh.find("relu"), expected.c_str(), Error);
  CHECK_THROWS_WITH_AS(fresh.find("tanh"), expected.c_str(), Error);  // every lookup, not only the duplicate's
  CHECK_THROWS_WITH_AS(fresh.check(), expected.c_str(), Error);
}

TEST_CASE("registry: a kernel registered twice is an error naming both places") {
  backend::KernelRegistry fresh;
  check_duplicate_is_reported(fresh, backend::KernelKey{"relu", DeviceKind::Cpu, DType::F64}, backend::KernelFactory(),
                              "kernel \"relu\" on CPU float64");
}

TEST_CASE("registry: a layer class registered twice is an error naming both places") {
  layers::LayerRegistry fresh;
  check_duplicate_is_reported(fresh, std::string("Dense"), layers::ConfigFactory{}, "layer class \"Dense\"");
}

TEST_CASE("registry: every failed registration is reported at once") {
  ops::OpRegistry fresh;
  const auto loc = std::source_location::current();
  for (const char* name : {"relu", "tanh"}) {
    fresh.add({.name = name}, loc);
    fresh.add({.name = name}, loc);
  }
  const std::string expected = "2 registration errors:\n  op \"relu\" registered twice: first at " + at(loc) + ", again at " +
                               at(loc) + "\n  op \"tanh\" registered twice: first at " + at(loc) + ", again at " + at(loc);
  CHECK_THROWS_WITH_AS(fresh.check(), expected.c_str(), Error);
}

TEST_CASE("registry: Tandem's own registrations are unique and know where they were made") {
  CHECK_NOTHROW(check_registries());
  // The registration macros and constructors record their caller, relative to the source tree.
  CHECK(core::where(ops::registry().entries().at("relu").registered_at).starts_with("src/ops/unary.cpp:"));
  CHECK(core::where(backend::kernels().entries().at({"relu", DeviceKind::Cpu, DType::F32}).registered_at)
            .starts_with("src/backend/cpu/activations.cpp:"));
  CHECK(core::where(layers::layer_registry().entries().at("Dense").registered_at).starts_with("layers/dense.cpp:"));
  CHECK_THROWS_WITH_AS(ops::find("no_such_op"), "unknown op 'no_such_op'", Error);
}

// Training runs in float32 and gradient checks in float64, so every op a model, a loss, an
// optimizer or a gradient rule can emit needs a CPU kernel for both. Gradient rules only emit
// registered ops (Graph::add refuses others), so checking every registered op covers them all.
// The exceptions, and why each is right:
const std::map<std::string, std::string> kWithoutFloatKernels = {
    {"placeholder", "the runtime binds the fed buffer in the arena; no kernel runs"},
    {"variable", "the runtime binds the variable's own storage; no kernel runs"},
    {"increment", "steps the int64 iteration counter: an int64 kernel only"},
    {"loss_scale_update", "updates a LossScaleOptimizer's float32 scale (Keras keeps it float32 whatever the model's dtype): a float32 kernel only"},
    {"one_hot", "reads integer class ids: int32 and int64 kernels, each writing float32 or float64"},
    {"integer_lookup", "maps integer ids to int64 indices: int32 and int64 kernels"},
};

TEST_CASE("registry: every op has CPU kernels for float32 and float64, except those listed with a reason") {
  const auto& kernels = backend::kernels().entries();
  auto has = [&](const std::string& op, DType t) { return kernels.contains({op, DeviceKind::Cpu, t}); };
  std::string missing;
  for (const auto& [name, slot] : ops::registry().entries()) {
    const bool f32 = has(name, DType::F32), f64 = has(name, DType::F64);
    const std::string where = name + " (" + core::where(slot.registered_at) + ")";
    if (kWithoutFloatKernels.contains(name)) {
      CHECK_MESSAGE(!(f32 && f64), where, " has both float kernels now: drop it from kWithoutFloatKernels");
      CHECK_MESSAGE(!slot.entry.grad, where, " has a gradient rule, so it needs float kernels");
      continue;
    }
    CHECK_MESSAGE(slot.entry.source == ops::Source::Kernel, where, " binds memory instead of running a kernel: list it");
    if (!f32) missing += "\n  " + where + ": no CPU float32 kernel";
    if (!f64) missing += "\n  " + where + ": no CPU float64 kernel";
  }
  CHECK_MESSAGE(missing.empty(), "ops without kernels:", missing);
  for (const auto& [name, reason] : kWithoutFloatKernels) CHECK_MESSAGE(ops::registry().entries().contains(name), name, " is listed but is no op");
}

TEST_CASE("registry: every kernel is for a registered op") {
  for (const auto& [key, slot] : backend::kernels().entries())
    CHECK_MESSAGE(ops::registry().entries().contains(key.op), "kernel ", backend::describe(key), " at ",
                  core::where(slot.registered_at), " is for no registered op");
}
