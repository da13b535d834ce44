// A plain-text table for terminal output: columns padded to their widest cell, two spaces
// between columns, no trailing spaces. Used by `flexcsi doctor`, `state`, `snapshot` and `migrate`.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace flexcsi {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}

  // Missing cells print empty; extra cells are kept and widen the table.
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t rows() const { return rows_.size(); }

  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace flexcsi
