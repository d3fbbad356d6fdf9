#include "io/csv_file.h"

#include <fstream>
#include <iterator>

#include "tandem/errors.h"

namespace tandem::io {

std::vector<CsvRecord> read_csv(const std::string& path, char delimiter) {
  if (delimiter == '"' || delimiter == '\n' || delimiter == '\r')
    throw ValueError("read_csv: " + path + ": the delimiter cannot be a quote or a line break");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the CSV file");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(path + ": cannot read the CSV file");

  std::vector<CsvRecord> records;
  CsvRecord record;
  std::string field;
  int64_t line = 1;
  bool quoted = false;       // inside a quoted field
  bool was_quoted = false;   // the current field was quoted and its closing quote is behind us
  bool record_open = false;  // some text (or a delimiter) of the current record has been seen
  const auto end_field = [&] {
    record.fields.push_back(std::move(field));
    field.clear();
    was_quoted = false;
  };
  const auto end_record = [&] {
    if (record_open) {
      end_field();
      records.push_back(std::move(record));
    }
    record = CsvRecord{};
    record_open = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!record_open) record.line = line;
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"', ++i;
        } else {
          quoted = false, was_quoted = true;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;  // CRLF ends at the LF
    if (c == '\n') {
      end_record();
      ++line;
      continue;
    }
    if (c == delimiter) {
      record_open = true;
      end_field();
      continue;
    }
    if (was_quoted)
      throw Error(path + ": line " + std::to_string(line) + ": field " + std::to_string(record.fields.size() + 1) +
                  ": text after a closing quote (write a quote inside a quoted field as \"\")");
    if (c == '"') {
      if (!field.empty())
        throw Error(path + ": line " + std::to_string(line) + ": field " + std::to_string(record.fields.size() + 1) +
                    ": a quote inside an unquoted field \"" + field + "\" (quote the whole field)");
      quoted = true, record_open = true;
      continue;
    }
    record_open = true;
    field += c;
  }
  if (quoted) throw Error(path + ": line " + std::to_string(record.line) + ": a quoted field is not closed before the end of the file");
  end_record();
  return records;
}

}  // namespace tandem::io
