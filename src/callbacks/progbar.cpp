// Keras 3's progress bar (keras/src/utils/progbar.py driven by callbacks/progbar_logger.py),
// reproduced character for character so training output reads exactly like Keras's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "tandem/callbacks.h"

namespace tandem {
namespace {

constexpr int kBarWidth = 20;
constexpr double kRefreshInterval = 0.05;  // seconds between redraws, except the final one
constexpr const char* kBold = "\x1b[1m";
constexpr const char* kGreen = "\x1b[32m";
constexpr const char* kGrey = "\x1b[37m";
constexpr const char* kReset = "\x1b[0m";

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// printf into a std::string; sized by a first pass since "%.4f" of a huge loss can be long.
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string out(static_cast<size_t>(n > 0 ? n : 0), '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}

std::string repeat(const char* glyph, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += glyph;
  return out;
}

int digits(int64_t n) {
  int d = 1;
  for (; n >= 10; n /= 10) ++d;
  return d;
}

// Python's float divmod (floor semantics), so ETA fields split exactly as Keras's `//` and `%`.
std::pair<double, double> py_divmod(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) {
    mod += b;
    div -= 1.0;
  }
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1.0;
  return {floor_div, mod};
}

// Python's "%d" of a float truncates toward zero.
long long py_int(double x) { return static_cast<long long>(x); }

// "45s", "1:05" or "1:01:05", switching strictly above one minute / one hour as Keras does.
std::string format_eta(double eta) {
  if (eta > 3600) {
    auto [hours, rest] = py_divmod(eta, 3600);
    return format("%lld:%02lld:%02lld", py_int(hours), py_int(py_divmod(rest, 60).first),
                  py_int(py_divmod(eta, 60).second));
  }
  if (eta > 60) {
    auto [minutes, seconds] = py_divmod(eta, 60);
    return format("%lld:%02lld", py_int(minutes), py_int(seconds));
  }
  return format("%llds", py_int(eta));
}

// " 12ms/step": seconds when >= 1 s (or exactly 0), else milliseconds, else microseconds.
std::string format_step_time(double per_step) {
  if (per_step >= 1 || per_step == 0) return format(" %.0fs/step", per_step);
  if (per_step >= 1e-3) return format(" %.0fms/step", per_step * 1000.0);
  return format(" %.0fus/step", per_step * 1000000.0);
}

// Keras switches to scientific notation for values it would otherwise show as 0.0000. The
// one-line (verbose 2) form compares the signed value, not its magnitude: negatives print as .4e.
std::string format_value(double v, bool signed_threshold) {
  if (std::isnan(v)) return "nan";  // Python never prints "-nan"
  bool fixed = signed_threshold ? v > 1e-3 : std::fabs(v) > 1e-3;
  return format(fixed ? "%.4f" : "%.4e", v);
}

// Terminal columns of a line: UTF-8 characters, not counting ANSI colour sequences.
size_t visible_width(const std::string& s) {
  size_t width = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm') ++i;
    } else if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      ++width;
    }
  }
  return width;
}

}  // namespace

// One bar: an epoch of fit, or one evaluate/predict run.
struct ProgbarLogger::Bar {
  Bar(int64_t target_steps, int verbosity, double now) : target(target_steps), verbose(verbosity), start(now) {}

  // Keras's ProgbarLogger creates the bar lazily if a batch arrives without a begin hook.
  static void ensure(std::shared_ptr<Bar>& bar, int64_t target, int verbose, double now) {
    if (!bar) bar = std::make_shared<Bar>(target, verbose, now);
  }

  // Batch ends only move the live bar; the verbose 2 line and the final verbose 1 line come from
  // finish(), whose logs are the complete epoch logs (val_* included).
  void advance(std::ostream& out, int64_t batch, const Logs& logs, double now) {
    seen = batch + 1;
    if (verbose == 1) update(out, seen, logs, false, now);
  }

  void finish(std::ostream& out, const Logs& logs, double now) {
    if (target <= 0) target = seen;  // an unknown length is known once the data ran out
    update(out, target, logs, true, now);
  }

  int64_t target;  // <= 0 while unknown
  int verbose;
  double start;

 private:
  // Average step time; the first step (tracing, warm-up) is left out once there are others.
  double step_duration(int64_t current, double now) {
    if (current == 0) return 0;
    double per_step = (after_first_step && current > 1)
                          ? (now - *after_first_step) / static_cast<double>(current - 1)
                          : (now - start) / static_cast<double>(current);
    if (current == 1) after_first_step = now;
    return per_step;
  }

  // A streamed dataset's data_wait (ms per step waiting for input) goes with the step time.
  std::string metrics(bool signed_threshold) const {
    std::string out;
    if (const auto wait = values.find("data_wait"); wait != values.end()) out += format(" - data_wait: %.0fms", wait->second);
    for (const std::string& key : order)
      if (key != "data_wait") out += " - " + key + ": " + format_value(values.at(key), signed_threshold);
    return out;
  }

  void update(std::ostream& out, int64_t current, const Logs& logs, bool finalize, double now) {
    // Keys stay in the order first seen (each Logs is sorted) and keep their last value, like
    // Keras's _values_order / _values. Keras's callbacks add learning_rate to the epoch's logs after
    // fit added the val_* keys, so a new learning_rate goes after them.
    const std::size_t known = order.size();
    for (const auto& [key, value] : logs) {
      if (key.ends_with(']')) continue;  // one class's value ("f1_score[2]"): Keras's bar shows their mean alone
      if (!values.count(key)) order.push_back(key);
      values[key] = value;
    }
    const auto rate = std::find(order.begin() + static_cast<std::ptrdiff_t>(known), order.end(), "learning_rate");
    if (rate != order.end()) std::rotate(rate, rate + 1, order.end());
    double per_step = step_duration(current, now);  // before throttling: it records step 1's time

    if (verbose == 1) {
      if (drawn && now - last_update < kRefreshInterval && !finalize) return;
      draw(out, current, per_step, finalize, now);
      drawn = true;
    } else if (verbose == 2 && finalize && target > 0) {
      out << format("%*lld/%lld", digits(target), static_cast<long long>(current), static_cast<long long>(target))
          << " - " << format("%.0f", now - start) << "s -" << format_step_time(per_step) << metrics(true) << "\n";
      out.flush();
    }
    last_update = now;
  }

  void draw(std::ostream& out, int64_t current, double per_step, bool finalize, double now) {
    std::string line;
    if (target > 0) {
      line = kBold + format("%*lld/%lld", digits(target), static_cast<long long>(current),
                            static_cast<long long>(target)) + kReset + " ";
      int done = static_cast<int>(kBarWidth * (static_cast<double>(current) / static_cast<double>(target)));
      if (done > 0) line += kGreen + repeat("━", done) + kReset;
      line += kGrey + repeat("━", kBarWidth - done) + kReset;
      line += " ";
      line += kBold;
      line += finalize ? format("%.0fs", now - start)
                       : format_eta(per_step * static_cast<double>(target - current));
    } else {
      line = format("%7lld/Unknown", static_cast<long long>(current)) + " " + kBold + format("%.0fs", now - start);
    }
    line += kReset + format_step_time(per_step) + metrics(false);

    // POSIX terminals get Keras's "dynamic display": erase the previous line and redraw in place,
    // blanking whatever a longer previous line left behind.
    size_t width = visible_width(line);
    std::string message(prev_width, '\b');
    message += "\r" + line;
    if (prev_width > width) message += std::string(prev_width - width, ' ');
    if (finalize) message += "\n";
    out << message;
    out.flush();
    prev_width = width;
  }

  int64_t seen = 0;
  bool drawn = false;  // the first update always draws
  double last_update = 0;
  std::optional<double> after_first_step;
  size_t prev_width = 0;
  std::vector<std::string> order;
  Logs values;
};

ProgbarLogger::ProgbarLogger(std::ostream& out, std::function<double()> clock)
    : out_(out), clock_(clock ? std::move(clock) : std::function<double()>(steady_seconds)) {}

void ProgbarLogger::on_train_begin(const Logs&) {
  in_fit_ = true;  // validation inside fit is silent; its val_* keys join the epoch line
  bar_.reset();
}

void ProgbarLogger::on_train_end(const Logs&) { in_fit_ = false; }

void ProgbarLogger::on_epoch_begin(int epoch, const Logs&) {
  int64_t target = params_.steps;
  if (target <= 0 && bar_) target = bar_->target;  // reuse the length an earlier epoch discovered
  bar_ = std::make_shared<Bar>(target, params_.verbose, clock_());
  if (params_.verbose && params_.epochs > 1) {
    out_ << "Epoch " << epoch + 1 << "/" << params_.epochs << "\n";
    out_.flush();
  }
}

void ProgbarLogger::on_train_batch_end(int64_t batch, const Logs& logs) {
  double now = clock_();
  Bar::ensure(bar_, params_.steps, params_.verbose, now);
  bar_->advance(out_, batch, logs, now);
}

void ProgbarLogger::on_epoch_end(int, const Logs& logs) {
  double now = clock_();
  Bar::ensure(bar_, params_.steps, params_.verbose, now);
  bar_->finish(out_, logs, now);
}

void ProgbarLogger::on_test_begin(const Logs&) {
  if (!in_fit_) bar_ = std::make_shared<Bar>(test_steps_, params_.verbose, clock_());
}

void ProgbarLogger::on_test_batch_end(int64_t batch, const Logs& logs) {
  if (in_fit_) return;
  double now = clock_();
  Bar::ensure(bar_, test_steps_, params_.verbose, now);
  bar_->advance(out_, batch, logs, now);
}

void ProgbarLogger::on_test_end(const Logs& logs) {
  if (in_fit_) return;
  double now = clock_();
  Bar::ensure(bar_, test_steps_, params_.verbose, now);
  bar_->finish(out_, logs, now);
}

void ProgbarLogger::on_predict_begin(const Logs&) {
  bar_ = std::make_shared<Bar>(test_steps_, params_.verbose, clock_());
}

// Predictions are not metrics: the predict bar never shows logs.
void ProgbarLogger::on_predict_batch_end(int64_t batch, const Logs&) {
  double now = clock_();
  Bar::ensure(bar_, test_steps_, params_.verbose, now);
  bar_->advance(out_, batch, {}, now);
}

void ProgbarLogger::on_predict_end(const Logs&) {
  double now = clock_();
  Bar::ensure(bar_, test_steps_, params_.verbose, now);
  bar_->finish(out_, {}, now);
}

}  // namespace tandem
