#include "kube/backoff.h"

#include <curl/curl.h>

#include <cctype>
#include <ctime>

namespace flexcsi::kube {

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds cap)
    : initial_(initial), cap_(cap), random_(std::random_device{}()) {}

std::chrono::milliseconds Backoff::Next() {
  std::chrono::milliseconds wait = initial_;
  for (int i = 0; i < attempt_ && wait < cap_; ++i) wait *= 2;
  if (wait > cap_) wait = cap_;
  ++attempt_;
  std::uniform_int_distribution<int64_t> jitter(0, wait.count() / 2);
  return wait + std::chrono::milliseconds(jitter(random_));
}

std::optional<std::chrono::milliseconds> ParseRetryAfter(const std::string& value) {
  size_t begin = value.find_first_not_of(" \t");
  size_t end = value.find_last_not_of(" \t\r\n");
  if (begin == std::string::npos) return std::nullopt;
  std::string v = value.substr(begin, end - begin + 1);
  bool digits = !v.empty() && v.size() <= 9;
  for (char c : v) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (digits) return std::chrono::seconds(std::stol(v));
  time_t when = curl_getdate(v.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  time_t now = std::time(nullptr);
  return std::chrono::seconds(when > now ? when - now : 0);
}

}  // namespace flexcsi::kube
