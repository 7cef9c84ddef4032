#pragma once
// One line of a CSV file split into its fields (RFC 4180 quoting: a quoted field may hold commas
// and doubled quotes), as the measurement files and request traces are read.

#include <string>
#include <vector>

namespace syntorch {

// `unterminated` is set when a quote is left open (a field with a line break, or a file cut off
// mid-row).
std::vector<std::string> split_csv_line(const std::string& line, bool* unterminated = nullptr);

}  // namespace syntorch
