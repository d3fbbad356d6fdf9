// Sets Keras's global dtype policy for one scope (the layers made in it take it), and puts
// float32 back after it, so that one test's policy does not leak into the next.
#pragma once

#include <tandem/tandem.h>

#include <string>

struct GlobalPolicy {
  explicit GlobalPolicy(const std::string& name) { tandem::mixed_precision::set_global_policy(name); }
  ~GlobalPolicy() { tandem::mixed_precision::set_global_policy("float32"); }
  GlobalPolicy(const GlobalPolicy&) = delete;
  GlobalPolicy& operator=(const GlobalPolicy&) = delete;
};
