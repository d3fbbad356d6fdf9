// The runtime's watchdog: a deliberately stalled kernel (a test-only op) makes fit raise
// TimeoutError naming the device and the kernel within the configured limit, on one device and
// on a Mirrored pair; training goes on once the stalled step has ended.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cstring>
#include <random>
#include <thread>

#include "backend/kernel_registry.h"
#include "graph/op_registry.h"
#include "layer_base/call_context.h"
#include "lag_device.h"

namespace tl = tandem::layers;
using namespace std::chrono_literals;

namespace {
// test_stall: the identity, except that the first run on `stall_device` after `stall_ms` is set
// sleeps that long.
std::string stall_device;
std::atomic<int> stall_ms{0};

REGISTER_OP(.name = "test_stall", .infer = [](const tandem::graph::Attrs&, const std::vector<tandem::TensorType>& in) { return in; },
            .grad = [](tandem::ops::GradContext& c) { c.set(0, c.dy()); });

tandem::backend::KernelFn make_stall(const tandem::backend::KernelInit& k) {
  const std::string device = k.node.device;
  void* out = k.out[0];
  const void* in = k.in[0];
  const std::size_t bytes = k.in_types[0].bytes();
  return [=] {
    if (device == stall_device)  // set before fit, read here after the step's hand-off
      if (const int ms = stall_ms.exchange(0); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    if (out != in) std::memcpy(out, in, bytes);
  };
}
REGISTER_KERNEL("test_stall", tandem::backend::DeviceKind::Cpu, tandem::DType::F32, make_stall);

class StallLayer : public tandem::Layer {
 public:
  StallLayer() : Layer("stall", "stall") {}
  std::string class_name() const override { return "Stall"; }
  tandem::graph::Value emit(tandem::CallContext& ctx, const std::vector<tandem::graph::Value>& inputs) override {
    return ctx.g.add("test_stall", {inputs[0]});
  }
};

tandem::Dataset rows(int64_t n) {
  std::mt19937 gen(2);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(n * 8));
  for (float& v : x) v = normal(gen);
  std::vector<int32_t> y(static_cast<std::size_t>(n));
  for (int64_t r = 0; r < n; ++r) y[static_cast<std::size_t>(r)] = static_cast<int32_t>(r % 3);
  return {tandem::Tensor::from({n, 8}, std::span<const float>(x)), tandem::Tensor::from({n}, std::span<const int32_t>(y))};
}

struct WatchdogLimit {
  explicit WatchdogLimit(std::chrono::milliseconds limit) : saved(tandem::watchdog_timeout()) { tandem::set_watchdog_timeout(limit); }
  ~WatchdogLimit() { tandem::set_watchdog_timeout(saved); }
  std::chrono::milliseconds saved;
};

// Fits once with a stalled kernel on `device`; returns the error text and how long fit took.
std::pair<std::string, std::chrono::steady_clock::duration> fit_with_stall(tandem::Sequential& model, const std::string& device) {
  stall_device = device;
  stall_ms = 3000;
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    model.fit(rows(64), {.epochs = 1, .batch_size = 16, .verbose = 0});
  } catch (const tandem::TimeoutError& e) {
    message = e.what();
  }
  return {message, std::chrono::steady_clock::now() - start};
}

std::unique_ptr<tandem::Sequential> stall_model(tandem::distribute::StrategyPtr strategy) {
  auto owned = std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{tl::InputLayer({8}), tl::Dense(16, "relu"), tandem::LayerRef(std::make_shared<StallLayer>()), tl::Dense(3)});
  tandem::Sequential& model = *owned;
  model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
  model.fit(rows(32), {.epochs = 1, .batch_size = 16, .verbose = 0});  // compiled and warm: the timing below is the step's
  return owned;
}
}  // namespace

TEST_CASE("watchdog: a stalled kernel makes fit raise TimeoutError naming the device and the kernel within the limit") {
  const WatchdogLimit limit(500ms);
  auto owned = stall_model(tandem::distribute::Default());
  tandem::Sequential& model = *owned;
  const auto [message, took] = fit_with_stall(model, "cpu:0");
  CHECK(message.find("watchdog: the step did not finish within 500 ms") != std::string::npos);
  CHECK(message.find("cpu:0 is in kernel 'test_stall' of 'stall'") != std::string::npos);
  CHECK(took >= 500ms);
  CHECK(took < 2000ms);  // the limit, not the 3 s stall
  MESSAGE(message);
  // Once the stalled step has ended, the same model trains again.
  std::this_thread::sleep_for(3000ms);
  CHECK_NOTHROW(model.fit(rows(32), {.epochs = 1, .batch_size = 16, .verbose = 0}));
}

TEST_CASE("watchdog: a step abandoned by the watchdog that is still stalled is reported again, not run over") {
  const WatchdogLimit limit(300ms);
  auto owned = stall_model(tandem::distribute::Default());
  tandem::Sequential& model = *owned;
  const auto [message, took] = fit_with_stall(model, "cpu:0");
  CHECK(message.find("cpu:0 is in kernel 'test_stall'") != std::string::npos);
  try {
    model.fit(rows(32), {.epochs = 1, .batch_size = 16, .verbose = 0});
    FAIL("fit ran while the abandoned step was still stalled");
  } catch (const tandem::TimeoutError& e) {
    CHECK(std::string(e.what()).find("a step abandoned earlier has still not finished") != std::string::npos);
  }
  std::this_thread::sleep_for(3000ms);
}

TEST_CASE("watchdog: a kernel stalled on one Mirrored device is named, and the other device is released") {
  const WatchdogLimit limit(500ms);
  auto owned = stall_model(tandem::distribute::Mirrored({"cpu:0", "cpu:1"}));
  tandem::Sequential& model = *owned;
  const auto [message, took] = fit_with_stall(model, "cpu:1");
  CHECK(message.find("cpu:1 is in kernel 'test_stall' of 'stall'") != std::string::npos);
  CHECK(took < 2000ms);
  MESSAGE(message);
  std::this_thread::sleep_for(3000ms);
  CHECK_NOTHROW(model.fit(rows(32), {.epochs = 1, .batch_size = 16, .verbose = 0}));
}

TEST_CASE("watchdog: a stalled step on a device that copies asynchronously is abandoned after the next batch was copied; training goes on after") {
  const WatchdogLimit limit(500ms);
  auto owned = stall_model(tandem::distribute::Default("lag:0"));
  const std::size_t overlapped = lag::counts().during_step;
  const auto [message, took] = fit_with_stall(*owned, "lag:0");
  CHECK(message.find("lag:0 is in kernel 'test_stall' of 'stall'") != std::string::npos);
  CHECK(took < 2000ms);
  CHECK(lag::counts().during_step > overlapped);  // batch 1, copied while step 0 stalled
  std::this_thread::sleep_for(3000ms);
  CHECK_NOTHROW(owned->fit(rows(32), {.epochs = 1, .batch_size = 16, .verbose = 0}));
}

TEST_CASE("watchdog: the limit must be positive") {
  CHECK_THROWS_WITH_AS(tandem::set_watchdog_timeout(0ms), "set_watchdog_timeout: expected a positive limit, got 0 ms", tandem::ValueError);
}
