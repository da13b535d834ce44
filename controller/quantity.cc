#include "controller/quantity.h"

#include <cctype>
#include <cmath>
#include <utility>
#include <vector>

namespace flexcsi::controller {

StatusOr<int64_t> ParseStorageQuantity(const std::string& text) {
  static const std::vector<std::pair<std::string, long double>> kSuffixes = {
      {"Ki", 1024.0L},       {"Mi", 1048576.0L}, {"Gi", 1073741824.0L},
      {"Ti", 1099511627776.0L}, {"Pi", 1125899906842624.0L}, {"Ei", 1152921504606846976.0L},
      {"m", 0.001L},         {"k", 1e3L},        {"M", 1e6L},
      {"G", 1e9L},           {"T", 1e12L},       {"P", 1e15L},
      {"E", 1e18L}};
  const auto bad = [&] {
    return InvalidArgument("quantity \"" + text + "\" is not a size such as 10Gi or 500M");
  };
  size_t i = 0;
  if (i < text.size() && text[i] == '+') ++i;
  const size_t number_start = i;
  bool dot = false, digits = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    if (text[i] == '.') {
      if (dot) return bad();
      dot = true;
    } else {
      digits = true;
    }
    ++i;
  }
  if (!digits || i - number_start > 30) return bad();
  long double value = std::stold(text.substr(number_start, i - number_start));
  std::string suffix = text.substr(i);
  long double factor = 1;
  if (!suffix.empty() && (suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1 &&
      (std::isdigit(static_cast<unsigned char>(suffix[1])) || suffix[1] == '-' ||
       suffix[1] == '+')) {
    size_t used = 0;
    int exponent = 0;
    try {
      exponent = std::stoi(suffix.substr(1), &used);
    } catch (...) {
      return bad();
    }
    if (used != suffix.size() - 1 || exponent > 30 || exponent < -30) return bad();
    factor = std::pow(10.0L, exponent);
  } else if (!suffix.empty()) {
    bool known = false;
    for (const auto& [name, f] : kSuffixes) {
      if (suffix == name) {
        factor = f;
        known = true;
      }
    }
    if (!known) return bad();
  }
  const long double bytes = std::ceil(value * factor - 1e-9L);
  if (bytes > 9.2e18L) return OutOfRange("quantity \"" + text + "\" is too large");
  return static_cast<int64_t>(bytes < 0 ? 0 : bytes);
}

std::string FormatStorageQuantity(int64_t bytes) {
  static const char* kUnits[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
  if (bytes == 0) return "0";
  for (int i = 0; i < 6; ++i) {
    const int64_t unit = int64_t{1} << (10 * (6 - i));
    if (bytes % unit == 0) return std::to_string(bytes / unit) + kUnits[i];
  }
  return std::to_string(bytes);
}

}  // namespace flexcsi::controller
