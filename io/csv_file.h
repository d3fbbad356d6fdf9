// Reads a CSV file into records of text fields, per RFC 4180: fields may be quoted with '"', a
// quoted field may hold the delimiter, line breaks and doubled quotes (""), and records end with
// LF or CRLF. Each record keeps the line it starts on, for error messages.
//
// Hand-written rather than Debian's libcsv: libcsv reports neither the line nor the column of a
// field, and the errors here must name both; the format is small enough to read in one sitting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::io {

struct CsvRecord {
  int64_t line = 0;  // 1-based line of the file where the record starts
  std::vector<std::string> fields;
};

// Throws tandem::Error naming the file and line when the file cannot be read, a
// quoted field is not closed, or text follows a closing quote. Blank lines are skipped.
std::vector<CsvRecord> read_csv(const std::string& path, char delimiter = ',');

}  // namespace tandem::io
