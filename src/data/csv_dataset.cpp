// datasets::from_csv: numeric CSV records (io/csv_file) to x float32 (N, features) and y (N,); and
// the column and number handling it shares with csv_source (csv_columns.h).
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "data/csv_columns.h"
#include "tandem/errors.h"

namespace tandem::data {
namespace {

std::string column_text(const datasets::CsvColumn& c) {
  if (const auto* name = std::get_if<std::string>(&c)) return "\"" + *name + "\"";
  return std::to_string(std::get<int64_t>(c));
}

// The 0-based index of column `c` among `count` columns named `names` (empty without a header).
std::size_t resolve(const std::string& where, const datasets::CsvColumn& c, const std::vector<std::string>& names, std::size_t count,
                    const char* what) {
  if (const auto* name = std::get_if<std::string>(&c)) {
    if (names.empty()) throw ValueError(where + what + " " + column_text(c) + " is a name, but the file has no header (header=false); give an index");
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == *name) return i;
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + ("\"" + n + "\"");
    throw ValueError(where + "no column named " + column_text(c) + " for " + what + "; the header has " + known);
  }
  int64_t i = std::get<int64_t>(c);
  if (i < 0) i += static_cast<int64_t>(count);
  if (i < 0 || i >= static_cast<int64_t>(count))
    throw ValueError(where + what + " index " + column_text(c) + " is outside the file's " + std::to_string(count) + " columns");
  return static_cast<std::size_t>(i);
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

CsvLayout csv_layout(const std::string& who, const std::string& path, std::vector<std::string> names, std::size_t count,
                     const datasets::CsvOptions& o) {
  const std::string where = who + ": " + path + ": ";
  CsvLayout l{std::move(names), count, 0, {}};
  l.label = resolve(where, o.label_column, l.names, count, "label_column");
  for (const datasets::CsvColumn& c : o.select_columns) {
    l.features.push_back(resolve(where, c, l.names, count, "select_columns"));
    if (l.features.back() == l.label) throw ValueError(where + "select_columns names the label column " + column_text(c));
  }
  if (o.select_columns.empty())
    for (std::size_t i = 0; i < count; ++i)
      if (i != l.label) l.features.push_back(i);
  return l;
}

void check_csv_fields(const std::string& who, const std::string& path, const io::CsvRecord& r, std::size_t count, bool header) {
  if (r.fields.size() != count)
    throw ValueError(who + ": " + path + ": line " + std::to_string(r.line) + " has " + std::to_string(r.fields.size()) +
                     " fields, expected " + std::to_string(count) + (header ? " (as the header)" : " (as the first row)"));
}

CsvNumber csv_number(const std::string& who, const std::string& path, const io::CsvRecord& r, std::size_t column,
                     const std::vector<std::string>& names) {
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
  throw ValueError(who + ": " + path + ": line " + std::to_string(r.line) + ", column " + where + ": \"" + r.fields[column] +
                   "\" is not a number");
}

bool csv_integer_label(const CsvNumber& l) {
  return l.integer && std::abs(l.value) <= double(std::numeric_limits<int32_t>::max());
}

}  // namespace tandem::data

namespace tandem::datasets {

Dataset from_csv(const std::string& path, const CsvOptions& o) {
  const std::string who = "from_csv";
  std::vector<io::CsvRecord> records = io::read_csv(path, o.delimiter);
  std::vector<std::string> names;
  if (o.header) {
    if (records.empty()) throw ValueError("from_csv: " + path + ": the file is empty; a header was expected (header=true)");
    names = std::move(records.front().fields);
    records.erase(records.begin());
  }
  const std::size_t count = !names.empty() ? names.size() : records.empty() ? 0 : records.front().fields.size();
  if (records.empty()) throw ValueError("from_csv: " + path + ": the file has no data rows");
  for (const io::CsvRecord& r : records) data::check_csv_fields(who, path, r, count, o.header);
  const data::CsvLayout l = data::csv_layout(who, path, std::move(names), count, o);

  const auto n = static_cast<int64_t>(records.size());
  Tensor x(Shape{n, static_cast<int64_t>(l.features.size())}, DType::F32);
  float* xv = x.data<float>();
  std::vector<double> labels(records.size());
  bool all_integer = true;
  for (std::size_t r = 0; r < records.size(); ++r) {
    for (std::size_t f = 0; f < l.features.size(); ++f) xv[r * l.features.size() + f] = data::csv_number(who, path, records[r], l.features[f], l.names).as_float;
    const data::CsvNumber label = data::csv_number(who, path, records[r], l.label, l.names);
    labels[r] = label.value;
    all_integer = all_integer && data::csv_integer_label(label);
  }
  const DType y_type = o.label_dtype.value_or(all_integer ? DType::I32 : DType::F32);
  Tensor y = Tensor::from(Shape{n}, std::span<const double>(labels)).cast(y_type);
  return Dataset(x, y);
}

}  // namespace tandem::datasets
