// datasets::from_csv: numeric CSV records (io/csv_file) to x float32 (N, features) and y (N,).
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "io/csv_file.h"
#include "tandem/data_files.h"
#include "tandem/errors.h"

namespace tandem::datasets {
namespace {

std::string column_text(const CsvColumn& c) {
  if (const auto* name = std::get_if<std::string>(&c)) return "\"" + *name + "\"";
  return std::to_string(std::get<int64_t>(c));
}

// The 0-based index of column `c` among `count` columns named `names` (empty without a header).
std::size_t resolve(const std::string& path, const CsvColumn& c, const std::vector<std::string>& names, std::size_t count,
                    const char* what) {
  if (const auto* name = std::get_if<std::string>(&c)) {
    if (names.empty()) throw ValueError("from_csv: " + path + ": " + what + " " + column_text(c) + " is a name, but the file has no header (header=false); give an index");
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == *name) return i;
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + ("\"" + n + "\"");
    throw ValueError("from_csv: " + path + ": no column named " + column_text(c) + " for " + what + "; the header has " + known);
  }
  int64_t i = std::get<int64_t>(c);
  if (i < 0) i += static_cast<int64_t>(count);
  if (i < 0 || i >= static_cast<int64_t>(count))
    throw ValueError("from_csv: " + path + ": " + what + " index " + column_text(c) + " is outside the file's " +
                     std::to_string(count) + " columns");
  return static_cast<std::size_t>(i);
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

struct Number {
  double value;
  float as_float;  // parsed as float32 directly: no double rounding on the way
  bool integer;  // written as an integer ("3", "-7"), not "3.0" or "3e0"
};

Number parse(const std::string& path, const io::CsvRecord& r, std::size_t column, const std::vector<std::string>& names) {
  const std::string text = trimmed(r.fields[column]);
  const char* b = text.data();
  const char* e = b + text.size();
  if (!text.empty() && *b == '+') ++b;  // from_chars takes no '+'
  int64_t i = 0;
  if (auto [p, ec] = std::from_chars(b, e, i); ec == std::errc() && p == e && b != e) return {double(i), static_cast<float>(i), true};
  double d = 0;
  float f = 0;
  if (auto [p, ec] = std::from_chars(b, e, d); ec == std::errc() && p == e && b != e) {
    const auto parsed = std::from_chars(b, e, f);  // out of float32's range: the double, rounded
    return {d, parsed.ec == std::errc() ? f : static_cast<float>(d), false};
  }
  const std::string where = names.empty() ? std::to_string(column) : std::to_string(column) + " (\"" + names[column] + "\")";
  throw ValueError("from_csv: " + path + ": line " + std::to_string(r.line) + ", column " + where + ": \"" + r.fields[column] +
                   "\" is not a number");
}

}  // namespace

Dataset from_csv(const std::string& path, const CsvOptions& o) {
  std::vector<io::CsvRecord> records = io::read_csv(path, o.delimiter);
  std::vector<std::string> names;
  if (o.header) {
    if (records.empty()) throw ValueError("from_csv: " + path + ": the file is empty; a header was expected (header=true)");
    names = std::move(records.front().fields);
    records.erase(records.begin());
  }
  const std::size_t count = !names.empty() ? names.size() : records.empty() ? 0 : records.front().fields.size();
  if (records.empty()) throw ValueError("from_csv: " + path + ": the file has no data rows");
  for (const io::CsvRecord& r : records)
    if (r.fields.size() != count)
      throw ValueError("from_csv: " + path + ": line " + std::to_string(r.line) + " has " + std::to_string(r.fields.size()) +
                       " fields, expected " + std::to_string(count) + (o.header ? " (as the header)" : " (as the first row)"));
  const std::size_t label = resolve(path, o.label_column, names, count, "label_column");
  std::vector<std::size_t> features;
  for (const CsvColumn& c : o.select_columns) {
    features.push_back(resolve(path, c, names, count, "select_columns"));
    if (features.back() == label)
      throw ValueError("from_csv: " + path + ": select_columns names the label column " + column_text(c));
  }
  if (o.select_columns.empty())
    for (std::size_t i = 0; i < count; ++i)
      if (i != label) features.push_back(i);

  const auto n = static_cast<int64_t>(records.size());
  Tensor x(Shape{n, static_cast<int64_t>(features.size())}, DType::F32);
  float* xv = x.data<float>();
  std::vector<double> labels(records.size());
  bool all_integer = true;
  for (std::size_t r = 0; r < records.size(); ++r) {
    for (std::size_t f = 0; f < features.size(); ++f)
      xv[r * features.size() + f] = parse(path, records[r], features[f], names).as_float;
    const Number l = parse(path, records[r], label, names);
    labels[r] = l.value;
    all_integer = all_integer && l.integer && std::abs(l.value) <= double(std::numeric_limits<int32_t>::max());
  }
  const DType y_type = o.label_dtype.value_or(all_integer ? DType::I32 : DType::F32);
  Tensor y = Tensor::from(Shape{n}, std::span<const double>(labels)).cast(y_type);
  return Dataset(x, y);
}

}  // namespace tandem::datasets
