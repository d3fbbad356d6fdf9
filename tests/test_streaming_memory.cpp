// Data larger than memory: the CNN trains for one epoch on PNG files in WebDataset tar shards whose
// decoded size (what the in-memory dataset would hold, float32) is more than 4x the address space
// the training process may use (RLIMIT_AS, as `ulimit -v` sets it), and its peak RSS stays under
// that limit. The test program runs itself as the limited training process.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <tandem/data_sources.h>
#include <tandem/tandem.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "scratch_dir.h"

namespace tl = tandem::layers;
namespace td = tandem::datasets;
namespace fs = std::filesystem;
using tandem::Dataset;

// Sanitizers reserve terabytes of shadow address space, which no RLIMIT_AS allows.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

namespace {

const ScratchRoot scratch_root("test_streaming_memory");

// The limit on the training process's address space (virtual memory, not only resident: every
// thread stack, heap arena and mapped library counts; a build with CUDA maps about 0.7 GiB of CUDA
// libraries it never touches here, and the whole process measured 1.4 GiB at its peak), and the
// data set: Fashion-MNIST's first kSamples training images enlarged to kSize x kSize, 8-bit
// grayscale PNG. Decoded as float32 they are kSamples x kSize² x 4 bytes = 8.04 GiB, more than 4x
// the limit. The training process uses 2 compute and 2 decode threads wherever it runs, so its
// footprint does not grow with the machine's cores.
constexpr int64_t kLimitBytes = int64_t{2} << 30;  // 2 GiB
constexpr int64_t kSize = 224, kSamples = 43008, kBatch = 128, kPerShard = 2048;
constexpr int kDecodeThreads = 2;
constexpr int64_t kDecodedBytes = kSamples * (kSize * kSize * 4 + 4);  // x float32 (kSize, kSize, 1) + y int32

constexpr const char* kChildDir = "TANDEM_MEMORY_CHILD_DIR";  // set: this process is the limited child

// Counts the reads of each sample of the source it wraps, to show that the epoch read every
// sample once (and so trained on each).
class CountingSource : public tandem::Source {
 public:
  explicit CountingSource(std::shared_ptr<tandem::Source> source)
      : source_(std::move(source)), reads_(static_cast<std::size_t>(source_->size())) {}
  int64_t size() const override { return source_->size(); }
  tandem::SampleType sample_type() const override { return source_->sample_type(); }
  void read(int64_t index, std::span<std::byte* const> out) const override {
    source_->read(index, out);
    reads_[static_cast<std::size_t>(index)].fetch_add(1, std::memory_order_relaxed);
  }
  std::string describe() const override { return source_->describe(); }
  // Samples read exactly once, and reads in all.
  std::pair<int64_t, int64_t> counts() const {
    int64_t once = 0, all = 0;
    for (const auto& r : reads_) once += r.load() == 1, all += r.load();
    return {once, all};
  }

 private:
  std::shared_ptr<tandem::Source> source_;
  mutable std::vector<std::atomic<int64_t>> reads_;
};

std::vector<std::string> shards_in(const fs::path& dir) {
  std::vector<std::string> shards;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tar") shards.push_back(e.path().string());
  std::sort(shards.begin(), shards.end());
  return shards;
}

// A field of /proc/self/status in kB ("VmPeak", "VmHWM").
int64_t proc_status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  return -1;
}

// Runs this test program as the child, with RLIMIT_AS set between fork and exec (as a shell's
// `ulimit -v` does) and an environment that keeps the address space the process reserves (not
// what it uses) small: MALLOC_ARENA_MAX=2 (glibc reserves 64 MiB per thread arena otherwise),
// OPENBLAS_NUM_THREADS=1 (Tandem calls OpenBLAS on one thread at a time; its idle server threads
// would each reserve a 128 MiB buffer) and TANDEM_NUM_THREADS=2. Returns the wait status and the
// child's resource usage.
int run_limited_child(const fs::path& dir, rusage* usage) {
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {exe, "--test-case=streaming memory child: one epoch under RLIMIT_AS", "--no-version", "--minimal"};
  std::vector<std::string> env = {std::string(kChildDir) + "=" + dir.string(), "MALLOC_ARENA_MAX=2", "OPENBLAS_NUM_THREADS=1",
                                  "TANDEM_NUM_THREADS=2"};
  for (char** e = environ; *e; ++e) {
    const std::string var = *e;
    if (var.rfind("MALLOC_ARENA_MAX=", 0) && var.rfind("OPENBLAS_NUM_THREADS=", 0) && var.rfind("TANDEM_NUM_THREADS=", 0)) env.push_back(var);
  }
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  for (std::string& e : env) envp.push_back(e.data());
  argv.push_back(nullptr), envp.push_back(nullptr);
  const rlimit limit{static_cast<rlim_t>(kLimitBytes), static_cast<rlim_t>(kLimitBytes)};
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // only async-signal-safe calls until exec
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(126);
    ::execve(exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::wait4(pid, &status, 0, usage) == pid);
  return status;
}

}  // namespace

// Runs only as the child: one epoch of the CNN over the shards in DIR, read through a
// streamed dataset (kDecodeThreads decode threads), then DIR/report gets what it trained on and its
// memory: "<samples read once> <reads> <steps> <ru_maxrss kB> <VmPeak kB> <VmHWM kB> <seconds>".
TEST_CASE("streaming memory child: one epoch under RLIMIT_AS") {
  const char* dir = std::getenv(kChildDir);
  if (!dir) return;
  auto shards = std::make_shared<CountingSource>(td::tar_shards_source(
      shards_in(dir), {.image_height = kSize, .image_width = kSize, .color_mode = "grayscale", .num_classes = 10}));
  REQUIRE(shards->size() == kSamples);
  tandem::set_random_seed(1);
  // The benchmark's CNN (bench/bench_fashion_mnist.cpp) behind an average pooling that brings the
  // enlarged images back to 28 x 28: the epoch's cost is reading and decoding the files.
  tandem::Sequential model({tl::InputLayer({kSize, kSize, 1}), tl::AveragePooling2D(kSize / 28),
                            tl::Conv2D(32, 3, {.activation = "relu"}), tl::MaxPooling2D(2), tl::Conv2D(64, 3, {.activation = "relu"}),
                            tl::MaxPooling2D(2), tl::Flatten(), tl::Dense(128, "relu"), tl::Dense(10)});
  model.compile({.optimizer = tandem::optimizers::Adam(1e-3), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const auto start = std::chrono::steady_clock::now();
  model.fit(Dataset::from_source(shards, {.num_parallel_calls = kDecodeThreads}),
            {.epochs = 1, .batch_size = kBatch, .shuffle = true, .verbose = 0});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  const auto [once, reads] = shards->counts();
  std::ofstream(fs::path(dir) / "report") << once << " " << reads << " " << model.fit_progress().steps << " " << self.ru_maxrss << " "
                                          << proc_status_kb("VmPeak") << " " << proc_status_kb("VmHWM") << " " << seconds << "\n";
}

TEST_CASE("streaming memory: the CNN trains on PNG shards 4x larger than its address-space limit, peak RSS under the limit") {
  if (std::getenv(kChildDir)) return;
  if (kSanitized) {
    MESSAGE("skipped: a sanitizer's shadow memory cannot live under an RLIMIT_AS limit; the optimised build runs this test");
    return;
  }
  const fs::path data_dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data_dir)) {
    MESSAGE("skipped: " << data_dir.string() << " is absent (apt-get install dataset-fashion-mnist)");
    return;
  }
  const fs::path dir = scratch_root.fresh("shards");
  // A PNG of these images takes well under its raw 8-bit size (kSize² bytes); ask for that and
  // 512 MiB to spare.
  const auto needed = static_cast<std::uintmax_t>(kSamples * (kSize * kSize + 1024) + (int64_t{512} << 20));
  const std::uintmax_t available = fs::space(dir).available;
  if (available < needed) {
    MESSAGE("skipped: " << dir.string() << " has " << (available >> 20) << " MiB free; the shards need up to " << (needed >> 20) << " MiB");
    return;
  }

  // The shards: one writer per core (each its own shards), the images resized as they are stored.
  auto start = std::chrono::steady_clock::now();
  {
    const Dataset train = td::fashion_mnist(data_dir.string()).first.slice(0, kSamples);
    const int64_t writers = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 8);
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(writers));
    std::vector<std::thread> threads;
    for (int64_t w = 0; w < writers; ++w)
      threads.emplace_back([&, w] {
        try {
          const std::string pattern = (dir / ("train-" + std::to_string(w) + "-%04d.tar")).string();
          td::write_tar_shards(train.slice(kSamples * w / writers, kSamples * (w + 1) / writers), pattern,
                               {.samples_per_shard = kPerShard, .image_height = kSize, .image_width = kSize});
        } catch (...) {
          errors[static_cast<std::size_t>(w)] = std::current_exception();
        }
      });
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }
  std::uintmax_t on_disk = 0;
  for (const std::string& s : shards_in(dir)) on_disk += fs::file_size(s);
  const double write_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  start = std::chrono::steady_clock::now();
  rusage usage{};
  const int status = run_limited_child(dir, &usage);
  const double child_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_MESSAGE(WIFEXITED(status), "the training process was killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  REQUIRE_MESSAGE(WEXITSTATUS(status) == 0, "the training process exited with " << WEXITSTATUS(status));
  std::ifstream report(dir / "report");
  int64_t once = -1, reads = -1, steps = -1, maxrss_kb = -1, vmpeak_kb = -1, hwm_kb = -1;
  double fit_seconds = 0;
  REQUIRE(static_cast<bool>(report >> once >> reads >> steps >> maxrss_kb >> vmpeak_kb >> hwm_kb >> fit_seconds));

  const auto mib = [](double bytes) { return bytes / double(1 << 20); };
  MESSAGE(kSamples << " Fashion-MNIST images at " << kSize << "x" << kSize << ": " << mib(double(on_disk)) << " MiB of PNG in "
                   << shards_in(dir).size() << " shards (written in " << write_seconds << " s); decoded float32 "
                   << mib(double(kDecodedBytes)) << " MiB = " << double(kDecodedBytes) / double(kLimitBytes)
                   << "x the limit; the in-memory dataset is not attempted: it cannot fit");
  MESSAGE("RLIMIT_AS " << mib(double(kLimitBytes)) << " MiB: peak RSS " << mib(double(usage.ru_maxrss) * 1024) << " MiB, peak virtual "
                       << mib(double(vmpeak_kb) * 1024) << " MiB; " << steps << " steps, " << reads << " samples read, epoch "
                       << fit_seconds << " s (process " << child_seconds << " s)");
  CHECK(kDecodedBytes >= 4 * kLimitBytes);
  CHECK(once == kSamples);  // every sample read exactly once: the epoch trained on each
  CHECK(reads == kSamples);
  CHECK(steps == (kSamples + kBatch - 1) / kBatch);
  CHECK(usage.ru_maxrss * 1024 < kLimitBytes);  // the kernel's count, from wait4
  CHECK(maxrss_kb * 1024 < kLimitBytes);         // the child's own
  CHECK(vmpeak_kb * 1024 <= kLimitBytes);        // RLIMIT_AS held it there
}
