// A History as a table (CSV, JSON) or as charts (SVG, or an HTML page holding it), written by hand:
// one chart per metric family, the training and validation series on the same axes.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "callbacks/checkpoint_path.h"
#include "io/atomic_file.h"
#include "tandem/errors.h"
#include "tandem/plot.h"

namespace tandem {
namespace {

std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// Every key must have a value for every epoch: the rows of the table and the points of the charts
// are per epoch.
void check(const History& h, const char* what) {
  if (h.epoch.empty())
    throw ValueError(std::string(what) + ": the History has no epochs; pass the History that fit() returned after at least one epoch");
  for (const auto& [key, values] : h.history)
    if (values.size() != h.epoch.size())
      throw ValueError(std::string(what) + ": History key \"" + key + "\" has " + std::to_string(values.size()) + " values for " +
                       std::to_string(h.epoch.size()) + " epochs");
}

void write_text(const std::string& path, const std::string& text) {
  io::write_atomically(path, [&](const std::string& temp) { io::write_file(temp, text.data(), text.size()); });
}

std::string xml_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Round tick values (1, 2 or 5 times a power of ten apart), about `n` of them. Values: the range
// widens to whole steps, `decimals` shows each step exactly. Epochs (integers): the range stays
// the epochs', the ticks are the whole steps inside it.
struct Ticks {
  double lo, hi, step, first;
  int decimals;
};
Ticks nice_ticks(double lo, double hi, int n, bool integers) {
  if (!(hi > lo)) {  // one value: a little room around it
    const double pad = integers ? 0.5 : lo != 0 ? std::abs(lo) * 0.1 : 1.0;
    lo -= pad, hi += pad;
  }
  const double raw = (hi - lo) / n, power = std::pow(10.0, std::floor(std::log10(raw))), f = raw / power;
  double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * power;
  if (integers) {
    step = std::max(1.0, std::round(step));
    return {lo, hi, step, std::ceil(lo / step - 1e-9) * step, 0};
  }
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  const double margin = (hi - lo) * 0.04;  // keeps the extreme markers off the frame
  lo = std::floor((lo - margin) / step + 1e-9) * step;
  return {lo, std::ceil((hi + margin) / step - 1e-9) * step, step, lo, decimals};
}

// One chart: a family's series ("loss" and "val_loss") against the epochs.
constexpr double kWidth = 480, kHeight = 320, kLeft = 64, kRight = 20, kTop = 56, kBottom = 48;
constexpr double kDigit = 7;  // the width of a tick label's character at font size 12, about
constexpr double kInset = 12;  // between the frame and the first and last epochs' markers
const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"};  // training, validation, ...

std::string chart(const History& h, const std::string& family, const std::vector<std::string>& keys, double x0, double y0) {
  std::vector<double> epochs;  // as the progress bar numbers them, from 1
  for (int e : h.epoch) epochs.push_back(e + 1.0);
  double lo = INFINITY, hi = -INFINITY;
  for (const std::string& k : keys)
    for (double v : h.history.at(k))
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (lo > hi) lo = 0, hi = 1;  // nothing finite to show
  const Ticks ys = nice_ticks(lo, hi, 5, false);
  const Ticks xs = nice_ticks(epochs.front(), epochs.back(), std::min<int>(8, static_cast<int>(epochs.size())), true);
  // The y axis's title goes left of its widest tick label; long labels (0.00105) widen the margin.
  const double label_px = kDigit * static_cast<double>(std::max(fixed(ys.first, ys.decimals).size(), fixed(ys.hi, ys.decimals).size()));
  const double margin = std::max(kLeft, label_px + 36);
  const double pw = kWidth - margin - kRight, ph = kHeight - kTop - kBottom, left = x0 + margin, top = y0 + kTop;
  auto px = [&](double e) { return fixed(left + kInset + (e - xs.lo) / (xs.hi - xs.lo) * (pw - 2 * kInset), 1); };
  auto py = [&](double v) { return fixed(top + ph - (v - ys.lo) / (ys.hi - ys.lo) * ph, 1); };

  std::string s = "<g class=\"chart\" data-family=\"" + xml_escaped(family) + "\">\n";
  s += "<text x=\"" + fixed(left, 1) + "\" y=\"" + fixed(y0 + 22, 1) + "\" font-size=\"15\" font-weight=\"bold\">" + xml_escaped(family) + "</text>\n";
  // Grid lines and tick labels, then the frame over them.
  for (int i = 0; ys.first + i * ys.step <= ys.hi + ys.step / 2; ++i) {
    const double v = std::abs(ys.first + i * ys.step) < ys.step * 1e-6 ? 0.0 : ys.first + i * ys.step;  // no "-0.00"
    s += "<line x1=\"" + fixed(left, 1) + "\" x2=\"" + fixed(left + pw, 1) + "\" y1=\"" + py(v) + "\" y2=\"" + py(v) + "\" stroke=\"#e5e5e5\"/>\n";
    s += "<text x=\"" + fixed(left - 6, 1) + "\" y=\"" + py(v) + "\" dy=\"0.35em\" text-anchor=\"end\">" + fixed(v, ys.decimals) + "</text>\n";
  }
  for (double e = xs.first; e <= xs.hi + 1e-9; e += xs.step) {
    s += "<line x1=\"" + px(e) + "\" x2=\"" + px(e) + "\" y1=\"" + fixed(top + ph, 1) + "\" y2=\"" + fixed(top + ph + 5, 1) + "\" stroke=\"#333\"/>\n";
    s += "<text x=\"" + px(e) + "\" y=\"" + fixed(top + ph + 18, 1) + "\" text-anchor=\"middle\">" + fixed(e, 0) + "</text>\n";
  }
  s += "<rect x=\"" + fixed(left, 1) + "\" y=\"" + fixed(top, 1) + "\" width=\"" + fixed(pw, 1) + "\" height=\"" + fixed(ph, 1) +
       "\" fill=\"none\" stroke=\"#333\"/>\n";
  s += "<text x=\"" + fixed(left + pw / 2, 1) + "\" y=\"" + fixed(top + ph + 38, 1) + "\" text-anchor=\"middle\">epoch</text>\n";
  s += "<text transform=\"translate(" + fixed(left - label_px - 18, 1) + " " + fixed(top + ph / 2, 1) + ") rotate(-90)\" text-anchor=\"middle\">" +
       xml_escaped(family) + "</text>\n";

  // Each series, and its entry in the legend row under the title (entries as wide as their names).
  double legend_x = left;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string colour = kColours[i % 4], key = xml_escaped(keys[i]);
    const std::vector<double>& values = h.history.at(keys[i]);
    std::string points, markers;
    for (std::size_t e = 0; e < values.size(); ++e) {
      if (!std::isfinite(values[e])) continue;
      points.append(points.empty() ? "" : " ").append(px(epochs[e])).append(",").append(py(values[e]));
      markers += "<circle cx=\"" + px(epochs[e]) + "\" cy=\"" + py(values[e]) + "\" r=\"3.5\" fill=\"" + colour + "\"><title>" + key +
                 ", epoch " + fixed(epochs[e], 0) + ": " + callbacks::detail::python_float_repr(values[e]) + "</title></circle>\n";
    }
    s += "<g class=\"series\" data-key=\"" + key + "\">\n<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + colour +
         "\" stroke-width=\"2\"/>\n" + markers + "</g>\n";
    const std::string ly = fixed(y0 + 40, 1);
    s += "<g class=\"legend\"><line x1=\"" + fixed(legend_x, 1) + "\" x2=\"" + fixed(legend_x + 20, 1) + "\" y1=\"" + ly + "\" y2=\"" + ly +
         "\" stroke=\"" + colour + "\" stroke-width=\"2\"/><rect x=\"" + fixed(legend_x + 7, 1) + "\" y=\"" + fixed(y0 + 37, 1) +
         "\" width=\"6\" height=\"6\" fill=\"" + colour + "\"/><text x=\"" + fixed(legend_x + 26, 1) + "\" y=\"" + ly + "\" dy=\"0.35em\">" + key +
         "</text></g>\n";
    legend_x += 26 + 6.5 * static_cast<double>(keys[i].size()) + 18;
  }
  return s + "</g>\n";
}

// The charts side by side, two to a row: "loss" first, then the other families by name; in each,
// the training key before its "val_" twin.
std::string report_svg(const History& h) {
  std::map<std::string, std::vector<std::string>> families;
  for (const auto& [key, values] : h.history) {
    const bool validation = key.starts_with("val_");
    auto& keys = families[validation ? key.substr(4) : key];
    keys.insert(validation ? keys.end() : keys.begin(), key);
  }
  std::vector<std::string> order;
  if (families.count("loss")) order.push_back("loss");
  for (const auto& [family, keys] : families)
    if (family != "loss") order.push_back(family);
  const std::size_t columns = std::min<std::size_t>(2, std::max<std::size_t>(1, order.size()));
  const std::size_t rows = (order.size() + columns - 1) / columns;
  const std::string w = fixed(kWidth * static_cast<double>(columns), 0), ht = fixed(kHeight * static_cast<double>(std::max<std::size_t>(rows, 1)), 0);
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + ht + "\" viewBox=\"0 0 " + w + " " + ht +
                  "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (std::size_t i = 0; i < order.size(); ++i)
    s += chart(h, order[i], families[order[i]], kWidth * static_cast<double>(i % columns), kHeight * static_cast<double>(i / columns));
  return s + "</svg>\n";
}

}  // namespace

void write_history(const History& history, const std::string& path) {
  check(history, "write_history");
  const std::string ext = extension_of(path);
  std::string text;
  if (ext == ".csv") {  // CSVLogger's layout
    text = "epoch";
    for (const auto& [key, values] : history.history) text.append(",").append(key);
    text += "\n";
    for (std::size_t e = 0; e < history.epoch.size(); ++e) {
      text += std::to_string(history.epoch[e]);
      for (const auto& [key, values] : history.history) text.append(",").append(callbacks::detail::python_float_repr(values[e]));
      text += "\n";
    }
  } else if (ext == ".json") {
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [key, series] : history.history) {
      nlohmann::json& list = values[key] = nlohmann::json::array();
      for (double v : series) list.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
    }
    text = nlohmann::json{{"epoch", history.epoch}, {"history", values}}.dump(2) + "\n";
  } else {
    throw ValueError("write_history: \"" + path + "\": the extension must be .csv or .json");
  }
  write_text(path, text);
}

void plot_history(const History& history, const std::string& path) {
  check(history, "plot_history");
  const std::string ext = extension_of(path);
  if (ext == ".svg") {
    write_text(path, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + report_svg(history));
  } else if (ext == ".html" || ext == ".htm") {
    std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Training report</title></head>\n";
    page += "<body style=\"font-family: Helvetica, Arial, sans-serif\">\n<h1>Training report</h1>\n<p>";
    page += std::to_string(history.epoch.size()) + (history.epoch.size() == 1 ? " epoch" : " epochs") + "</p>\n";
    write_text(path, page + report_svg(history) + "</body>\n</html>\n");
  } else {
    throw ValueError("plot_history: \"" + path + "\": the extension must be .svg or .html");
  }
}

}  // namespace tandem
