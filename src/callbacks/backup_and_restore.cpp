// BackupAndRestore (keras/src/callbacks/backup_and_restore.py), resuming at the exact batch.
//
// The backup folder holds a training-state file and the weights file it names:
//
//   training_state.json     where fit() stood (FitProgress), History so far, and "weights"
//   backup-a.weights.h5     weights and optimizer state (Keras 3 format), written by save_weights
//   backup-b.weights.h5     the other of the two: each backup writes the one the state does not name
//
// A backup writes its weights file (atomically), then replaces the state file (atomically). The
// state file therefore always names a complete weights file that matches it: a process killed at
// any point leaves either the previous backup or the new one.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "io/atomic_file.h"
#include "tandem/callbacks.h"
#include "tandem/distribute.h"
#include "tandem/errors.h"
#include "tandem/model.h"

namespace tandem::callbacks {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kStateFile = "training_state.json";
constexpr const char* kWeightsFiles[2] = {"backup-a.weights.h5", "backup-b.weights.h5"};
constexpr const char* kFormat = "tandem.BackupAndRestore";
constexpr int kVersion = 1;

// JSON has no NaN or infinity; a diverged loss is still a value to restore.
json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double number(const json& j) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    throw ValueError("not a number: \"" + s + "\"");
  }
  return j.get<double>();
}

json numbers(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(number(v));
  return out;
}

std::vector<double> numbers(const json& j) {
  std::vector<double> out;
  for (const json& v : j) out.push_back(number(v));
  return out;
}

// A temporary left by an atomic write of one of our files that was interrupted: ".NAME.tmp-XXXXXX",
// or by the check that the folder is writable.
bool our_temporary(std::string_view file) {
  if (io::is_write_probe(file)) return true;
  if (!file.starts_with('.')) return false;
  file.remove_prefix(1);
  for (std::string_view ours : {kStateFile, kWeightsFiles[0], kWeightsFiles[1]})
    if (file.starts_with(ours) && file.substr(ours.size()).starts_with(".tmp-")) return true;
  return false;
}

class BackupAndRestoreCallback final : public Callback {
 public:
  BackupAndRestoreCallback(std::string dir, BackupAndRestoreOptions options) : dir_(std::move(dir)), o_(std::move(options)) {
    if (dir_.empty()) throw ValueError("Empty `backup_dir` argument passed");
  }

  void on_train_begin(const Logs&) override {
    history_epochs_.clear();
    history_.clear();
    weights_file_.clear();
    // Every worker restores from the chief's backup; only the chief writes and removes it.
    writer_ = distribute::this_worker().chief();
    if (writer_) {
      // A folder that cannot be written fails here, not at the first backup after an epoch's work.
      io::check_writable_folder(dir_, "BackupAndRestore (backup_dir)");
      remove_temporaries();
    }
    if (fs::exists(state_path())) restore();
  }

  void on_train_batch_end(int64_t, const Logs&) override {
    if (o_.save_freq.per_epoch()) return;
    const FitProgress& at = model_->fit_progress();
    if (at.steps % o_.save_freq.batches != 0) return;
    if (writer_) backup(at);
    else model_->get_weights();  // the chief's read of the weights may need every worker's (Strategy::spreads_variables)
  }

  void on_epoch_end(int epoch, const Logs& logs) override {
    history_epochs_.push_back(epoch);  // as History records it
    for (const auto& [key, value] : logs) history_[key].push_back(value);
    if (!o_.save_freq.per_epoch() || !writer_) return;
    const FitProgress& at = model_->fit_progress();
    backup({.epoch = epoch + 1, .steps = at.steps, .shuffle_seed = at.shuffle_seed,
            .metric_sums = std::vector<double>(at.metric_sums.size(), 0.0)});
  }

  void on_train_end(const Logs&) override {
    if (o_.delete_checkpoint && writer_) remove_backup();
  }

 private:
  fs::path state_path() const { return fs::path(dir_) / kStateFile; }

  void restore() {
    const std::string where = "BackupAndRestore: " + state_path().string() + ": ";
    json state;
    try {
      std::ifstream in(state_path());
      state = json::parse(in);
    } catch (const json::exception& e) {
      throw Error(where + "not a readable training state (" + e.what() + ")");
    }
    try {
      if (state.value("format", "") != kFormat || state.value("version", 0) != kVersion)
        throw Error(where + "not a training state written by this version of BackupAndRestore");
      const int64_t steps_per_epoch = state.at("steps_per_epoch").get<int64_t>();
      if (steps_per_epoch != params_.steps)
        throw ValueError(where + "the backup was taken by a fit with " + std::to_string(steps_per_epoch) +
                         " batches per epoch, this fit has " + std::to_string(params_.steps) +
                         " (a different dataset or batch size); remove the backup folder to start over");
      const std::string weights = state.at("weights").get<std::string>();
      if (weights != kWeightsFiles[0] && weights != kWeightsFiles[1]) throw Error(where + "unexpected weights file \"" + weights + "\"");
      FitProgress at;
      at.epoch = state.at("epoch").get<int>();
      at.batch = state.at("batch").get<int64_t>();
      at.steps = state.at("steps").get<int64_t>();
      at.shuffle_seed = state.at("shuffle_seed").get<uint64_t>();
      at.loss_sum = number(state.at("loss_sum"));
      at.metric_sums = numbers(state.at("metric_sums"));
      at.rows = state.at("rows").get<int64_t>();
      at.history_epochs = state.at("history_epochs").get<std::vector<int>>();
      for (const auto& [key, values] : state.at("history").items()) at.history[key] = numbers(values);

      model_->load_weights((fs::path(dir_) / weights).string());  // weights and optimizer state
      weights_file_ = weights;
      history_epochs_ = at.history_epochs;
      history_ = at.history;
      model_->resume_fit(at);
    } catch (const json::exception& e) {
      throw Error(where + "malformed training state (" + e.what() + ")");
    }
  }

  // Writes the weights file the current state does not name, then the state that names it.
  void backup(const FitProgress& at) {
    io::create_folders(dir_, "BackupAndRestore (backup_dir)");  // removed since fit began, perhaps
    const std::string weights = weights_file_ == kWeightsFiles[0] ? kWeightsFiles[1] : kWeightsFiles[0];
    model_->save_weights((fs::path(dir_) / weights).string());

    json history = json::object();
    for (const auto& [key, values] : history_) history[key] = numbers(values);
    const json state = {
        {"format", kFormat},
        {"version", kVersion},
        {"weights", weights},
        {"epoch", at.epoch},
        {"batch", at.batch},
        {"steps", at.steps},
        {"steps_per_epoch", params_.steps},
        {"shuffle_seed", at.shuffle_seed},
        {"loss_sum", number(at.loss_sum)},
        {"metric_sums", numbers(at.metric_sums)},
        {"rows", at.rows},
        {"history_epochs", history_epochs_},
        {"history", history},
    };
    const std::string text = state.dump(2) + "\n";
    try {
      io::write_atomically(state_path().string(), [&](const std::string& temp) { io::write_file(temp, text.data(), text.size()); });
    } catch (const Error& e) {  // it names the file and the system's reason ("No space left on device")
      throw Error(std::string("BackupAndRestore: cannot write the training state: ") + e.what());
    }
    weights_file_ = weights;
  }

  void remove_temporaries() const {
    std::error_code ec;
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
      if (our_temporary(it->path().filename().string())) fs::remove(it->path(), ec);
  }

  // The state first: a process stopped halfway leaves no backup rather than a broken one.
  void remove_backup() {
    std::error_code ec;
    fs::remove(state_path(), ec);
    if (ec) throw Error("BackupAndRestore: cannot remove " + state_path().string() + ": " + ec.message());
    for (const char* file : kWeightsFiles) fs::remove(fs::path(dir_) / file, ec);
    remove_temporaries();
    fs::remove(dir_, ec);  // only if nothing else is in it
    weights_file_.clear();
  }

  std::string dir_;
  bool writer_ = true;  // this process writes the files (the chief, or a worker alone)
  BackupAndRestoreOptions o_;
  std::string weights_file_;  // the weights file the state on disk names, "" when none
  std::vector<int> history_epochs_;
  std::map<std::string, std::vector<double>> history_;
};

}  // namespace

CallbackPtr BackupAndRestore(const std::string& backup_dir, const BackupAndRestoreOptions& options) {
  return std::make_shared<BackupAndRestoreCallback>(backup_dir, options);
}

}  // namespace tandem::callbacks
