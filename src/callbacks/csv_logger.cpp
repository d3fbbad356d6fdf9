// CSVLogger (keras/src/callbacks/csv_logger.py).
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

#include "callbacks/checkpoint_path.h"
#include "io/atomic_file.h"
#include "tandem/callbacks.h"
#include "tandem/distribute.h"
#include "tandem/errors.h"

namespace tandem {
namespace {

using callbacks::CSVLoggerOptions;

class CSVLoggerCallback final : public Callback {
 public:
  CSVLoggerCallback(std::string filename, CSVLoggerOptions o) : filename_(std::move(filename)), o_(o) {
    if (filename_.empty()) throw ValueError("CSVLogger: the filename is empty");
  }

  void on_train_begin(const Logs&) override {
    writer_ = distribute::this_worker().chief();  // of several workers, only the chief writes
    if (!writer_) return;
    // Appending to a file that has rows keeps its header (Keras reads the first byte to decide).
    struct stat st{};
    header_written_ = o_.append && ::stat(filename_.c_str(), &st) == 0 && st.st_size > 0;
    io::create_folders(std::filesystem::path(filename_).parent_path().string(), "CSVLogger");  // "run1/log.csv" in a new run1
    out_.open(filename_, o_.append ? std::ios::app : std::ios::trunc);
    if (!out_) throw Error("CSVLogger: " + filename_ + ": cannot open the file: " + std::strerror(errno));
    keys_.clear();
  }

  void on_epoch_end(int epoch, const Logs& logs) override {
    if (!writer_) return;
    if (keys_.empty())
      for (const auto& [key, value] : logs) keys_.push_back(key);
    if (!header_written_) {
      out_ << "epoch";
      for (const std::string& k : keys_) out_ << o_.separator << k;
      out_ << "\n";
      header_written_ = true;
    }
    out_ << epoch;
    for (const std::string& k : keys_) {
      const auto it = logs.find(k);
      out_ << o_.separator << (it == logs.end() ? std::string("NA") : callbacks::detail::python_float_repr(it->second));
    }
    out_ << "\n";
    out_.flush();
    if (!out_) throw Error("CSVLogger: " + filename_ + ": cannot write the row of epoch " + std::to_string(epoch) + ": " + std::strerror(errno));
  }

  void on_train_end(const Logs&) override {
    if (writer_) out_.close();
  }

 private:
  std::string filename_;
  CSVLoggerOptions o_;
  std::ofstream out_;
  std::vector<std::string> keys_;
  bool header_written_ = false;
  bool writer_ = true;  // this process writes the files (the chief, or a worker alone)
};

}  // namespace

namespace callbacks {
CallbackPtr CSVLogger(const std::string& filename, const CSVLoggerOptions& options) {
  return std::make_shared<CSVLoggerCallback>(filename, options);
}
}  // namespace callbacks

}  // namespace tandem
