// ModelCheckpoint and BackupAndRestore: file names, when files are written, error messages, and
// exact resumption, in process and across real SIGKILLs of a training process (tests/resume_child).
#include <doctest/doctest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <tandem/tandem.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "callbacks/checkpoint_path.h"
#include "child_process.h"
#include "scratch_dir.h"

extern char** environ;

namespace fs = std::filesystem;
namespace tl = tandem::layers;
namespace cb = tandem::callbacks;
using tandem::Logs;
using tandem::Tensor;
using cb::detail::FormatArgs;
using cb::detail::format_path;
using cb::detail::python_float_repr;

namespace {

const ScratchRoot scratch_root("tandem_checkpoints");
fs::path scratch(const std::string& name) { return scratch_root.fresh(name); }

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> out;
  if (fs::exists(dir))
    for (const auto& entry : fs::directory_iterator(dir)) out.insert(entry.path().filename().string());
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

tandem::Dataset random_classification(int64_t rows, int64_t features, int classes, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(rows * features));
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    float s = 0;
    for (int64_t f = 0; f < features; ++f) s += (x[static_cast<std::size_t>(r * features + f)] = normal(gen)) * float(f + 1);
    y[static_cast<std::size_t>(r)] = static_cast<int32_t>(std::abs(static_cast<int>(s * 3)) % classes);
  }
  return {Tensor::from({rows, features}, std::span<const float>(x)), Tensor::from({rows}, std::span<const int32_t>(y))};
}

std::unique_ptr<tandem::Sequential> small_model(uint64_t seed = 3) {
  tandem::set_random_seed(seed);
  auto model = std::make_unique<tandem::Sequential>(
      std::vector<tandem::LayerRef>{tl::InputLayer({8}), tl::Dense(16, "relu"), tl::Dropout(0.2), tl::Dense(3)});
  model->compile({.optimizer = tandem::optimizers::Adam(1e-2),
                  .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  return model;
}

bool bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes() != b[i].bytes() || std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) != 0) return false;
  return true;
}

std::vector<Tensor> optimizer_state(const tandem::Model& model) {
  std::vector<Tensor> out;
  for (const auto& v : model.optimizer()->variables()) out.push_back(v->value().clone());
  return out;
}

// Captures std::cout while alive.
struct CaptureCout {
  std::ostringstream text;
  std::streambuf* old = std::cout.rdbuf(text.rdbuf());
  ~CaptureCout() { std::cout.rdbuf(old); }
};

// Throws from on_train_batch_end when the run reaches a training step: an interrupted fit.
class ThrowAtStep : public tandem::Callback {
 public:
  explicit ThrowAtStep(int64_t step) : step_(step) {}
  void on_train_batch_end(int64_t, const Logs&) override {
    if (model_->fit_progress().steps == step_) throw std::runtime_error("interrupted");
  }

 private:
  int64_t step_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// File names

TEST_CASE("checkpoints: file name templates format like Python's str.format") {
  const FormatArgs args = {{"epoch", {3, true}}, {"batch", {12, true}}, {"val_loss", {0.41234, false}},
                           {"accuracy", {0.87654321, false}}, {"loss", {-1.5, false}}, {"tiny", {1.25e-5, false}}};
  CHECK(format_path("ckpt/{epoch:02d}-{val_loss:.2f}.weights.h5", args) == "ckpt/03-0.41.weights.h5");
  CHECK(format_path("{epoch}_{batch}", args) == "3_12");
  CHECK(format_path("{epoch:03d}/{batch:5d}|", args) == "003/   12|");
  CHECK(format_path("{accuracy:.4f}", args) == "0.8765");
  CHECK(format_path("{val_loss:.3e}", args) == "4.123e-01");
  CHECK(format_path("{tiny:.2E}", args) == "1.25E-05");
  CHECK(format_path("{loss:.1f} {loss:+.2f} {accuracy:+.1f} {loss:08.3f}", args) == "-1.5 -1.50 +0.9 -001.500");
  CHECK(format_path("{accuracy:.1%}", args) == "87.7%");
  CHECK(format_path("{epoch:.2f}", args) == "3.00");  // ints take float formats, as in Python
  CHECK(format_path("{val_loss}", args) == "0.41234");
  CHECK(format_path("{tiny}", args) == "1.25e-05");
  CHECK(format_path("{val_loss:.3}", args) == "0.412");
  CHECK(format_path("{{epoch}} {epoch:<4d}| {epoch:*^5}", args) == "{epoch} 3   | **3**");
  CHECK(format_path("no fields.keras", args) == "no fields.keras");

  CHECK(python_float_repr(1.0) == "1.0");
  CHECK(python_float_repr(0.1) == "0.1");
  CHECK(python_float_repr(-2.5) == "-2.5");
  CHECK(python_float_repr(0.0001) == "0.0001");
  CHECK(python_float_repr(0.00001) == "1e-05");
  CHECK(python_float_repr(1e16) == "1e+16");
  CHECK(python_float_repr(1e15) == "1000000000000000.0");
  CHECK(python_float_repr(123.456) == "123.456");
  CHECK(python_float_repr(1.0 / 3.0) == "0.3333333333333333");
  CHECK(python_float_repr(0.0) == "0.0");
  CHECK(python_float_repr(-0.0) == "-0.0");
  CHECK(python_float_repr(std::nan("")) == "nan");
  CHECK(python_float_repr(-INFINITY) == "-inf");
}

TEST_CASE("checkpoints: malformed templates and missing fields are errors") {
  const FormatArgs args = {{"epoch", {1, true}}, {"loss", {0.5, false}}};
  CHECK_THROWS_WITH_AS(format_path("{val_loss:.2f}", args), "'val_loss'", tandem::ValueError);
  CHECK_THROWS_WITH_AS(format_path("{loss:d}", args), "Unknown format code 'd' for object of type 'float'", tandem::ValueError);
  CHECK_THROWS_WITH_AS(format_path("{epoch:.2d}", args), "Precision not allowed in integer format specifier", tandem::ValueError);
  CHECK_THROWS_WITH_AS(format_path("{loss:.2q}", args), "Invalid format specifier '.2q' for object of type 'float'", tandem::ValueError);
  CHECK_THROWS_WITH_AS(format_path("a}b", args), "Single '}' encountered in format string", tandem::ValueError);
  CHECK_THROWS_WITH_AS(format_path("{epoch", args), "Single '{' encountered in format string", tandem::ValueError);
  CHECK_THROWS_AS(format_path("{}", args), tandem::ValueError);
  CHECK_THROWS_AS(format_path("{loss.real}", args), tandem::ValueError);
}

// ---------------------------------------------------------------------------------------------
// ModelCheckpoint

TEST_CASE("checkpoints: ModelCheckpoint saves every epoch under a templated name") {
  const fs::path dir = scratch("every_epoch");
  auto model = small_model();
  const auto data = random_classification(200, 8, 3, 1);
  const auto checkpoint = cb::ModelCheckpoint((dir / "w-{epoch:02d}-{val_loss:.3f}.weights.h5").string(), {.save_weights_only = true});
  const auto history = model->fit(data, {.epochs = 3, .validation_split = 0.2, .verbose = 0, .callbacks = {checkpoint}});
  std::set<std::string> expected;
  char name[64];
  for (int e = 0; e < 3; ++e) {
    std::snprintf(name, sizeof name, "w-%02d-%.3f.weights.h5", e + 1, history.history.at("val_loss")[static_cast<std::size_t>(e)]);
    expected.insert(name);
  }
  CHECK(files_in(dir) == expected);

  // The last file holds the final weights and optimizer state.
  auto other = small_model(99);
  other->load_weights((dir / name).string());
  CHECK(bitwise_equal(other->get_weights(), model->get_weights()));
  CHECK(bitwise_equal(optimizer_state(*other), optimizer_state(*model)));
}

TEST_CASE("checkpoints: ModelCheckpoint saves the whole model with save_weights_only = false") {
  const fs::path dir = scratch("whole_model");
  auto model = small_model();
  const auto data = random_classification(200, 8, 3, 1);
  model->fit(data, {.epochs = 2, .verbose = 0, .callbacks = {cb::ModelCheckpoint((dir / "model-{epoch}.h5").string())}});
  CHECK(files_in(dir) == std::set<std::string>{"model-1.h5", "model-2.h5"});
  const auto loaded = tandem::load_model((dir / "model-2.h5").string());
  CHECK(bitwise_equal(loaded->get_weights(), model->get_weights()));
  CHECK(bitwise_equal(optimizer_state(*loaded), optimizer_state(*model)));
}

TEST_CASE("checkpoints: save_best_only keeps improvements, in min, max and auto modes") {
  const fs::path dir = scratch("best_only");
  auto model = small_model();
  model->predict(Tensor(tandem::Shape{1, 8}, tandem::DType::F32));  // built

  // Drives the callback's epoch ends with the given monitored values; returns the epochs saved.
  const auto run = [&](const std::string& monitor, const std::vector<double>& values, cb::ModelCheckpointOptions o) {
    const fs::path sub = dir / monitor / o.mode;
    fs::remove_all(sub);
    o.monitor = monitor;
    o.save_best_only = true;
    o.save_weights_only = true;
    auto c = cb::ModelCheckpoint((sub / "e{epoch}.weights.h5").string(), o);
    c->set_model(model.get());
    c->on_train_begin({});
    for (std::size_t e = 0; e < values.size(); ++e) {
      c->on_epoch_begin(static_cast<int>(e), {});
      c->on_epoch_end(static_cast<int>(e), {{"loss", 1.0}, {monitor, values[e]}});
    }
    return files_in(sub);
  };
  using S = std::set<std::string>;
  CHECK(run("val_loss", {0.5, 0.4, 0.45, 0.3, 0.3}, {}) == S{"e1.weights.h5", "e2.weights.h5", "e4.weights.h5"});
  CHECK(run("val_loss", {0.5, 0.4, 0.6, 0.3}, {.mode = "max"}) == S{"e1.weights.h5", "e3.weights.h5"});
  CHECK(run("val_accuracy", {0.5, 0.6, 0.55, 0.7}, {}) == S{"e1.weights.h5", "e2.weights.h5", "e4.weights.h5"});  // auto: max
  CHECK(run("val_accuracy", {0.5, 0.6, 0.4, 0.7}, {.mode = "min"}) == S{"e1.weights.h5", "e3.weights.h5"});
  CHECK(run("val_mae", {0.5, 0.6, 0.4}, {}) == S{"e1.weights.h5", "e3.weights.h5"});  // auto: min
  CHECK(run("val_loss", {0.5, 0.4, 0.3}, {.initial_value_threshold = 0.35}) == S{"e3.weights.h5"});

  // The messages Keras prints with verbose 1.
  CaptureCout out;
  const fs::path path = dir / "verbose" / "best.weights.h5";
  auto c = cb::ModelCheckpoint(path.string(), {.verbose = 1, .save_best_only = true, .save_weights_only = true});
  c->set_model(model.get());
  c->on_epoch_end(0, {{"val_loss", 0.41}});
  c->on_epoch_end(1, {{"val_loss", 0.5}});
  c->on_epoch_end(2, {{"val_loss", 0.39}});
  const std::string p = path.string();
  CHECK(out.text.str() == "\nEpoch 1: val_loss improved from None to 0.41000, saving model to " + p + "\n" +
                              "\nEpoch 1: finished saving model to " + p + "\n" +
                              "\nEpoch 2: val_loss did not improve from 0.41000\n" +
                              "\nEpoch 3: val_loss improved from 0.41000 to 0.39000, saving model to " + p + "\n" +
                              "\nEpoch 3: finished saving model to " + p + "\n");
}

TEST_CASE("checkpoints: save_freq in batches counts batches across epochs") {
  const fs::path dir = scratch("batches");
  auto model = small_model();
  const auto data = random_classification(300, 8, 3, 2);  // 10 batches per epoch, the last one partial
  const auto checkpoint = cb::ModelCheckpoint((dir / "e{epoch}-b{batch:02d}-{loss:.2f}.weights.h5").string(),
                                              {.save_weights_only = true, .save_freq = 4});
  std::vector<std::string> expected;
  struct Expect : tandem::Callback {
    std::vector<std::string>* names;
    int epoch = 0;
    int64_t seen = 0;
    void on_epoch_begin(int e, const Logs&) override { epoch = e; }
    void on_train_batch_end(int64_t b, const Logs& logs) override {
      if (++seen % 4) return;
      char name[64];
      std::snprintf(name, sizeof name, "e%d-b%02lld-%.2f.weights.h5", epoch + 1, static_cast<long long>(b + 1), logs.at("loss"));
      names->push_back(name);
    }
  };
  auto expect = std::make_shared<Expect>();
  expect->names = &expected;
  model->fit(data, {.epochs = 2, .verbose = 0, .callbacks = {checkpoint, expect}});
  REQUIRE(expected.size() == 5);  // batches 4, 8 of epoch 1; 2, 6, 10 of epoch 2
  CHECK(expected[2].rfind("e2-b02-", 0) == 0);
  CHECK(files_in(dir) == std::set<std::string>(expected.begin(), expected.end()));
}

TEST_CASE("checkpoints: ModelCheckpoint argument errors read like Keras's") {
  CHECK_THROWS_WITH_AS(cb::ModelCheckpoint("w.h5", {.save_weights_only = true}),
                       "When using `save_weights_only=True` in `ModelCheckpoint`, the filepath provided must end in "
                       "`.weights.h5` (Keras weights format). Received: filepath=w.h5",
                       tandem::ValueError);
  for (const char* path : {"model.txt", "model.weights.h5"})
    CHECK_THROWS_WITH_AS(cb::ModelCheckpoint(path),
                         ("The filepath provided must end in `.keras`, `.h5` or `.hdf5` (whole model, Model::save), or use "
                          "`save_weights_only=True` with a `.weights.h5` filepath. Received: filepath=" + std::string(path)).c_str(),
                         tandem::ValueError);
  CHECK_THROWS_WITH_AS(cb::ModelCheckpoint("w.weights.h5", {.save_weights_only = true, .mode = "maximum"}),
                       "ModelCheckpoint mode 'maximum' is unknown; expected \"auto\", \"min\" or \"max\"", tandem::ValueError);
  CHECK_THROWS_WITH_AS(cb::ModelCheckpoint("w.weights.h5", {.save_weights_only = true, .save_freq = "batch"}),
                       "Unrecognized save_freq: batch. Expected save_freq are 'epoch' or integer values", tandem::ValueError);
  CHECK_THROWS_AS(cb::ModelCheckpoint("w.weights.h5", {.save_weights_only = true, .save_freq = 0}), tandem::ValueError);
  CHECK_NOTHROW(cb::ModelCheckpoint("ckpt/{epoch:02d}.keras"));  // Keras's own default kind of file
  CHECK_THROWS_WITH_AS(cb::BackupAndRestore(""), "Empty `backup_dir` argument passed", tandem::ValueError);

  // A field the logs do not have fails when the file is about to be written.
  const fs::path dir = scratch("errors");
  auto model = small_model();
  const auto c = cb::ModelCheckpoint((dir / "{epoch}-{val_acc:.2f}.weights.h5").string(), {.save_weights_only = true});
  const std::string message =
      "Failed to format this callback filepath: \"" + (dir / "{epoch}-{val_acc:.2f}.weights.h5").string() + "\". Reason: 'val_acc'";
  CHECK_THROWS_WITH_AS(model->fit(random_classification(64, 8, 3, 4), {.epochs = 1, .verbose = 0, .callbacks = {c}}), message.c_str(),
                       tandem::ValueError);
}

// ---------------------------------------------------------------------------------------------
// BackupAndRestore in one process

namespace {

struct Outcome {
  std::vector<Tensor> weights, optimizer;
  tandem::History history;
};

// Trains small_model() for 3 epochs of 10 batches with BackupAndRestore; throws out of fit when the
// run reaches `interrupt_at` (0: never).
Outcome train(tandem::Model& model, const fs::path& dir, cb::SaveFreq freq, int64_t interrupt_at) {
  const auto data = random_classification(300, 8, 3, 5);
  std::vector<tandem::CallbackPtr> callbacks;
  if (interrupt_at) callbacks.push_back(std::make_shared<ThrowAtStep>(interrupt_at));
  callbacks.push_back(cb::BackupAndRestore(dir.string(), {.save_freq = freq}));
  Outcome o;
  o.history = model.fit(data, {.epochs = 3, .validation_split = 0.1, .verbose = 0, .callbacks = callbacks});
  o.weights = model.get_weights();
  o.optimizer = optimizer_state(model);
  return o;
}

void check_same(const Outcome& a, const Outcome& b) {
  CHECK(bitwise_equal(a.weights, b.weights));
  CHECK(bitwise_equal(a.optimizer, b.optimizer));
  CHECK(a.history.epoch == b.history.epoch);
  CHECK(a.history.history == b.history.history);  // exact doubles
}

}  // namespace

TEST_CASE("checkpoints: BackupAndRestore resumes an interrupted fit exactly, mid-epoch or at an epoch end") {
  const fs::path dir = scratch("in_process") / "backup";
  const Outcome reference = train(*small_model(), dir, 4, 0);
  CHECK_FALSE(fs::exists(dir));  // removed when fit finished
  REQUIRE(reference.history.epoch == std::vector<int>{0, 1, 2});

  SUBCASE("every 4 batches, a new model object (as a restarted program)") {
    CHECK_THROWS_WITH(train(*small_model(), dir, 4, 14), "interrupted");  // epoch 2, batch 4; last backup after step 12
    CHECK(files_in(dir) == std::set<std::string>{"backup-a.weights.h5", "backup-b.weights.h5", "training_state.json"});
    const auto state = nlohmann::json::parse(read_file(dir / "training_state.json"));
    CHECK(state["epoch"] == 1);
    CHECK(state["batch"] == 3);  // 9 batches per epoch
    CHECK(state["steps"] == 12);
    CHECK(state["steps_per_epoch"] == 9);
    CHECK(state["history_epochs"] == nlohmann::json::array({0}));
    CHECK(state["history"]["val_loss"][0] == reference.history.history.at("val_loss")[0]);
    CHECK(fs::exists(dir / state["weights"].get<std::string>()));
    check_same(train(*small_model(), dir, 4, 0), reference);
  }
  SUBCASE("every 4 batches, the same model object fitted again") {
    auto model = small_model();
    CHECK_THROWS(train(*model, dir, 4, 25));
    check_same(train(*model, dir, 4, 0), reference);
  }
  SUBCASE("several interruptions in a row") {
    for (int64_t at : {3, 9, 17, 24, 27}) CHECK_THROWS(train(*small_model(), dir, 4, at));
    check_same(train(*small_model(), dir, 4, 0), reference);
  }
  SUBCASE("the temporaries a killed process leaves are removed with the backup") {
    // A process killed while checking the folder is writable, or while writing the state or a
    // weights file, leaves these; the folder must still go when training finishes.
    CHECK_THROWS(train(*small_model(), dir, 4, 14));
    for (const char* leftover : {".tandem-write-check-Ab3xYz", ".training_state.json.tmp-Q1w2E3", ".backup-a.weights.h5.tmp-zzzzzz"})
      std::ofstream(dir / leftover) << "partial";
    std::ofstream(dir / "notes.txt") << "the user's";
    check_same(train(*small_model(), dir, 4, 0), reference);
    CHECK(files_in(dir) == std::set<std::string>{"notes.txt"});  // a file not ours stays, and so does its folder
    fs::remove(dir / "notes.txt");
    CHECK_THROWS(train(*small_model(), dir, 4, 14));
    std::ofstream(dir / ".tandem-write-check-Ab3xYz") << "";
    check_same(train(*small_model(), dir, 4, 0), reference);
  }
  SUBCASE("at epoch ends") {
    CHECK_THROWS(train(*small_model(), dir, "epoch", 22));  // backup after epoch 2 (step 18)
    const auto state = nlohmann::json::parse(read_file(dir / "training_state.json"));
    CHECK(state["epoch"] == 2);
    CHECK(state["batch"] == 0);
    check_same(train(*small_model(), dir, "epoch", 0), reference);
  }
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("checkpoints: BackupAndRestore keeps the backup with delete_checkpoint = false and refuses a mismatched one") {
  const fs::path dir = scratch("keep") / "backup";
  auto model = small_model();
  const auto data = random_classification(300, 8, 3, 5);
  model->fit(data, {.epochs = 2, .verbose = 0, .callbacks = {cb::BackupAndRestore(dir.string(), {.delete_checkpoint = false})}});
  REQUIRE(fs::exists(dir / "training_state.json"));
  CHECK(nlohmann::json::parse(read_file(dir / "training_state.json"))["epoch"] == 2);

  // Fitting again with the finished backup trains nothing more: History is the restored one.
  const auto before = model->get_weights();
  const auto again = model->fit(data, {.epochs = 2, .verbose = 0, .callbacks = {cb::BackupAndRestore(dir.string(), {.delete_checkpoint = false})}});
  CHECK(again.epoch == std::vector<int>{0, 1});
  CHECK(bitwise_equal(model->get_weights(), before));

  // Another batch size means other batches: the backup cannot be continued.
  CHECK_THROWS_WITH_AS(model->fit(data, {.epochs = 2, .batch_size = 64, .verbose = 0, .callbacks = {cb::BackupAndRestore(dir.string())}}),
                       doctest::Contains("the backup was taken by a fit with 10 batches per epoch, this fit has 5"), tandem::ValueError);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// BackupAndRestore across killed processes

namespace {

// Runs resume_child with these arguments. With kill_after >= 0 seconds, sends it SIGKILL then
// unless it has exited. Returns the wait status.
int run_child(const std::vector<std::string>& args, double kill_after = -1) { return run_child_process(RESUME_CHILD, args, {}, kill_after); }

bool killed(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }
bool finished(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

}  // namespace

TEST_CASE("checkpoints: training killed with SIGKILL and restarted ends bitwise identical to an uninterrupted run") {
  // resume_child: 1800 training rows in batches of 32 (57 per epoch, the last of 8 rows), 4 epochs
  // (228 steps), a backup every 7 steps.
  constexpr int64_t kStepsPerEpoch = 57, kSteps = 4 * kStepsPerEpoch;
  const fs::path root = scratch("killed");
  const fs::path reference_out = root / "reference.out";
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(finished(run_child({(root / "reference_backup").string(), reference_out.string()})));
  const double run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_FALSE(fs::exists(root / "reference_backup"));
  const std::string reference = read_file(reference_out);
  REQUIRE(reference.find("\nhistory 0 1 2 3\n") != std::string::npos);

  const unsigned seed = std::random_device{}();
  INFO("kill points drawn with seed " << seed);
  std::mt19937 gen(seed);
  const auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };

  SUBCASE("the process kills itself at chosen steps") {
    // Before the first backup; mid-epoch; the last batch of an epoch (before validation and the
    // epoch's end); just before a backup would be written; mid-epoch later; the very last step.
    const std::vector<int64_t> points = {pick(1, 6), pick(8, 55), kStepsPerEpoch, 7 * pick(9, 16), pick(115, 170), pick(172, 227), kSteps};
    const fs::path backup = root / "self_backup", out = root / "self.out";
    for (int64_t step : points) {
      INFO("killed at step " << step);
      CHECK(killed(run_child({backup.string(), out.string(), std::to_string(step)})));
      CHECK(fs::exists(backup / "training_state.json") == (step >= 7));
    }
    REQUIRE(finished(run_child({backup.string(), out.string()})));
    CHECK(read_file(out) == reference);
    CHECK_FALSE(fs::exists(backup));
  }

  SUBCASE("another process kills it after random delays") {
    const fs::path backup = root / "external_backup", out = root / "external.out";
    int kills = 0;
    bool done = false;
    for (int attempt = 0; attempt < 6 && !done; ++attempt) {
      const double delay = std::uniform_real_distribution<double>(0.15, 0.6)(gen) * run_seconds;
      INFO("attempt " << attempt << ", killed after " << delay << " s");
      const int status = run_child({backup.string(), out.string()}, delay);
      done = finished(status);
      if (done) break;
      REQUIRE(killed(status));
      ++kills;
    }
    MESSAGE("killed " << kills << " times at random moments");
    if (!done) REQUIRE(finished(run_child({backup.string(), out.string()})));
    CHECK(read_file(out) == reference);
    CHECK_FALSE(fs::exists(backup));
  }
  fs::remove_all(root);
}

TEST_CASE("checkpoints: under Pipeline, a 2×2 ModelSplit mesh and sharded Mirrored, training killed with SIGKILL and restarted ends bitwise identical to an uninterrupted run") {
  // The same run as above on two pipeline stages with 2 micro-batches, with its first two layers
  // split over a 2×2 mesh, and data parallel with every weight's rows split over 2 devices: the
  // backups hold the logical weights and optimizer state, gathered from the devices.
  for (const char* strategy : {"pipeline", "mesh", "sharded"}) {
    INFO(strategy);
    ::setenv("RESUME_CHILD_STRATEGY", strategy, 1);
    const fs::path root = scratch(std::string("killed_") + strategy);
    REQUIRE(finished(run_child({(root / "reference_backup").string(), (root / "reference.out").string()})));
    const std::string reference = read_file(root / "reference.out");
    const fs::path backup = root / "backup", out = root / "resumed.out";
    for (int64_t step : {5, 40, 57, 119, 200}) {
      INFO("killed at step " << step);
      CHECK(killed(run_child({backup.string(), out.string(), std::to_string(step)})));
    }
    REQUIRE(finished(run_child({backup.string(), out.string()})));
    ::unsetenv("RESUME_CHILD_STRATEGY");
    CHECK(read_file(out) == reference);
    fs::remove_all(root);
  }
}
