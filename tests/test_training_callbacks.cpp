// EarlyStopping, ReduceLROnPlateau, LearningRateScheduler and CSVLogger: each against the sequence
// Keras 3's rules give by hand for a scripted sequence of monitored values, and in fit, where a
// learning rate a callback sets must reach every device (Default and Mirrored).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tandem/tandem.h>

#include "strategy_helpers.h"
#include "run_command.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
namespace cb = tandem::callbacks;
using tandem::Logs;
using tandem::Tensor;

namespace {

std::unique_ptr<tandem::Sequential> small_model(double learning_rate, tandem::distribute::StrategyPtr strategy = nullptr) {
  tandem::set_random_seed(3);
  auto model = std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{tl::InputLayer({20}), tl::Dense(8, "relu"), tl::Dense(5)});
  tandem::CompileOptions options{.optimizer = tandem::optimizers::SGD(learning_rate),
                                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}};
  if (strategy) options.strategy = strategy;
  model->compile(options);
  return model;
}

// Feeds `values` of `monitor` to the callback's epoch ends as fit would; returns the epoch after
// which it set stop_training (-1 if it never did).
int stopping_epoch(const tandem::CallbackPtr& callback, tandem::Model& model, const std::string& monitor, const std::vector<double>& values) {
  callback->set_model(&model);
  model.stop_training = false;
  callback->on_train_begin({});
  for (std::size_t e = 0; e < values.size(); ++e) {
    callback->on_epoch_end(static_cast<int>(e), {{monitor, values[e]}});
    if (model.stop_training) return static_cast<int>(e);
  }
  return -1;
}

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int64_t j = 0; j < a[i].size(); ++j)
      if (a[i].item(j) != b[i].item(j)) return false;
  return true;
}

}  // namespace

TEST_CASE("EarlyStopping stops at the epoch Keras's rules give for scripted values") {
  auto model = small_model(0.1);
  // min mode, patience 2: best 1.0, then 0.9; 0.95 and 0.92 wait 1 and 2 -> stop after epoch 3.
  CHECK(stopping_epoch(cb::EarlyStopping({.monitor = "val_loss", .patience = 2}), *model, "val_loss", {1.0, 0.9, 0.95, 0.92, 0.8}) == 3);
  // An improvement must exceed min_delta: 0.85 is not 0.2 below 1.0.
  CHECK(stopping_epoch(cb::EarlyStopping({.monitor = "val_loss", .min_delta = 0.2, .patience = 1}), *model, "val_loss", {1.0, 0.85, 0.7}) == 1);
  // Patience 0 never stops at the first epoch, and stops at the first value that is no better.
  CHECK(stopping_epoch(cb::EarlyStopping({.monitor = "loss"}), *model, "loss", {1.0, 1.0}) == 1);
  // A baseline: improvements that do not beat it keep the wait growing, but an improving epoch
  // never stops; the first epoch that does not improve (wait 4 >= 2) does.
  CHECK(stopping_epoch(cb::EarlyStopping({.monitor = "val_loss", .patience = 2, .baseline = 0.5}), *model, "val_loss",
                       {1.0, 0.9, 0.8, 0.85}) == 3);
  // start_from_epoch: epochs 0 and 1 are not watched; 3.0 at epoch 3 is no better than epoch 2's.
  CHECK(stopping_epoch(cb::EarlyStopping({.monitor = "loss", .patience = 1, .start_from_epoch = 2}), *model, "loss", {5, 4, 3, 3, 3}) == 3);
  // auto mode maximises accuracy-like names.
  CHECK(stopping_epoch(cb::EarlyStopping({.monitor = "val_accuracy", .patience = 2}), *model, "val_accuracy", {0.5, 0.6, 0.55, 0.58}) == 3);
  CHECK(stopping_epoch(cb::EarlyStopping({.monitor = "val_accuracy", .patience = 2}), *model, "val_accuracy", {0.5, 0.6, 0.7, 0.8}) == -1);
  CHECK_THROWS_WITH_AS(cb::EarlyStopping({.mode = "lowest"}), "EarlyStopping mode 'lowest' is unknown; expected \"auto\", \"min\" or \"max\"",
                       tandem::ValueError);
}

TEST_CASE("EarlyStopping restore_best_weights puts back the weights of the best epoch when fit ends") {
  auto model = small_model(0.1);
  model->build({20});
  auto callback = cb::EarlyStopping({.monitor = "val_loss", .patience = 10, .restore_best_weights = true});
  callback->set_model(model.get());
  callback->on_train_begin({});
  const std::vector<double> losses{3.0, 1.0, 2.0, 4.0};  // best: epoch 1
  std::vector<std::vector<Tensor>> at_epoch;
  for (std::size_t e = 0; e < losses.size(); ++e) {
    std::vector<Tensor> w = model->get_weights();
    for (Tensor& t : w)
      for (float& v : t.values<float>()) v = static_cast<float>(e) + 0.5f;
    model->set_weights(w);
    at_epoch.push_back(w);
    callback->on_epoch_end(static_cast<int>(e), {{"val_loss", losses[e]}});
  }
  callback->on_train_end({});
  CHECK(same(model->get_weights(), at_epoch[1]));
}

TEST_CASE("EarlyStopping in fit: a loss that cannot improve (learning rate 0) stops after patience epochs") {
  auto model = small_model(0.0);
  const tandem::History h = model->fit(blobs(64, 20, 5), {.epochs = 10, .batch_size = 16, .shuffle = false, .verbose = 0,
                                                          .callbacks = {cb::EarlyStopping({.monitor = "loss", .patience = 2})}});
  CHECK(h.epoch == std::vector<int>{0, 1, 2});
}

TEST_CASE("ReduceLROnPlateau follows Keras's rules for patience, cooldown and min_lr") {
  auto model = small_model(0.1);
  auto callback = cb::ReduceLROnPlateau({.monitor = "val_loss", .factor = 0.5, .patience = 1, .cooldown = 2, .min_lr = 0.02});
  callback->set_model(model.get());
  callback->on_train_begin({});
  // A value that never improves: a reduction after epoch 1, two cooldown epochs (the second one's
  // wait already counts), a reduction after 3, then 5 clamps at min_lr, then nothing is above it.
  const std::vector<double> expected{0.1, 0.05, 0.05, 0.025, 0.025, 0.02, 0.02, 0.02};
  for (std::size_t e = 0; e < expected.size(); ++e) {
    callback->on_epoch_end(static_cast<int>(e), {{"val_loss", 1.0}});
    CHECK(model->optimizer()->learning_rate() == static_cast<double>(static_cast<float>(expected[e])));
  }
  CHECK_THROWS_WITH_AS(cb::ReduceLROnPlateau({.factor = 1.0}), doctest::Contains("does not support a factor >= 1.0"), tandem::ValueError);
}

TEST_CASE("A learning rate set by a callback during fit reaches every device") {
  for (int devices : {1, 2}) {
    INFO(devices << " device(s)");
    {  // ReduceLROnPlateau
      // In max mode a falling loss never improves after epoch 0: the rate becomes 0 after epoch 1,
      // so epochs 2 and 3 leave the weights as epoch 1 left them.
      auto model = small_model(0.1, devices == 1 ? nullptr : tandem::distribute::Mirrored(cpus(devices)));
      std::vector<std::vector<Tensor>> weights;
      auto record = cb::Lambda([&](int, const Logs&) { weights.push_back(model->get_weights()); });
      model->fit(blobs(64, 20, 5), {.epochs = 4, .batch_size = 16, .verbose = 0,
                                    .callbacks = {cb::ReduceLROnPlateau({.monitor = "loss", .factor = 0.0, .patience = 0, .mode = "max"}), record}});
      REQUIRE(weights.size() == 4);
      CHECK_FALSE(same(weights[0], weights[1]));
      CHECK(same(weights[1], weights[2]));
      CHECK(same(weights[2], weights[3]));
      CHECK(model->optimizer()->learning_rate() == 0.0);
    }
    {  // LearningRateScheduler
      auto model = small_model(0.1, devices == 1 ? nullptr : tandem::distribute::Mirrored(cpus(devices)));
      std::vector<double> rates;
      std::vector<std::vector<Tensor>> weights;
      auto record = cb::Lambda([&](int, const Logs&) {
        rates.push_back(model->optimizer()->learning_rate());
        weights.push_back(model->get_weights());
      });
      // 0 for the first epoch (set before its first step: the weights must not move), then
      // 0.1 * 0.5^epoch, then 0 again for the fourth epoch.
      auto schedule = cb::LearningRateScheduler([](int epoch, double) { return epoch == 0 || epoch == 3 ? 0.0 : 0.1 * std::pow(0.5, epoch); });
      model->build({20});
      const std::vector<Tensor> initial = model->get_weights();
      model->fit(blobs(64, 20, 5), {.epochs = 4, .batch_size = 16, .verbose = 0, .callbacks = {schedule, record}});
      REQUIRE(rates.size() == 4);
      CHECK(rates[0] == 0.0);
      for (int e = 1; e < 3; ++e) CHECK(rates[e] == static_cast<double>(static_cast<float>(0.1 * std::pow(0.5, e))));
      CHECK(rates[3] == 0.0);
      CHECK(same(initial, weights[0]));
      CHECK_FALSE(same(weights[0], weights[1]));
      CHECK_FALSE(same(weights[1], weights[2]));
      CHECK(same(weights[2], weights[3]));
    }
  }
}

TEST_CASE("CSVLogger writes one row per epoch with History's values, and appends without a second header") {
  const ScratchRoot scratch_root("tandem_csv_logger");
  const fs::path dir = scratch_root.fresh("log");
  const std::string path = (dir / "log.csv").string();
  auto model = small_model(0.1);
  const tandem::Dataset data = blobs(64, 20, 5);
  const tandem::History h = model->fit(data, {.epochs = 3, .batch_size = 16, .validation_split = 0.25, .verbose = 0,
                                              .callbacks = {cb::CSVLogger(path)}});
  model->fit(data, {.epochs = 5, .batch_size = 16, .validation_split = 0.25, .verbose = 0,
                    .callbacks = {cb::CSVLogger(path, {.append = true})}, .initial_epoch = 3});
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 6);
  CHECK(lines[0] == "epoch,accuracy,loss,val_accuracy,val_loss");
  for (int e = 0; e < 3; ++e) {
    std::istringstream row(lines[1 + e]);
    std::string cell;
    std::getline(row, cell, ',');
    CHECK(cell == std::to_string(e));
    for (const char* key : {"accuracy", "loss", "val_accuracy", "val_loss"}) {
      std::getline(row, cell, ',');
      CHECK(std::stod(cell) == h.history.at(key)[e]);  // Python's repr of a float reads back exactly
    }
  }
  CHECK(lines[4].rfind("3,", 0) == 0);
  CHECK(lines[5].rfind("4,", 0) == 0);
}

TEST_CASE("ReduceLROnPlateau and LearningRateScheduler log learning_rate at each epoch end as Keras 3's do: History, CSVLogger and the report have it") {
  const ScratchRoot scratch_root("tandem_learning_rate_logs");
  const fs::path dir = scratch_root.fresh("lr");
  const tandem::Dataset data = blobs(64, 20, 5);
  auto as_float = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  {  // ReduceLROnPlateau: the rate each epoch trained with (logged before that epoch's reduction)
    auto model = small_model(0.1);
    const std::string csv = (dir / "log.csv").string(), svg = (dir / "report.svg").string();
    // No epoch after the first improves by 1e9, so each later epoch halves the rate.
    auto reduce = cb::ReduceLROnPlateau({.monitor = "loss", .factor = 0.5, .patience = 0, .min_delta = 1e9});
    const tandem::History h = model->fit(data, {.epochs = 4, .batch_size = 16, .verbose = 0, .callbacks = {cb::CSVLogger(csv), reduce}});
    REQUIRE(h.history.count("learning_rate"));
    CHECK(h.history.at("learning_rate") == std::vector<double>{as_float(0.1), as_float(0.1), as_float(0.05), as_float(0.025)});
    std::ifstream in(csv);
    std::string header, row;
    std::getline(in, header);
    CHECK(header == "epoch,accuracy,learning_rate,loss");
    for (int e = 0; e < 4; ++e) {
      std::getline(in, row);
      CHECK(std::stod(row.substr(row.find(',', row.find(',') + 1) + 1)) == h.history.at("learning_rate")[e]);
    }
    tandem::plot_history(h, svg);
    std::ifstream report(svg);
    const std::string text((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
    CHECK(text.find("<g class=\"chart\" data-family=\"learning_rate\">") != std::string::npos);
  }
  {  // LearningRateScheduler: the rate it set when the epoch began
    auto model = small_model(0.1);
    const tandem::History h = model->fit(
        data, {.epochs = 3, .batch_size = 16, .verbose = 0, .callbacks = {cb::LearningRateScheduler([](int epoch, double) { return 0.1 / (epoch + 1); })}});
    CHECK(h.history.at("learning_rate") == std::vector<double>{as_float(0.1), as_float(0.05), as_float(0.1 / 3)});
  }
  {  // A schedule's rate for the next step: 4 steps per epoch halve it
    tandem::set_random_seed(3);
    tandem::Sequential model({tl::InputLayer({20}), tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::SGD(tandem::schedules::ExponentialDecay(0.1, 4, 0.5)),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    const tandem::History h = model.fit(data, {.epochs = 2, .batch_size = 16, .verbose = 0, .callbacks = {cb::ReduceLROnPlateau({.monitor = "loss"})}});
    CHECK(h.history.at("learning_rate") == std::vector<double>{as_float(0.05), as_float(0.025)});
  }
  {  // Without them Keras 3's fit logs no learning_rate, and neither does this one
    auto model = small_model(0.1);
    CHECK_FALSE(model->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0}).history.count("learning_rate"));
  }
}

TEST_CASE("CSVLogger creates the folders its file goes in, and names a folder it cannot create") {
  const ScratchRoot scratch_root("tandem_csv_logger_folders");
  const fs::path dir = scratch_root.fresh("runs");
  const std::string path = (dir / "run1" / "logs" / "log.csv").string();
  auto model = small_model(0.1);
  const tandem::Dataset data = blobs(64, 20, 5);
  model->fit(data, {.epochs = 2, .batch_size = 16, .verbose = 0, .callbacks = {cb::CSVLogger(path)}});
  std::ifstream in(path);
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  CHECK(lines == 3);
  std::ofstream(dir / "file") << "a file, not a folder\n";
  const std::string blocked = (dir / "file" / "log.csv").string();
  CHECK_THROWS_WITH_AS(model->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0, .callbacks = {cb::CSVLogger(blocked)}}),
                       ("CSVLogger: cannot create the folder " + (dir / "file").string() + ": Not a directory").c_str(), tandem::Error);
}

TEST_CASE("BackupAndRestore finds a folder it cannot write when fit starts, before any epoch's work") {
  const ScratchRoot scratch_root("tandem_backup_folder");
  const fs::path dir = scratch_root.fresh("b");
  auto model = small_model(0.1);
  const tandem::Dataset data = blobs(64, 20, 5);
  int epochs = 0;
  auto count = cb::Lambda([&](int, const Logs&) { ++epochs; });
  auto fit = [&](const std::string& backup_dir) {
    model->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0, .callbacks = {count, cb::BackupAndRestore(backup_dir, {.delete_checkpoint = false})}});
  };
  // Paths that fail for root too: a folder under a regular file, and /proc, where no file can be made.
  std::ofstream(dir / "file") << "a file, not a folder\n";
  const std::string under_file = (dir / "file" / "backup").string();
  CHECK_THROWS_WITH_AS(fit(under_file), ("BackupAndRestore (backup_dir): cannot create the folder " + under_file + ": Not a directory").c_str(),
                       tandem::Error);
  CHECK_THROWS_WITH_AS(fit("/proc"), doctest::Contains("BackupAndRestore (backup_dir): cannot write in the folder /proc: "), tandem::Error);
  CHECK(epochs == 0);
  // A folder that can be written is created at once, and the probe file leaves nothing behind.
  const fs::path fresh = dir / "new" / "backup";
  fit(fresh.string());
  CHECK(epochs == 1);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fresh)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"backup-a.weights.h5", "training_state.json"});
}

TEST_CASE("BackupAndRestore refuses a folder whose permissions forbid writing when fit starts") {
  if (::geteuid() == 0) {  // root writes whatever the permission bits say
    MESSAGE("skipped: running as root, where permission bits do not stop writes");
    return;
  }
  const ScratchRoot scratch_root("tandem_backup_permissions");
  const fs::path dir = scratch_root.fresh("read_only");
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  auto model = small_model(0.1);
  int epochs = 0;
  auto count = cb::Lambda([&](int, const Logs&) { ++epochs; });
  CHECK_THROWS_WITH_AS(model->fit(blobs(64, 20, 5), {.epochs = 1, .batch_size = 16, .verbose = 0, .callbacks = {count, cb::BackupAndRestore(dir.string())}}),
                       ("BackupAndRestore (backup_dir): cannot write in the folder " + dir.string() + ": Permission denied").c_str(), tandem::Error);
  CHECK(epochs == 0);
  fs::permissions(dir, fs::perms::owner_all);  // so the scratch folder can be removed
}

TEST_CASE("BackupAndRestore: a training state that cannot be written for lack of space names the system's reason and keeps the last one") {
  // full_disk_child writes a backup under a file size limit that its weights file fits and its
  // training state does not: the write fails as it would on a full disk (EFBIG there, ENOSPC here).
  const ScratchRoot scratch_root("tandem_full_disk_state");
  const fs::path dir = scratch_root.fresh("d");
  const CommandResult child = run_command(std::string(FULL_DISK_CHILD) + " --training-state " + dir.string());
  const std::string& output = child.output;
  INFO(output);
  REQUIRE(child.exited);
  CHECK(child.exit_code == 0);
  const fs::path state = dir / "backup" / "training_state.json";
  CHECK(output.find("refused: BackupAndRestore: cannot write the training state: " + state.string() + ": not saved (the file there is unchanged): ") !=
        std::string::npos);
  CHECK(output.find(" bytes written): File too large") != std::string::npos);
  CHECK(output.find("the training state is unchanged") != std::string::npos);
  std::vector<std::string> names;  // no temporary is left behind
  for (const auto& e : fs::directory_iterator(dir / "backup")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"backup-a.weights.h5", "backup-b.weights.h5", "training_state.json"});
}
