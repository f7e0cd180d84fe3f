// Numeric CSV: comma-separated numbers, one sample per line, one integer label column. No quoting:
// a dataset that needs it is not numeric.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include "pd/data/readers.h"
#include "pd/io/tensor_file.h"

namespace pd::data {
namespace {

struct Field {
  std::string_view text;  // trimmed
  size_t column;          // 1-based character column of the field's first character
};

std::vector<Field> split_line(std::string_view line) {
  std::vector<Field> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    const size_t end = comma == std::string_view::npos ? line.size() : comma;
    size_t b = start, e = end;
    while (b < e && (line[b] == ' ' || line[b] == '\t')) ++b;
    while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t')) --e;
    out.push_back({line.substr(b, e - b), b + 1});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool blank(std::string_view line) { return line.find_first_not_of(" \t") == std::string_view::npos; }

}  // namespace

CsvTable read_csv(const std::string& path, int64_t label_column, bool header, bool allow_non_finite) {
  return parse_csv(io::read_file_bytes(path), path, label_column, header, allow_non_finite);
}

CsvTable parse_csv(const std::string& text, const std::string& path, int64_t label_column, bool header, bool allow_non_finite) {
  std::istringstream in(text);

  std::vector<float> features;
  std::vector<int64_t> labels;
  int64_t columns = -1, label = -1, rows = 0;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // files written on Windows
    if (header && line_no == 1) continue;
    if (blank(line)) continue;
    const std::vector<Field> fields = split_line(line);
    const auto n = static_cast<int64_t>(fields.size());
    if (columns < 0) {
      columns = n;
      PD_CHECK(columns >= 1, ErrorCode::kParse, "{}:{}: a row needs at least a label column", path, line_no);
      label = label_column < 0 ? label_column + columns : label_column;
      PD_CHECK(label >= 0 && label < columns, ErrorCode::kInvalidArgument,
               "{}: label_column {} is out of range for {} columns", path, label_column, columns);
    }
    PD_CHECK(n == columns, ErrorCode::kParse, "{}:{}:1: expected {} columns, found {} in '{}'", path, line_no,
             columns, n, line);
    for (int64_t c = 0; c < n; ++c) {
      const Field& f = fields[static_cast<size_t>(c)];
      const char* b = f.text.data();
      const char* e = b + f.text.size();
      if (c == label) {
        int64_t v = 0;
        auto [ptr, ec] = std::from_chars(b, e, v);
        PD_CHECK(ec == std::errc() && ptr == e && !f.text.empty(), ErrorCode::kParse,
                 "{}:{}:{}: expected an integer label, found '{}'", path, line_no, f.column, f.text);
        labels.push_back(v);
      } else {
        // from_chars rejects a leading '+', which spreadsheets sometimes write.
        if (b + 1 < e && *b == '+' && b[1] != '-') ++b;
        double v = 0;
        auto [ptr, ec] = std::from_chars(b, e, v);
        PD_CHECK(ec == std::errc() && ptr == e && b != e, ErrorCode::kParse,
                 "{}:{}:{}: expected a number, found '{}'", path, line_no, f.column, f.text);
        // nan/inf (or a value beyond f32's range) would reach the loss many steps later, far from here.
        const auto value = static_cast<float>(v);
        PD_CHECK(allow_non_finite || std::isfinite(value), ErrorCode::kParse,
                 "{}:{}:{}: '{}' is not a finite f32 feature value; clean the data, or set allow_non_finite: true in the "
                 "data source to train on it anyway",
                 path, line_no, f.column, f.text);
        features.push_back(value);
      }
    }
    ++rows;
  }
  PD_CHECK(rows > 0, ErrorCode::kParse, "{}: no data rows", path);

  CsvTable table;
  table.features = Tensor::from_vector<float>(features, {rows, columns - 1});
  table.labels = Tensor::from_vector<int64_t>(labels, {rows});
  return table;
}

}  // namespace pd::data
