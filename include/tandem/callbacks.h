// Callbacks: hooks into fit/evaluate/predict, the Keras-style progress bar and History.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

namespace tandem {

class Model;

// Metric name -> value. A std::map keeps keys sorted, which is the order Keras 3 prints them in.
using Logs = std::map<std::string, double>;

struct TrainParams {
  int epochs = 1;
  int64_t steps = 0;  // batches per epoch
  int verbose = 1;
};

class Callback {
 public:
  virtual ~Callback() = default;
  void set_model(Model* model) { model_ = model; }
  void set_params(const TrainParams& params) { params_ = params; }

  virtual void on_train_begin(const Logs&) {}
  virtual void on_train_end(const Logs&) {}
  virtual void on_epoch_begin(int /*epoch*/, const Logs&) {}
  virtual void on_epoch_end(int /*epoch*/, const Logs&) {}
  // Called on every callback before any on_epoch_end: adds keys to the epoch's logs, as a Keras
  // callback writes into `logs` (ReduceLROnPlateau and LearningRateScheduler add "learning_rate"),
  // so that History, CSVLogger and the progress bar's epoch line all have them.
  virtual void add_epoch_logs(int /*epoch*/, Logs&) {}
  virtual void on_train_batch_begin(int64_t /*batch*/, const Logs&) {}
  virtual void on_train_batch_end(int64_t /*batch*/, const Logs&) {}
  virtual void on_test_begin(const Logs&) {}
  virtual void on_test_end(const Logs&) {}
  virtual void on_test_batch_begin(int64_t /*batch*/, const Logs&) {}
  virtual void on_test_batch_end(int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_begin(const Logs&) {}
  virtual void on_predict_end(const Logs&) {}
  virtual void on_predict_batch_begin(int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_batch_end(int64_t /*batch*/, const Logs&) {}

 protected:
  Model* model_ = nullptr;
  TrainParams params_;
};

using CallbackPtr = std::shared_ptr<Callback>;

// Per-epoch values of every log key (val_* included), as Keras's History.
class History : public Callback {
 public:
  std::map<std::string, std::vector<double>> history;
  std::vector<int> epoch;
  void on_train_begin(const Logs&) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
};

// The progress bar Keras 3 prints: `469/469 ━━━━━━━━━━━━━━━━━━━━ 2s 4ms/step - accuracy: 0.8721 - loss: 0.3563`.
// verbose 1: a live bar redrawn at most every 50 ms with an ETA; verbose 2: one line per epoch.
// `clock` returns seconds; it is injectable so tests can check the text.
class ProgbarLogger : public Callback {
 public:
  explicit ProgbarLogger(std::ostream& out, std::function<double()> clock = {});
  void on_train_begin(const Logs&) override;
  void on_train_end(const Logs&) override;  // leaving fit: evaluate() shows its bar again
  void on_epoch_begin(int epoch, const Logs&) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_test_begin(const Logs&) override;
  void on_test_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs&) override;
  void on_predict_batch_end(int64_t batch, const Logs& logs) override;
  void on_predict_end(const Logs&) override;
  void set_test_steps(int64_t steps) { test_steps_ = steps; }  // evaluate/predict bars' target

 private:
  struct Bar;
  std::shared_ptr<Bar> bar_;
  std::ostream& out_;
  std::function<double()> clock_;
  int64_t test_steps_ = 0;
  bool in_fit_ = false;
};

namespace callbacks {
// Constructors that read like Keras: `.callbacks = {tandem::callbacks::Lambda(...)}`.
CallbackPtr Lambda(std::function<void(int epoch, const Logs&)> on_epoch_end);

// keras.callbacks.TerminateOnNaN: at the end of a training batch whose running loss is NaN or
// infinite, prints "Batch N: Invalid loss, terminating training" to standard output (N counts from
// 0 within the epoch) and sets the model's stop_training, so fit ends after that batch.
CallbackPtr TerminateOnNaN();

// How often a checkpointing callback saves: "epoch" (at each epoch's end) or every N training
// batches, counted across epochs: `.save_freq = "epoch"`, `.save_freq = 500`.
struct SaveFreq {
  SaveFreq(const char* name);         // "epoch"; anything else is a ValueError
  SaveFreq(const std::string& name);
  SaveFreq(int batches);              // >= 1
  SaveFreq(int64_t batches);
  bool per_epoch() const { return batches == 0; }
  int64_t batches = 0;                // 0 = per epoch
};

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  int verbose = 0;                    // 1 prints a line for each save (or each best not improved)
  bool save_best_only = false;        // save only when `monitor` improves on the best so far
  bool save_weights_only = false;     // save_weights (path must end in ".weights.h5"), else the whole model
  std::string mode = "auto";          // "min", "max", or "auto": max for accuracy/AUC-like names, else min
  SaveFreq save_freq = "epoch";
  std::optional<double> initial_value_threshold{};  // the best value to beat at the start
};

// keras.callbacks.ModelCheckpoint. `filepath` is a Python format string filled with `epoch` (from
// 1), `batch` (from 1, when saving every N batches) and the logs: "ckpt/{epoch:02d}-{val_loss:.2f}.weights.h5".
CallbackPtr ModelCheckpoint(const std::string& filepath, const ModelCheckpointOptions& options = {});

struct BackupAndRestoreOptions {
  SaveFreq save_freq = "epoch";
  bool delete_checkpoint = true;  // remove the backup when fit finishes
};

// keras.callbacks.BackupAndRestore, resuming exactly: a fit() that finds a backup in `backup_dir`
// continues at the epoch and batch where it was taken, with the same weights, optimizer state,
// shuffle order, running metrics and History, so an interrupted and resumed run ends with the same
// weights, bit for bit, as one that was never interrupted. Backups are written atomically. The
// directory belongs to this callback (see docs/checkpoints.md).
CallbackPtr BackupAndRestore(const std::string& backup_dir, const BackupAndRestoreOptions& options = {});
struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;               // an improvement must exceed this
  int patience = 0;                     // epochs without improvement before stopping
  int verbose = 0;                      // 1 prints "Epoch N: early stopping" and the restore
  std::string mode = "auto";            // "min", "max", or "auto" (as ModelCheckpoint)
  std::optional<double> baseline{};       // the patience counter resets only on values that beat it
  bool restore_best_weights = false;    // at the end of fit, the weights of the best epoch
  int start_from_epoch = 0;             // epochs before this are not monitored (a warm-up)
};

// keras.callbacks.EarlyStopping, Keras 3's rules: at each epoch end (from start_from_epoch) the
// monitored value either improves on the best (then the best and, with restore_best_weights, its
// weights are kept, and the wait restarts unless a baseline is not beaten) or the wait grows; when
// it reaches `patience` (and the epoch is not the first) training stops. restore_best_weights
// restores the best epoch's weights when fit ends, whether this callback stopped it or not.
CallbackPtr EarlyStopping(const EarlyStoppingOptions& options = {});

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;                  // new learning rate = max(lr * factor, min_lr); in [0, 1)
  int patience = 10;
  int verbose = 0;                      // 1 prints "Epoch N: ReduceLROnPlateau reducing learning rate to X."
  std::string mode = "auto";
  double min_delta = 1e-4;
  int cooldown = 0;                     // epochs after a reduction during which no wait accumulates
  double min_lr = 0.0;
};

// keras.callbacks.ReduceLROnPlateau: multiplies the optimizer's learning rate by `factor` after
// `patience` epochs without improvement of the monitored value; the new rate is used from the next
// step on every device.
CallbackPtr ReduceLROnPlateau(const ReduceLROnPlateauOptions& options = {});

// keras.callbacks.LearningRateScheduler: at each epoch's start sets the optimizer's learning rate to
// schedule(epoch, current rate) (epoch from 0); verbose 1 prints
// "Epoch N: LearningRateScheduler setting learning rate to X.".
CallbackPtr LearningRateScheduler(std::function<double(int epoch, double learning_rate)> schedule, int verbose = 0);

struct CSVLoggerOptions {
  char separator = ',';
  bool append = false;  // add to an existing file (its header stays); else the file is replaced
};

// keras.callbacks.CSVLogger: one row per epoch, "epoch" then every log key in sorted order (the
// header is written with the first row), values as Python prints floats. The row is flushed to the
// file as each epoch ends, so a log of an interrupted run has every finished epoch.
CallbackPtr CSVLogger(const std::string& filename, const CSVLoggerOptions& options = {});

// How often TensorBoard writes the batch-level scalars: "epoch" (never: only the epoch summaries),
// "batch" (every batch) or every N training batches, counted across epochs from 1:
// `.update_freq = "batch"`, `.update_freq = 100`.
struct UpdateFreq {
  UpdateFreq(const char* name);         // "epoch" or "batch"; anything else is a ValueError
  UpdateFreq(const std::string& name);
  UpdateFreq(int batches);              // >= 1
  UpdateFreq(int64_t batches);
  bool per_epoch() const { return batches == 0; }
  int64_t batches = 0;                  // 0 = per epoch
};

struct TensorBoardOptions {
  int histogram_freq = 0;               // every N epochs (from epoch 0), a histogram of every weight; 0: none
  bool write_graph = true;              // accepted for Keras's signature; no graph is written (docs/callbacks.md)
  bool write_images = false;            // with histogram_freq, each weight also as an image, as Keras draws it
  bool write_steps_per_second = false;  // also log training steps per second (epoch_ and, per batch, batch_)
  UpdateFreq update_freq = "epoch";
  int profile_batch = 0;                // profiling is not supported: only 0 (see FitOptions::trace_path)
  // Every N epochs (from epoch 0), the model's weights in log_dir/train/keras_embedding.ckpt-<epoch>.weights.h5,
  // and at the start of fit log_dir/projector_config.pbtxt naming each Embedding layer, as Keras
  // writes them; 0: none.
  int embeddings_freq = 0;
  // The projector's metadata file: one for every Embedding layer (a string), or per layer name (a
  // map, every name an Embedding layer of the model).
  std::variant<std::monostate, std::string, std::map<std::string, std::string>> embeddings_metadata{};
};

// keras.callbacks.TensorBoard: event files that TensorBoard reads, in `log_dir`/train and
// `log_dir`/validation (one new file per fit in each). Per epoch (step = epoch, from 0): the logs
// without a "val_" prefix and the optimizer's learning rate as "epoch_<name>" in train/, the
// "val_" logs as "epoch_<name>" in validation/, and there also "evaluation_<name>_vs_iterations"
// at step = optimizer iterations (as Keras's on_test_end). With update_freq N: the running logs as
// "batch_<name>" in train/ at every N-th training batch (step = batches so far, from 1). Every
// histogram_freq epochs: each weight's histogram as "<weight path>/histogram" (a Sequential's
// paths start with its name, as Keras's: "sequential/dense/kernel/histogram"), and with
// write_images the weight drawn as Keras draws it as "<weight path>/image". embeddings_freq saves
// the weights and a projector config as Keras does. Only the chief of
// several workers writes. A standalone evaluate() with this callback writes the
// evaluation_..._vs_iterations scalars.
CallbackPtr TensorBoard(const std::string& log_dir = "logs", const TensorBoardOptions& options = {});
}  // namespace callbacks

}  // namespace tandem
