// Reads a CSV file into records of text fields, per RFC 4180: fields may be quoted with '"', a
// quoted field may hold the delimiter, line breaks and doubled quotes (""), and records end with
// LF or CRLF. Each record keeps the line it starts on, for error messages.
//
// Hand-written rather than Debian's libcsv: libcsv reports neither the line nor the column of a
// field, and the errors here must name both; the format is small enough to read in one sitting.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::io {

struct CsvRecord {
  int64_t line = 0;  // 1-based line of the file where the record starts
  std::vector<std::string> fields;
};

// Throws tandem::Error naming the file and line when the file cannot be read, a
// quoted field is not closed, or text follows a closing quote. Blank lines are skipped.
std::vector<CsvRecord> read_csv(const std::string& path, char delimiter = ',');

// The parser read_csv uses, fed a file in pieces of any size (a file larger than memory, or one
// record read back by its offset). Each complete record goes to `on_record` with the byte offset
// where it starts (counted from `first_offset`). Errors as read_csv's.
class CsvParser {
 public:
  using OnRecord = std::function<void(CsvRecord& record, int64_t offset)>;
  CsvParser(std::string path, char delimiter, OnRecord on_record, int64_t first_offset = 0, int64_t first_line = 1);
  void feed(std::string_view bytes);
  void finish();  // the end of the input: ends the last record

 private:
  void step(char c, int64_t at);  // one character, with no look-ahead pending
  void end_field();
  void end_record();
  std::string path_;
  char delimiter_;
  OnRecord on_record_;
  int64_t at_;  // the offset of the next byte fed
  int64_t line_;
  CsvRecord record_;
  std::string field_;
  int64_t record_offset_ = 0;
  bool quoted_ = false;         // inside a quoted field
  bool was_quoted_ = false;     // the current field was quoted and its closing quote is behind us
  bool record_open_ = false;    // some text (or a delimiter) of the current record has been seen
  bool quote_pending_ = false;  // a quote inside a quoted field: "" or the closing quote, by the next byte
  bool cr_pending_ = false;     // a CR outside quotes: dropped before an LF, text otherwise
};

}  // namespace tandem::io
