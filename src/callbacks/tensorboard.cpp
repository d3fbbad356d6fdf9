// TensorBoard (keras/src/callbacks/tensorboard.py): scalars, weight histograms and images in event
// files (io/event_file.h) and embedding checkpoints, under Keras's folders, tags and steps.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <variant>

#include "callbacks/learning_rate.h"
#include "callbacks/weight_images.h"
#include "io/atomic_file.h"
#include "io/event_file.h"
#include "io/png_encode.h"
#include "tandem/callbacks.h"
#include "tandem/distribute.h"
#include "tandem/errors.h"
#include "tandem/layer.h"
#include "tandem/model.h"

namespace tandem {
namespace callbacks {

UpdateFreq::UpdateFreq(const char* name) : UpdateFreq(std::string(name ? name : "")) {}

UpdateFreq::UpdateFreq(const std::string& name) {
  if (name == "batch") batches = 1;
  else if (name != "epoch") throw ValueError("TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches >= 1, got \"" + name + "\"");
}

UpdateFreq::UpdateFreq(int n) : UpdateFreq(static_cast<int64_t>(n)) {}

UpdateFreq::UpdateFreq(int64_t n) : batches(n) {
  if (n < 1) throw ValueError("TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches >= 1, got " + std::to_string(n));
}

}  // namespace callbacks

namespace {

using callbacks::TensorBoardOptions;
using io::EventFileWriter;

// A string as protobuf's text format writes it: C escapes for quotes, backslash, \n, \r and \t,
// other control characters in octal, UTF-8 as it is (as current protobuf releases print strings).
std::string text_format_escape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\' || c == '\'') out += '\\', out += ch;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      const char octal[] = {'\\', static_cast<char>('0' + (c >> 6)), static_cast<char>('0' + ((c >> 3) & 7)), static_cast<char>('0' + (c & 7)), 0};
      out += octal;
    } else out += ch;
  }
  return out;
}

double now_seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class TensorBoardCallback final : public Callback {
 public:
  TensorBoardCallback(std::string log_dir, TensorBoardOptions o) : o_(std::move(o)) {
    const std::filesystem::path dir(log_dir);
    train_dir_ = (dir / "train").string(), val_dir_ = (dir / "validation").string();
    projector_config_ = (dir / "projector_config.pbtxt").string();
    if (o_.histogram_freq < 0) throw ValueError("TensorBoard: histogram_freq must be >= 0, got " + std::to_string(o_.histogram_freq));
    if (o_.profile_batch != 0)
      throw ValueError("TensorBoard: profiling is not supported (profile_batch must be 0, got " + std::to_string(o_.profile_batch) +
                       "); FitOptions::trace_path writes a trace of one step");
    if (o_.embeddings_freq < 0) throw ValueError("TensorBoard: embeddings_freq must be >= 0, got " + std::to_string(o_.embeddings_freq));
  }

  void on_train_begin(const Logs&) override {
    writer_ = distribute::this_worker().chief();  // of several workers, only the chief writes
    train_.reset(), val_.reset();                // each fit writes new files, as Keras's set_model resets its writers
    global_train_batch_ = 0;
    in_fit_ = true;
    if (o_.embeddings_freq > 0 && writer_) write_projector_config();
  }

  void on_train_end(const Logs&) override {
    in_fit_ = false;
    close_writers();
  }

  void on_epoch_begin(int, const Logs&) override {
    if (o_.write_steps_per_second) epoch_start_ = now_seconds(), epoch_start_iterations_ = iterations();
  }

  void on_train_batch_begin(int64_t, const Logs&) override {
    if (o_.write_steps_per_second) batch_start_ = now_seconds();
  }

  void on_train_batch_end(int64_t, const Logs& logs) override {
    ++global_train_batch_;
    if (!writer_ || o_.update_freq.per_epoch() || global_train_batch_ % o_.update_freq.batches != 0) return;
    EventFileWriter& w = writer(train_, train_dir_);
    if (o_.write_steps_per_second) w.scalar("batch_steps_per_second", 1.0 / (now_seconds() - batch_start_), global_train_batch_);
    for (const auto& [name, value] : logs) w.scalar("batch_" + name, value, global_train_batch_);
  }

  void on_epoch_end(int epoch, const Logs& logs) override {
    if (!writer_) return;
    if (!logs.empty()) write_epoch_logs(epoch, logs);
    if (o_.histogram_freq > 0 && epoch % o_.histogram_freq == 0) write_histograms(writer(train_, train_dir_), epoch);
    if (o_.embeddings_freq > 0 && epoch % o_.embeddings_freq == 0) {  // Keras's _log_embeddings
      io::create_folders(train_dir_, "TensorBoard");
      model_->save_weights((std::filesystem::path(train_dir_) / ("keras_embedding.ckpt-" + std::to_string(epoch) + ".weights.h5")).string());
    }
    if (train_) train_->sync();  // an epoch's summaries are on disk when the epoch ends
  }

  void on_test_begin(const Logs&) override {
    if (!in_fit_) writer_ = distribute::this_worker().chief();
  }

  void on_test_end(const Logs& logs) override {
    if (!writer_) return;
    write_evaluation(logs);
    if (!in_fit_) close_writers();  // a standalone evaluate: its file is complete
  }

 private:
  // Keras's _log_epoch_metrics (and its on_test_end during fit's validation).
  void write_epoch_logs(int epoch, const Logs& logs) {
    Logs train_logs, val_logs;
    for (const auto& [name, value] : logs) (name.starts_with("val_") ? val_logs[name.substr(4)] : train_logs[name]) = value;
    // fit's validation runs without the user's callbacks, so the scalars Keras writes in
    // on_test_end during fit are written here, from the same values.
    if (!val_logs.empty()) write_evaluation(val_logs);
    if (model_ && model_->optimizer()) train_logs["learning_rate"] = callbacks::detail::current_learning_rate(*model_->optimizer());
    if (o_.write_steps_per_second)
      train_logs["steps_per_second"] = static_cast<double>(iterations() - epoch_start_iterations_) / (now_seconds() - epoch_start_);
    EventFileWriter& train = writer(train_, train_dir_);
    for (const auto& [name, value] : train_logs) train.scalar("epoch_" + name, value, epoch);
    if (!val_logs.empty()) {
      EventFileWriter& val = writer(val_, val_dir_);
      for (const auto& [name, value] : val_logs) val.scalar("epoch_" + name, value, epoch);
      val.sync();
    }
  }

  EventFileWriter& writer(std::unique_ptr<EventFileWriter>& w, const std::string& folder) {
    if (!w) w = std::make_unique<EventFileWriter>(folder, "TensorBoard");  // made when first written, as Keras's
    return *w;
  }

  void close_writers() {
    std::unique_ptr<EventFileWriter> train = std::move(train_), val = std::move(val_);
    if (train) train->close();
    if (val) val->close();
  }

  int64_t iterations() const { return model_ && model_->optimizer() ? model_->optimizer()->iterations() : 0; }

  // Keras's on_test_end: each evaluation value against the optimizer's step count, in validation/.
  void write_evaluation(const Logs& logs) {
    if (!model_ || !model_->optimizer() || logs.empty()) return;
    EventFileWriter& val = writer(val_, val_dir_);
    for (const auto& [name, value] : logs) val.scalar("evaluation_" + name + "_vs_iterations", value, iterations());
    val.sync();
  }

  // Keras's _log_weights: every layer's weights (trainable or not), tagged by the weight's path,
  // with write_images also as images.
  void write_histograms(EventFileWriter& w, int epoch) {
    if (!model_) return;
    const std::string prefix = dynamic_cast<const Sequential*>(model_) ? model_->name() + "/" : std::string();
    for (const VariablePtr& weight : model_->weights()) {
      std::string tag = prefix + weight->path();
      std::replace(tag.begin(), tag.end(), ':', '_');
      const Tensor values = weight->value().cast(DType::F64);
      w.histogram(tag + "/histogram", io::make_histogram(values.values<double>()), epoch);
      if (!o_.write_images) continue;
      if (const auto images = callbacks::detail::weight_images(weight->value())) {
        const auto bytes = static_cast<std::size_t>(images->height * images->width * images->channels);
        std::vector<std::string> pngs;
        for (std::size_t i = 0; i < static_cast<std::size_t>(images->count); ++i)
          pngs.push_back(io::encode_png(images->height, images->width, images->channels, std::span(images->pixels).subspan(i * bytes, bytes)));
        w.images(tag + "/image", images->width, images->height, pngs, epoch);
      }
    }
  }

  // Keras's _configure_embeddings: a ProjectorConfig in protobuf text format with an entry per
  // Embedding layer (Keras names the first layer with weights' variable in all of them).
  void write_projector_config() {
    std::map<std::string, std::string> per_layer;
    if (const auto* names = std::get_if<std::map<std::string, std::string>>(&o_.embeddings_metadata)) per_layer = *names;
    std::string config;
    for (const auto& layer : model_->layers()) {
      if (layer->class_name() != "Embedding") continue;
      config += "embeddings {\n  tensor_name: \"layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE\"\n";
      std::optional<std::string> metadata;
      if (const auto* all = std::get_if<std::string>(&o_.embeddings_metadata)) metadata = *all;
      else if (const auto it = per_layer.find(layer->name()); it != per_layer.end()) metadata = it->second, per_layer.erase(it);
      if (metadata) config += "  metadata_path: \"" + text_format_escape(*metadata) + "\"\n";
      config += "}\n";
    }
    if (!per_layer.empty()) {
      std::string names;
      for (const auto& [name, path] : per_layer) names += (names.empty() ? "" : ", ") + name;
      throw ValueError("TensorBoard: embeddings_metadata names layers that are not Embedding layers of the model: " + names);
    }
    io::create_folders(std::filesystem::path(projector_config_).parent_path().string(), "TensorBoard");
    io::write_atomically(projector_config_, [&](const std::string& temp) { io::write_file(temp, config.data(), config.size()); });
  }

  TensorBoardOptions o_;
  std::string train_dir_, val_dir_, projector_config_;
  std::unique_ptr<EventFileWriter> train_, val_;
  bool writer_ = true;   // this process writes (the chief, or a worker alone)
  bool in_fit_ = false;
  int64_t global_train_batch_ = 0;
  double epoch_start_ = 0, batch_start_ = 0;
  int64_t epoch_start_iterations_ = 0;
};

}  // namespace

namespace callbacks {
CallbackPtr TensorBoard(const std::string& log_dir, const TensorBoardOptions& options) {
  return std::make_shared<TensorBoardCallback>(log_dir, options);
}
}  // namespace callbacks

}  // namespace tandem
