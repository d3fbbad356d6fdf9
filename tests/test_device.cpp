// The Device seam, proven with a second device kind before a GPU uses it: "sim" devices keep their
// memory apart from the host's, reachable only through their copies, which check every address
// against the device's live allocations. New memory is filled with NaN bytes, so a step that read
// memory it had not written would show NaN. The sim device runs the CPU kernels, so its results
// must equal the cpu device's bit for bit.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cstdio>
#include <filesystem>
#include <cstring>
#include <map>
#include <mutex>
#include <random>

#include "backend/cpu/context.h"
#include "backend/cpu/denormals.h"
#include "backend/device.h"
#include "runtime/device_threads.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
using tandem::backend::DeviceBuffer;
using tandem::backend::DeviceName;

namespace {

struct SimStats {
  std::mutex mutex;
  std::size_t bytes_in = 0, bytes_out = 0, allocations = 0;
  std::size_t recordings = 0, replays = 0;
};
SimStats& stats() {
  static SimStats s;
  return s;
}

class SimDevice : public tandem::backend::Device {
 public:
  SimDevice(const DeviceName& name, int threads) : Device(name), context_(threads) {}
  tandem::backend::DeviceKind kernel_kind() const override { return tandem::backend::DeviceKind::Cpu; }
  DeviceBuffer allocate(std::size_t bytes) override {
    const std::size_t rounded = (std::max<std::size_t>(64, bytes) + 63) / 64 * 64;
    auto* data = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
    REQUIRE(data);
    std::memset(data, 0xff, rounded);  // NaN in every float and double
    std::lock_guard lock(mutex_);
    live_[data] = rounded;
    std::lock_guard stats_lock(stats().mutex);
    ++stats().allocations;
    return DeviceBuffer(this, data, rounded);
  }
  void copy_in(void* device_dst, const void* host_src, std::size_t bytes) override {
    check_inside(device_dst, bytes, "copy_in");
    std::memcpy(device_dst, host_src, bytes);
    std::lock_guard lock(stats().mutex);
    stats().bytes_in += bytes;
  }
  void copy_out(void* host_dst, const void* device_src, std::size_t bytes) override {
    check_inside(device_src, bytes, "copy_out");
    std::memcpy(host_dst, device_src, bytes);
    std::lock_guard lock(stats().mutex);
    stats().bytes_out += bytes;
  }
  void* kernel_context() override { return &context_; }
  void setup_worker_thread() override { tandem::backend::cpu::flush_denormals_on_this_thread(); }
  void synchronize() override {}
  // Records as a GPU does (CUDA graphs), here by keeping the issuing function: a replay issues the
  // same kernels again, so a replayed step must still equal the cpu device's bit for bit.
  std::unique_ptr<StepRecording> record(const std::function<void()>& issue) override {
    struct Replay : StepRecording {
      std::function<void()> issue;
      void replay() override {
        issue();
        std::lock_guard lock(stats().mutex);
        ++stats().replays;
      }
    };
    auto r = std::make_unique<Replay>();
    r->issue = issue;
    std::lock_guard lock(stats().mutex);
    ++stats().recordings;
    return r;
  }

 protected:
  void release(std::byte* data, std::size_t) override {
    {
      std::lock_guard lock(mutex_);
      live_.erase(data);
    }
    std::free(data);
  }

 private:
  // A copy must stay inside one live allocation of this device: a host pointer, or another
  // device's, is an error the real seam would turn into a crash or a silent wrong result.
  void check_inside(const void* p, std::size_t bytes, const char* what) {
    const auto* b = static_cast<const std::byte*>(p);
    std::lock_guard lock(mutex_);
    auto it = live_.upper_bound(const_cast<std::byte*>(b));
    const bool inside = it != live_.begin() && (--it, b >= it->first && b + bytes <= it->first + it->second);
    if (!inside) {
      std::fprintf(stderr, "%s on %s: %zu bytes at %p are not in this device's memory\n", what, name().c_str(), bytes, p);
      std::abort();
    }
  }
  tandem::backend::cpu::Context context_;
  std::mutex mutex_;
  std::map<std::byte*, std::size_t> live_;
};

REGISTER_DEVICE_KIND("sim", [](const DeviceName& name, int threads) { return std::make_unique<SimDevice>(name, threads); });

tandem::Dataset blobs(int64_t rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(rows * 8));
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    y[static_cast<std::size_t>(r)] = static_cast<int32_t>(r % 3);
    for (int64_t f = 0; f < 8; ++f) x[static_cast<std::size_t>(r * 8 + f)] = normal(gen) + (f % 3 == r % 3 ? 1.5f : 0.0f);
  }
  return {tandem::Tensor::from({rows, 8}, std::span<const float>(x)), tandem::Tensor::from({rows}, std::span<const int32_t>(y))};
}

std::unique_ptr<tandem::Sequential> make_model(dist::StrategyPtr strategy) {
  tandem::set_random_seed(3);
  auto model = std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({8}), tl::Dense(16, "relu"), tl::BatchNormalization(), tl::Dropout(0.25), tl::Dense(3)});
  model->compile({.optimizer = tandem::optimizers::Adam(1e-2),
                  .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}, .strategy = strategy});
  return model;
}

void check_bitwise_equal(const std::vector<tandem::Tensor>& a, const std::vector<tandem::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].bytes() == b[i].bytes());
    CHECK(std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) == 0);
  }
}

struct Results {
  std::vector<tandem::Tensor> weights;
  tandem::Logs evaluation;
  tandem::Tensor predictions;
  std::vector<tandem::Tensor> reloaded;  // weights after save_weights and load_weights into a fresh model
  tandem::Tensor loaded_predictions;     // of a whole model saved and loaded
};

Results run_everything(const std::string& device, const std::string& dir) {
  auto model = make_model(dist::Default(device));
  const auto data = blobs(100, 1);  // batches of 32: 3 full and one of 4 rows
  model->fit(data, {.epochs = 3, .batch_size = 32, .verbose = 0});
  Results r;
  r.weights = model->get_weights();
  r.evaluation = model->evaluate(blobs(40, 2), {.batch_size = 16, .verbose = 0});
  r.predictions = model->predict(blobs(10, 3).x(), {.batch_size = 4, .verbose = 0});
  model->save_weights(dir + "/w.weights.h5");
  model->save(dir + "/m.h5");
  auto fresh = make_model(dist::Default(device));
  fresh->predict(blobs(2, 4).x(), {.verbose = 0});  // builds it, with other weights
  fresh->load_weights(dir + "/w.weights.h5");
  r.reloaded = fresh->get_weights();
  auto loaded = tandem::load_model(dir + "/m.h5");
  r.loaded_predictions = loaded->predict(blobs(10, 3).x(), {.batch_size = 4, .verbose = 0});
  return r;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/tandem_device_XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  return tmpl;
}
}  // namespace

TEST_CASE("device: a second device kind runs fit, evaluate, predict, save and load with the cpu device's results, bit for bit") {
  const std::string dir = temp_dir();
  const Results cpu = run_everything("cpu:0", dir);
  const std::size_t in_before = stats().bytes_in, out_before = stats().bytes_out;
  const Results sim = run_everything("sim:0", dir);
  check_bitwise_equal(sim.weights, cpu.weights);
  for (const auto& [key, value] : cpu.evaluation) CHECK(sim.evaluation.at(key) == value);
  check_bitwise_equal({sim.predictions}, {cpu.predictions});
  check_bitwise_equal(sim.reloaded, cpu.weights);
  check_bitwise_equal({sim.loaded_predictions}, {cpu.predictions});
  check_bitwise_equal({cpu.loaded_predictions}, {cpu.predictions});
  // Everything crossed the seam through the sim device's copies.
  CHECK(stats().bytes_in > in_before);
  CHECK(stats().bytes_out > out_before);
  std::filesystem::remove_all(dir);
}

TEST_CASE("device: Mirrored over two sim devices equals Mirrored over two cpu devices") {
  const auto data = blobs(96, 5);
  auto on_cpu = make_model(dist::Mirrored({"cpu:0", "cpu:1"}));
  on_cpu->fit(data, {.epochs = 2, .batch_size = 24, .verbose = 0});
  auto on_sim = make_model(dist::Mirrored({"sim:0", "sim:1"}));
  on_sim->fit(data, {.epochs = 2, .batch_size = 24, .verbose = 0});
  check_bitwise_equal(on_sim->get_weights(), on_cpu->get_weights());
}

TEST_CASE("device: fit at two batch sizes, evaluate and predict create each device's threads once") {
  // Devices no other test uses, so they start without threads.
  for (const char* d : {"sim:7", "sim:8"}) REQUIRE_FALSE(tandem::runtime::has_device_threads(d));
  auto model = make_model(dist::Mirrored({"sim:7", "sim:8"}));
  // Seven compiled steps: train at 32, 4 (the partial batch) and 50 rows, test at 16 and 14, predict at 4 and 2.
  const auto calls = [&] {
    model->fit(blobs(100, 6), {.epochs = 2, .batch_size = 32, .verbose = 0});
    model->fit(blobs(100, 6), {.epochs = 1, .batch_size = 50, .verbose = 0});
    model->evaluate(blobs(30, 7), {.batch_size = 16, .verbose = 0});
    model->predict(blobs(10, 8).x(), {.batch_size = 4, .verbose = 0});
  };
  const uint64_t before = tandem::core::TaskThread::started();
  calls();
  const uint64_t first = tandem::core::TaskThread::started() - before;
  calls();  // the same steps again, already compiled, on devices that have their threads
  const uint64_t second = tandem::core::TaskThread::started() - before - first;
  // Each fit, evaluate and predict has a data prefetch thread of its own (4 per round); the first
  // round also made each device's worker and communication thread, and nothing else did.
  CHECK(second == 4);
  CHECK(first == second + 2 * 2);
  for (const char* d : {"sim:7", "sim:8"}) CHECK(tandem::runtime::has_device_threads(d));
}

TEST_CASE("device: names are parsed by kind; unknown kinds and a missing GPU backend are clear errors") {
  CHECK(tandem::backend::parse_device("cpu").str() == "cpu:0");
  CHECK(tandem::backend::parse_device("sim:12").str() == "sim:12");
  CHECK_THROWS_WITH_AS(tandem::backend::parse_device("tpu:0"), doctest::Contains("unknown device 'tpu:0'; expected \"cpu\", \"cpu:N\""),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::backend::parse_device("cpu:x"), doctest::Contains("unknown device 'cpu:x'"), tandem::ValueError);
  if (!TANDEM_WITH_CUDA)  // a CUDA build parses "gpu:0" (tests/test_cuda.cpp)
    CHECK_THROWS_WITH_AS(tandem::backend::parse_device("gpu:0"), doctest::Contains("no GPU backend"), tandem::ValueError);
}

TEST_CASE("device: an unknown name's error lists each accepted form once") {
  // This program registers "sim" besides "cpu" (and "gpu" in a CUDA build).
  const std::string gpu = TANDEM_WITH_CUDA ? "\"gpu\", " : "";
  CHECK_THROWS_WITH_AS(tandem::backend::parse_device("tpu:0"),
                       ("unknown device 'tpu:0'; expected \"cpu\", \"cpu:N\", \"sim\", \"sim:N\", " + gpu +
                        "\"gpu:N\" or \"gpu:N/L\" (logical GPU L of GPU N)").c_str(),
                       tandem::ValueError);
}

TEST_CASE("device: at each epoch end a layer's weights show the devices' values, and a callback's writes reach them") {
  auto model = make_model(dist::Default("sim:0"));
  const auto data = blobs(64, 9);
  std::vector<std::vector<tandem::Tensor>> at_epoch_end;
  auto dense = model->layers().back();
  model->fit(data, {.epochs = 2, .batch_size = 16, .verbose = 0,
                    .callbacks = {tandem::callbacks::Lambda([&](int epoch, const tandem::Logs&) {
                      at_epoch_end.push_back(dense->get_weights());
                      if (epoch == 1) {  // zero the last layer: the next fit must start from zeros
                        std::vector<tandem::Tensor> zeros;
                        for (const auto& w : dense->get_weights()) zeros.emplace_back(w.shape(), w.dtype());
                        dense->set_weights(zeros);
                      }
                    })}});
  REQUIRE(at_epoch_end.size() == 2);
  // After the first epoch the layer had trained: its values differ from the end of the second.
  CHECK(std::memcmp(at_epoch_end[0][0].raw(), at_epoch_end[1][0].raw(), at_epoch_end[0][0].bytes()) != 0);
  // The zeros written by the callback are what the model holds after fit, and what the devices
  // compute with: every prediction is the last layer's (zero) bias.
  const tandem::Tensor p = model->predict(data.x(), {.verbose = 0});
  for (int64_t i = 0; i < p.size(); ++i) CHECK(p.item(i) == 0.0);
}

TEST_CASE("device: a device that records steps replays them from the second step on, except programs that communicate") {
  const auto counts = [] {
    std::lock_guard lock(stats().mutex);
    return std::make_pair(stats().recordings, stats().replays);
  };
  const auto data = blobs(160, 2);  // 5 steps of 32
  {
    const auto [recorded, replayed] = counts();
    auto model = make_model(dist::Default("sim:4"));
    model->fit(data, {.epochs = 1, .batch_size = 32, .shuffle = false, .verbose = 0});
    const auto [recorded_after, replayed_after] = counts();
    CHECK(recorded_after - recorded == 1);  // the training step, recorded at its second step
    CHECK(replayed_after - replayed == 4);  // and replayed for steps 2 to 5
  }
  {
    const auto [recorded, replayed] = counts();
    auto model = make_model(dist::Mirrored({"sim:5", "sim:6"}));
    model->fit(data, {.epochs = 1, .batch_size = 32, .shuffle = false, .verbose = 0});
    CHECK(counts() == std::make_pair(recorded, replayed));
  }
}
