#include "io/csv_file.h"

#include <fstream>
#include <iterator>

#include "tandem/errors.h"

namespace tandem::io {

CsvParser::CsvParser(std::string path, char delimiter, OnRecord on_record, int64_t first_offset, int64_t first_line)
    : path_(std::move(path)), delimiter_(delimiter), on_record_(std::move(on_record)), at_(first_offset), line_(first_line) {
  if (delimiter == '"' || delimiter == '\n' || delimiter == '\r')
    throw ValueError("read_csv: " + path_ + ": the delimiter cannot be a quote or a line break");
}

void CsvParser::end_field() {
  record_.fields.push_back(std::move(field_));
  field_.clear();
  was_quoted_ = false;
}

void CsvParser::end_record() {
  if (record_open_) {
    end_field();
    on_record_(record_, record_offset_);
  }
  record_ = CsvRecord{};
  record_open_ = false;
}

void CsvParser::feed(std::string_view bytes) {
  for (const char c : bytes) {
    const int64_t at = at_++;
    if (quote_pending_) {
      quote_pending_ = false;
      if (c == '"') {  // a doubled quote inside a quoted field
        field_ += '"';
        continue;
      }
      quoted_ = false, was_quoted_ = true;  // the closing quote; c is read after it
    } else if (cr_pending_) {
      cr_pending_ = false;
      if (c != '\n') step('\r', at - 1);  // a lone CR is text; CRLF ends at the LF
    }
    if (!quoted_ && c == '\r') {
      if (!record_open_) record_.line = line_, record_offset_ = at;
      cr_pending_ = true;
      continue;
    }
    step(c, at);
  }
}

void CsvParser::step(char c, int64_t at) {
  if (!record_open_) record_.line = line_, record_offset_ = at;
  if (quoted_) {
    if (c == '"') {
      quote_pending_ = true;
    } else {
      if (c == '\n') ++line_;
      field_ += c;
    }
    return;
  }
  if (c == '\n') {
    end_record();
    ++line_;
    return;
  }
  if (c == delimiter_) {
    record_open_ = true;
    end_field();
    return;
  }
  if (was_quoted_)
    throw Error(path_ + ": line " + std::to_string(line_) + ": field " + std::to_string(record_.fields.size() + 1) +
                ": text after a closing quote (write a quote inside a quoted field as \"\")");
  if (c == '"') {
    if (!field_.empty())
      throw Error(path_ + ": line " + std::to_string(line_) + ": field " + std::to_string(record_.fields.size() + 1) +
                  ": a quote inside an unquoted field \"" + field_ + "\" (quote the whole field)");
    quoted_ = true, record_open_ = true;
    return;
  }
  record_open_ = true;
  field_ += c;
}

void CsvParser::finish() {
  if (quote_pending_) quote_pending_ = false, quoted_ = false, was_quoted_ = true;
  if (cr_pending_) cr_pending_ = false, step('\r', at_ - 1);
  if (quoted_) throw Error(path_ + ": line " + std::to_string(record_.line) + ": a quoted field is not closed before the end of the file");
  end_record();
}

std::vector<CsvRecord> read_csv(const std::string& path, char delimiter) {
  std::vector<CsvRecord> records;
  CsvParser parser(path, delimiter, [&](CsvRecord& r, int64_t) { records.push_back(std::move(r)); });
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the CSV file");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(path + ": cannot read the CSV file");
  parser.feed(text);
  parser.finish();
  return records;
}

}  // namespace tandem::io
