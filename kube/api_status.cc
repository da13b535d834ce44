#include "kube/api_status.h"

#include <nlohmann/json.hpp>

#include "kube/kube_client.h"

namespace flexcsi::kube {
namespace {

// A reason is one CamelCase word ("NotFound", "AlreadyExists"). Requiring a lower-case second
// letter keeps HTTP verbs ("GET https://...: ...") of transport failures from looking like one.
bool LooksLikeReason(const std::string& word) {
  if (word.size() < 2 || word[0] < 'A' || word[0] > 'Z' || word[1] < 'a' || word[1] > 'z') {
    return false;
  }
  for (char c : word) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
  }
  return true;
}

}  // namespace

std::string DefaultReasonForHttpCode(long http_code) {
  // client-go (rest/request.go, newUnstructuredResponseError -> errors.NewGenericServerResponse)
  switch (http_code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "Unknown";
  }
}

Code CodeForHttpAnswer(long http_code, const std::string& reason) {
  switch (http_code) {
    case 400:
      return Code::kInvalidArgument;
    case 401:
      return Code::kUnauthenticated;
    case 403:
      return Code::kPermissionDenied;
    case 404:
      return Code::kNotFound;
    case 405:
      return Code::kUnimplemented;
    case 409:
      return reason == "AlreadyExists" ? Code::kAlreadyExists : Code::kAborted;
    case 410:
      return Code::kOutOfRange;
    case 413:
      return Code::kResourceExhausted;
    case 422:
      return Code::kInvalidArgument;
    case 429:
      return Code::kUnavailable;
    default:
      break;
  }
  if (http_code >= 500) return Code::kUnavailable;
  if (http_code >= 400) return Code::kInvalidArgument;
  return Code::kUnknown;  // 1xx/3xx: we never follow redirects, so this is a surprise
}

Status StatusFromHttpAnswer(long http_code, const std::string& body) {
  std::string reason;
  std::string message;
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status") {
    if (parsed.contains("reason") && parsed["reason"].is_string()) {
      reason = parsed["reason"].get<std::string>();
    }
    if (parsed.contains("message") && parsed["message"].is_string()) {
      message = parsed["message"].get<std::string>();
    }
  }
  if (!LooksLikeReason(reason)) reason = DefaultReasonForHttpCode(http_code);
  if (message.empty()) {
    message = "the server answered HTTP " + std::to_string(http_code) + " without a message";
  }
  return Status(CodeForHttpAnswer(http_code, reason), reason + ": " + message);
}

bool IsRetryableHttpCode(long http_code) { return http_code == 429 || http_code >= 500; }

std::string ApiReason(const Status& status) {
  if (status.ok()) return "";
  // Callers may have added context with WithContext ("updating pv x: Conflict: ..."), so the
  // reason is the first ": "-separated segment that is a single reason word.
  const std::string& m = status.message();
  size_t start = 0;
  while (true) {
    size_t end = m.find(": ", start);
    if (end == std::string::npos) return "";
    std::string segment = m.substr(start, end - start);
    if (LooksLikeReason(segment)) return segment;
    start = end + 2;
  }
}

}  // namespace flexcsi::kube
