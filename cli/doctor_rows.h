// How every doctor check makes its row, and the one way rows list things: shared by the checks
// of each subject (doctor_*_checks.cc) and the command (doctor_command.cc).
#pragma once

#include <string>
#include <vector>

#include "cli/doctor_command.h"

namespace flexcsi {

inline DoctorCheck Pass(std::string name, std::string detail) {
  return {std::move(name), CheckResult::kPass, std::move(detail), ""};
}
inline DoctorCheck Warn(std::string name, std::string detail, std::string fix) {
  return {std::move(name), CheckResult::kWarn, std::move(detail), std::move(fix)};
}
inline DoctorCheck Fail(std::string name, std::string detail, std::string fix) {
  return {std::move(name), CheckResult::kFail, std::move(detail), std::move(fix)};
}

// `parts` with `sep` between them.
inline std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : sep) + p;
  return s;
}

}  // namespace flexcsi
