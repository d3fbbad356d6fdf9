// What from_csv and csv_source share: which columns are features and label, and how a field
// becomes a number, so a streamed CSV row equals from_csv's bit for bit.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "io/csv_file.h"
#include "tandem/data_files.h"

namespace tandem::data {

struct CsvLayout {
  std::vector<std::string> names;  // from the header; empty without one
  std::size_t count = 0;           // fields per record
  std::size_t label = 0;
  std::vector<std::size_t> features;
};

// Resolves options' label and feature columns against the header `names` (empty without a header)
// and `count` fields. ValueError starting with "`who`: `path`: ".
CsvLayout csv_layout(const std::string& who, const std::string& path, std::vector<std::string> names, std::size_t count,
                     const datasets::CsvOptions& options);

// ValueError naming the line when `record` does not have `count` fields.
void check_csv_fields(const std::string& who, const std::string& path, const io::CsvRecord& record, std::size_t count, bool header);

struct CsvNumber {
  double value;
  float as_float;  // parsed as float32 directly: no double rounding on the way
  bool integer;    // written as an integer ("3", "-7"), not "3.0" or "3e0"
};
// Field `column` of `record` as a number; ValueError naming the line, the column and the text.
CsvNumber csv_number(const std::string& who, const std::string& path, const io::CsvRecord& record, std::size_t column,
                     const std::vector<std::string>& names);

// Whether a label makes from_csv's default label dtype int32 (every label an integer within int32).
bool csv_integer_label(const CsvNumber& label);

}  // namespace tandem::data
