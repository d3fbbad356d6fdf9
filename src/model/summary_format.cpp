// Keras 3 prints model.summary() through a `rich` table. This file reproduces what rich renders
// for Keras's table (HEAVY_HEAD box, show_lines=True, fixed column widths) as plain text, which is
// what Keras produces whenever output is captured or not a colour terminal.
#include "model/summary_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace tandem::detail {
namespace {

// Character count of UTF-8 text (every character is taken as one terminal cell: names, shapes
// and box glyphs are all narrow).
size_t cells(std::string_view s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// The first `n` characters of `s`, never cutting a UTF-8 sequence.
std::string take_cells(std::string_view s, size_t n) {
  size_t i = 0;
  for (size_t seen = 0; i < s.size(); ++i) {
    bool starts_char = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    if (starts_char && seen++ == n) break;
  }
  return std::string(s.substr(0, i));
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string repeat(std::string_view glyph, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += glyph;
  return out;
}

// Keras asks for columns ending at `positions` * line_length, but rich adds one space of padding
// on each side of every cell plus the vertical borders, so the request overflows the table width.
// rich then takes the excess from the columns evenly (its ratio_reduce, which rounds like
// Python's round(): half to even). Returns each column's width including its padding.
std::vector<size_t> column_widths(int line_length, const std::vector<double>& positions) {
  std::vector<int64_t> widths;
  int64_t placed = 0;
  for (double p : positions) {
    int64_t w = static_cast<int64_t>(p * line_length) - placed;
    placed += w;
    widths.push_back(w + 2);
  }
  int64_t used = static_cast<int64_t>(widths.size()) + 1;  // borders
  for (int64_t w : widths) used += w;
  int64_t remaining = used - line_length;
  for (size_t i = 0; remaining > 0 && i < widths.size(); ++i) {
    double share = static_cast<double>(remaining) / static_cast<double>(widths.size() - i);
    int64_t cut = std::min(widths[i], static_cast<int64_t>(std::nearbyint(share)));
    widths[i] -= cut;
    remaining -= cut;
  }
  return {widths.begin(), widths.end()};
}

// rich's word wrap: a word is its leading blanks, the non-blank run and the trailing blanks; a
// word whose non-blank part does not fit in what is left of the line starts a new line. Words
// longer than a whole line are not split here (they get an ellipsis in fit_line).
std::vector<std::string> wrap_words(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  size_t line_start = 0, used = 0, pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    while (pos < text.size() && is_blank(text[pos])) ++pos;
    size_t word_begin = pos;
    while (pos < text.size() && !is_blank(text[pos])) ++pos;
    if (pos == word_begin) break;  // only blanks are left: they stay on the current line
    size_t visible = cells(std::string_view(text).substr(start, pos - start));
    size_t word_end = pos;
    while (pos < text.size() && is_blank(text[pos])) ++pos;
    size_t whole = visible + (pos - word_end);
    if (used + visible > width && start > line_start) {
      lines.push_back(text.substr(line_start, start - line_start));
      line_start = start;
      used = whole;
    } else {
      used += whole;
    }
  }
  lines.push_back(text.substr(line_start));
  return lines;
}

std::string rstrip(std::string s) {
  while (!s.empty() && is_blank(s.back())) s.pop_back();
  return s;
}

// One wrapped line justified into `width` cells; overlong lines end in "…" as rich's default
// "ellipsis" overflow does.
std::string fit_line(std::string line, size_t width, bool right) {
  if (right) {
    line = rstrip(line);
  } else {
    // rich only drops the trailing blanks that stick out past the cell.
    while (cells(line) > width && !line.empty() && is_blank(line.back())) line.pop_back();
  }
  if (cells(line) > width) line = take_cells(line, width - 1) + "…";
  std::string pad(width - cells(line), ' ');
  return right ? pad + line : line + pad;
}

struct Glyphs {
  std::string_view left, fill, mid, right;
};
// rich's box.HEAVY_HEAD, one entry per kind of horizontal rule.
constexpr Glyphs kTop{"┏", "━", "┳", "┓"};
constexpr Glyphs kHeadRule{"┡", "━", "╇", "┩"};
constexpr Glyphs kRowRule{"├", "─", "┼", "┤"};
constexpr Glyphs kBottom{"└", "─", "┴", "┘"};

std::string rule(const Glyphs& g, const std::vector<size_t>& widths) {
  std::string out(g.left);
  for (size_t i = 0; i < widths.size(); ++i) {
    if (i) out += g.mid;
    out += repeat(g.fill, widths[i]);
  }
  return out.append(g.right).append("\n");
}

// A table row; cells that wrap make the row taller, the other cells are blank-filled below.
std::string row(const std::vector<std::string>& texts, const std::vector<size_t>& widths,
                const std::vector<bool>& right, std::string_view bar) {
  std::vector<std::vector<std::string>> wrapped;
  size_t height = 1;
  for (size_t i = 0; i < texts.size(); ++i) {
    wrapped.push_back(wrap_words(texts[i], widths[i] - 2));
    height = std::max(height, wrapped.back().size());
  }
  std::string out;
  for (size_t line = 0; line < height; ++line) {
    out += bar;
    for (size_t i = 0; i < texts.size(); ++i) {
      std::string text = line < wrapped[i].size() ? wrapped[i][line] : "";
      out.append(" ").append(fit_line(text, widths[i] - 2, right[i])).append(" ").append(bar);
    }
    out += "\n";
  }
  return out;
}

std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                  const std::vector<bool>& right, const std::vector<size_t>& widths) {
  std::string out = rule(kTop, widths) + row(header, widths, right, "┃") + rule(kHeadRule, widths);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (r) out += rule(kRowRule, widths);
    out += row(rows[r], widths, right, "│");
  }
  return out + rule(kBottom, widths);
}

std::string footer(const char* label, int64_t count, int64_t bytes) {
  return std::string(" ") + label + " params: " + group_thousands(count) + " (" +
         readable_bytes(static_cast<double>(bytes)) + ")\n";
}

}  // namespace

std::string group_thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string readable_bytes(double bytes) {
  // Same loop as Keras's readable_memory_size, including its 1024 steps.
  static constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  char buf[64];
  for (const char* unit : kUnits) {
    if (bytes / 1024 < 1) {
      std::snprintf(buf, sizeof buf, "%.2f %s", bytes, unit);
      return buf;
    }
    bytes /= 1024;
  }
  std::snprintf(buf, sizeof buf, "%.2f PB", bytes);
  return buf;
}

std::string format_summary(const std::string& model_name, const std::vector<SummaryRow>& rows,
                           bool functional, const SummaryTotals& totals) {
  // Keras's defaults: line length 88 and column ends at 45%/80% for sequential-like models,
  // 108 and 30%/56%/74% when the graph branches and a "Connected to" column is needed.
  std::vector<std::string> header = {"Layer (type)", "Output Shape", "Param #"};
  std::vector<bool> right = {false, false, true};
  std::vector<size_t> widths = column_widths(88, {0.45, 0.80, 1.0});
  if (functional) {
    header.push_back("Connected to");
    right.push_back(false);
    widths = column_widths(108, {0.30, 0.56, 0.74, 1.0});
  }

  std::vector<std::vector<std::string>> texts;
  for (const SummaryRow& layer : rows) {
    texts.push_back({layer.name + " (" + layer.class_name + ")", layer.output_shape, group_thousands(layer.params)});
    if (functional) {
      std::string links;
      for (const std::string& link : layer.connected_to) links += (links.empty() ? "" : ", ") + link;
      texts.back().push_back(links.empty() ? "-" : links);
    }
  }
  std::string out = "Model: \"" + model_name + "\"\n" + table(header, texts, right, widths);
  int64_t total = totals.trainable + totals.non_trainable + totals.optimizer;
  int64_t total_bytes = totals.trainable_bytes + totals.non_trainable_bytes + totals.optimizer_bytes;
  out += footer("Total", total, total_bytes);
  out += footer("Trainable", totals.trainable, totals.trainable_bytes);
  out += footer("Non-trainable", totals.non_trainable, totals.non_trainable_bytes);
  if (totals.optimizer > 0) out += footer("Optimizer", totals.optimizer, totals.optimizer_bytes);
  return out;
}

std::string format_placement(const std::string& title, const std::vector<std::string>& header,
                             const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                             const std::vector<std::string>& notes) {
  std::vector<double> ends;  // 100 characters; the first column (names) twice as wide
  for (size_t i = 1; i <= header.size(); ++i) ends.push_back(static_cast<double>(i + 1) / static_cast<double>(header.size() + 1));
  std::string out = "\n" + title + "\n" + table(header, rows, right, column_widths(100, ends));
  for (const std::string& note : notes) out += " " + note + "\n";
  return out;
}

std::string format_memory(const std::vector<DeviceMemory>& memory, int64_t batch_rows) {
  if (memory.empty()) return "";
  std::vector<std::vector<std::string>> rows;
  for (const DeviceMemory& m : memory)
    rows.push_back({m.device, readable_bytes(double(m.weights)), readable_bytes(double(m.optimizer_state)), readable_bytes(double(m.arena)),
                    readable_bytes(double(m.total()))});
  return format_placement("Memory per device (the training step of " + std::to_string(batch_rows) + " rows)",
                          {"Device", "Weights", "Optimizer", "Arena", "Total"}, rows, {false, true, true, true, true},
                          {"Optimizer: its step count, learning rate and slots; arena: the planned activations, gradients and "
                           "temporaries of one step"});
}

}  // namespace tandem::detail
