// ModelCheckpoint (keras/src/callbacks/model_checkpoint.py), the SaveFreq argument it shares with
// BackupAndRestore, and the str.format subset that names checkpoint files.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <utility>

#include "callbacks/checkpoint_path.h"
#include "callbacks/monitor.h"
#include "io/atomic_file.h"
#include "tandem/callbacks.h"
#include "tandem/distribute.h"
#include "tandem/errors.h"
#include "tandem/model.h"

namespace tandem::callbacks {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// SaveFreq

SaveFreq::SaveFreq(const char* name) : SaveFreq(std::string(name ? name : "")) {}

SaveFreq::SaveFreq(const std::string& name) {
  if (name != "epoch")
    throw ValueError("Unrecognized save_freq: " + name + ". Expected save_freq are 'epoch' or integer values");
}

SaveFreq::SaveFreq(int batches) : SaveFreq(static_cast<int64_t>(batches)) {}

SaveFreq::SaveFreq(int64_t n) : batches(n) {
  if (n < 1) throw ValueError("Unrecognized save_freq: " + std::to_string(n) + ". Expected 'epoch' or a number of batches >= 1");
}

// ---------------------------------------------------------------------------------------------
// Python's str.format, the part file names need

namespace detail {

namespace {

template <typename... Args>
std::string printf_string(const char* fmt, Args... args) {
  const int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string out(static_cast<std::size_t>(n > 0 ? n : 0), '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}

bool is_align(char c) { return c == '<' || c == '>' || c == '^' || c == '='; }

struct Spec {
  char fill = ' ';
  char align = 0;  // 0 = the default, right for numbers
  char sign = '-';
  int width = 0;
  int precision = -1;  // -1 = not given
  char type = 0;       // 0 = none
};

Spec parse_spec(const std::string& s, const char* kind) {
  const auto invalid = [&] { return ValueError("Invalid format specifier '" + s + "' for object of type '" + kind + "'"); };
  Spec spec;
  std::size_t i = 0;
  if (s.size() >= 2 && is_align(s[1])) {
    spec.fill = s[0], spec.align = s[1], i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0], i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == '0') {
    if (!spec.align) spec.fill = '0', spec.align = '=';
    ++i;
  }
  const auto number = [&](int& out) {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) return false;
    if (i - start > 6) throw invalid();
    out = std::stoi(s.substr(start, i - start));
    return true;
  };
  number(spec.width);
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!number(spec.precision)) throw ValueError("Format specifier missing precision");
  }
  if (i < s.size()) {
    const std::string types = "deEfFgG%";
    if (types.find(s[i]) == std::string::npos) throw invalid();
    spec.type = s[i++];
  }
  if (i != s.size()) throw invalid();
  return spec;
}

// The digits of |value| (sign handled by the caller), as Python formats a float with this spec.
std::string float_body(double v, const Spec& spec) {
  const double a = std::fabs(v);
  const int p = spec.precision < 0 ? 6 : spec.precision;
  switch (spec.type) {
    case 0: {
      if (spec.precision < 0) return python_float_repr(a);
      // With a precision and no type Python uses 'g', keeping one digit after the point.
      std::string out = printf_string("%.*g", std::max(spec.precision, 1), a);
      if (std::isfinite(a) && out.find_first_of(".e") == std::string::npos) out += ".0";
      return out;
    }
    case 'f': return printf_string("%.*f", p, a);
    case 'F': return printf_string("%.*F", p, a);
    case 'e': return printf_string("%.*e", p, a);
    case 'E': return printf_string("%.*E", p, a);
    case 'g': return printf_string("%.*g", std::max(p, 1), a);
    case 'G': return printf_string("%.*G", std::max(p, 1), a);
    case '%': return printf_string("%.*f", p, a * 100.0) + "%";
  }
  throw ValueError(std::string("Unknown format code '") + spec.type + "' for object of type 'float'");
}

std::string format_value(const FormatArg& arg, const std::string& spec_text) {
  const Spec spec = parse_spec(spec_text, arg.integer ? "int" : "float");
  const double v = arg.value;
  const bool negative = !std::isnan(v) && std::signbit(v);
  std::string body;
  if (arg.integer && (spec.type == 0 || spec.type == 'd')) {
    if (spec.precision >= 0) throw ValueError("Precision not allowed in integer format specifier");
    body = printf_string("%.0f", std::fabs(v));
  } else {
    if (spec.type == 'd') throw ValueError("Unknown format code 'd' for object of type 'float'");
    body = float_body(v, spec);
  }
  const std::string sign = negative ? "-" : spec.sign == '+' ? "+" : spec.sign == ' ' ? " " : "";
  const std::size_t length = sign.size() + body.size();
  if (static_cast<std::size_t>(spec.width) <= length) return sign + body;
  const std::size_t pad = static_cast<std::size_t>(spec.width) - length;
  switch (spec.align) {
    case '<': return sign + body + std::string(pad, spec.fill);
    case '^': return std::string(pad / 2, spec.fill) + sign + body + std::string(pad - pad / 2, spec.fill);
    case '=': return sign + std::string(pad, spec.fill) + body;
    default: return std::string(pad, spec.fill) + sign + body;
  }
}

}  // namespace

std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::scientific);  // shortest: "-1.25e-05"
  std::string s(buffer, result.ptr);
  std::string sign;
  if (s[0] == '-') sign = "-", s.erase(0, 1);
  const std::size_t e = s.find('e');
  const int exponent = std::stoi(s.substr(e + 1));
  std::string digits;
  for (char c : s.substr(0, e))
    if (c != '.') digits += c;
  // value = 0.DIGITS x 10^point; Python writes it positionally when -4 < point <= 16.
  const int point = exponent + 1;
  const auto n = static_cast<int>(digits.size());
  if (point > -4 && point <= 16) {
    if (point <= 0) return sign + "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
    if (point >= n) return sign + digits + std::string(static_cast<std::size_t>(point - n), '0') + ".0";
    return sign + digits.substr(0, static_cast<std::size_t>(point)) + "." + digits.substr(static_cast<std::size_t>(point));
  }
  const std::string mantissa = n > 1 ? digits.substr(0, 1) + "." + digits.substr(1) : digits;
  return sign + mantissa + printf_string("e%+03d", point - 1);
}

std::string format_path(const std::string& pattern, const FormatArgs& args) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
        out += '}', ++i;
        continue;
      }
      throw ValueError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out += '{', ++i;
      continue;
    }
    const std::size_t close = pattern.find('}', i + 1);
    if (close == std::string::npos) throw ValueError("Single '{' encountered in format string");
    const std::string field = pattern.substr(i + 1, close - i - 1);
    if (field.find('{') != std::string::npos) throw ValueError("nested fields are not supported in \"" + field + "\"");
    const std::size_t colon = field.find(':');
    const std::string name = field.substr(0, colon);
    const std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    if (name.empty()) throw ValueError("positional fields are not supported: use a name such as {epoch}");
    if (name.find_first_of(".[!") != std::string::npos) throw ValueError("unsupported field \"" + name + "\": only plain names");
    const auto it = args.find(name);
    if (it == args.end()) throw ValueError("'" + name + "'");
    out += format_value(it->second, spec);
    i = close;
  }
  return out;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// ModelCheckpoint

namespace {

using detail::Monitor;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class ModelCheckpointCallback final : public Callback {
 public:
  ModelCheckpointCallback(std::string filepath, ModelCheckpointOptions options)
      : filepath_(std::move(filepath)), o_(std::move(options)), best_(o_.initial_value_threshold) {
    if (o_.save_weights_only) {
      if (!ends_with(filepath_, ".weights.h5"))
        throw ValueError("When using `save_weights_only=True` in `ModelCheckpoint`, the filepath provided must end in "
                         "`.weights.h5` (Keras weights format). Received: filepath=" + filepath_);
    } else if (ends_with(filepath_, ".weights.h5") ||
               (!ends_with(filepath_, ".keras") && !ends_with(filepath_, ".h5") && !ends_with(filepath_, ".hdf5"))) {
      throw ValueError("The filepath provided must end in `.keras`, `.h5` or `.hdf5` (whole model, Model::save), or use "
                       "`save_weights_only=True` with a `.weights.h5` filepath. Received: filepath=" + filepath_);
    }
    maximize_ = Monitor("ModelCheckpoint", o_.monitor, o_.mode).maximize();
  }

  void on_epoch_begin(int epoch, const Logs&) override { epoch_ = epoch; }

  void on_train_batch_end(int64_t batch, const Logs& logs) override {
    if (o_.save_freq.per_epoch() || ++batches_since_save_ < o_.save_freq.batches) return;
    batches_since_save_ = 0;
    save(epoch_, batch, logs);
  }

  void on_epoch_end(int epoch, const Logs& logs) override {
    if (o_.save_freq.per_epoch()) save(epoch, -1, logs);
  }

 private:
  std::string file_path(int epoch, int64_t batch, const Logs& logs) const {
    detail::FormatArgs args;
    for (const auto& [key, value] : logs) args[key] = {value, false};
    args["epoch"] = {double(epoch + 1), true};
    if (batch >= 0 && !logs.count("batch")) args["batch"] = {double(batch + 1), true};
    try {
      return detail::format_path(filepath_, args);
    } catch (const ValueError& e) {
      throw ValueError("Failed to format this callback filepath: \"" + filepath_ + "\". Reason: " + e.what());
    }
  }

  static std::string fixed5(double v) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.5f", v);
    return buffer;
  }

  bool should_save(int epoch, const Logs& logs, const std::string& path) {
    const std::string prefix = "\nEpoch " + std::to_string(epoch + 1) + ": ";
    if (!o_.save_best_only) {
      if (o_.verbose > 0) std::cout << prefix << "saving model to " << path << std::endl;
      return true;
    }
    const auto it = logs.find(o_.monitor);
    if (it == logs.end()) {
      if (!warned_) std::cerr << "UserWarning: Can save best model only with " << o_.monitor << " available." << std::endl;
      warned_ = true;
      return true;
    }
    const double current = it->second;
    const std::string best = best_ ? fixed5(*best_) : "None";
    const bool improved = !best_ || (maximize_ ? current > *best_ : current < *best_);
    if (improved) {
      if (o_.verbose > 0)
        std::cout << prefix << o_.monitor << " improved from " << best << " to " << fixed5(current) << ", saving model to " << path
                  << std::endl;
      best_ = current;
    } else if (o_.verbose > 0) {
      std::cout << prefix << o_.monitor << " did not improve from " << best << std::endl;
    }
    return improved;
  }

  void save(int epoch, int64_t batch, const Logs& logs) {
    const std::string path = file_path(epoch, batch, logs);
    if (!should_save(epoch, logs, path)) return;  // every worker keeps the best value
    if (!distribute::this_worker().chief()) {  // only the chief writes; the others take part in reading the weights
      model_->get_weights();
      return;
    }
    std::error_code ec;
    if (fs::is_directory(path, ec))
      throw Error("Please specify a non-directory filepath for ModelCheckpoint. Filepath used is an existing directory: " + path);
    io::create_folders(fs::path(path).parent_path().string(), "ModelCheckpoint");
    if (o_.save_weights_only)
      model_->save_weights(path);
    else
      model_->save(path);
    if (o_.verbose > 0) std::cout << "\nEpoch " << epoch + 1 << ": finished saving model to " << path << std::endl;
  }

  std::string filepath_;
  ModelCheckpointOptions o_;
  std::optional<double> best_;
  bool maximize_ = false;
  bool warned_ = false;
  int epoch_ = 0;
  int64_t batches_since_save_ = 0;
};

}  // namespace

CallbackPtr ModelCheckpoint(const std::string& filepath, const ModelCheckpointOptions& options) {
  return std::make_shared<ModelCheckpointCallback>(filepath, options);
}

}  // namespace tandem::callbacks
