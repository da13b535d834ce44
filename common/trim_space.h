// TrimSpace: a string without its leading and trailing whitespace (spaces, tabs, line ends).
#pragma once

#include <string>

namespace flexcsi {

inline std::string TrimSpace(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace flexcsi
