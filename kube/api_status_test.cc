#include "kube/api_status.h"

#include <gtest/gtest.h>

#include <vector>

#include "kube/backoff.h"
#include "kube/kube_client.h"

namespace flexcsi::kube {
namespace {

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":" +
         std::to_string(code) + ",\"reason\":\"" + reason + "\",\"message\":\"" + message + "\"}";
}

TEST(ApiStatus, ServerReasonAndMessageBecomeStatus) {
  struct Case {
    int http;
    const char* reason;
    Code code;
  } cases[] = {
      {400, "BadRequest", Code::kInvalidArgument},
      {401, "Unauthorized", Code::kUnauthenticated},
      {403, "Forbidden", Code::kPermissionDenied},
      {404, "NotFound", Code::kNotFound},
      {409, "AlreadyExists", Code::kAlreadyExists},
      {409, "Conflict", Code::kAborted},
      {410, "Expired", Code::kOutOfRange},
      {422, "Invalid", Code::kInvalidArgument},
      {429, "TooManyRequests", Code::kUnavailable},
      {500, "InternalError", Code::kUnavailable},
      {503, "ServiceUnavailable", Code::kUnavailable},
  };
  for (const Case& tc : cases) {
    Status s = StatusFromHttpAnswer(tc.http, StatusBody(tc.http, tc.reason, "what happened"));
    EXPECT_EQ(s.code(), tc.code) << tc.reason;
    EXPECT_EQ(s.message(), std::string(tc.reason) + ": what happened");
    EXPECT_EQ(ApiReason(s), tc.reason);
    EXPECT_EQ(ApiReason(s.WithContext("updating pv pv-1")), tc.reason);
  }
}

TEST(ApiStatus, NonStatusBodyGetsClientGoDefaultReason) {
  Status s = StatusFromHttpAnswer(502, "<html>Bad Gateway</html>");
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_EQ(ApiReason(s), "Unknown");
  s = StatusFromHttpAnswer(409, "");
  EXPECT_EQ(s.code(), Code::kAborted);
  EXPECT_EQ(ApiReason(s), "Conflict");
}

TEST(ApiStatus, TransportFailuresHaveNoReason) {
  EXPECT_EQ(ApiReason(Unavailable("GET https://127.0.0.1:1/api/v1/pods: Couldn't connect")), "");
  EXPECT_EQ(ApiReason(Status::Ok()), "");
}

TEST(ApiStatus, RetryAfterSecondsAndHttpDate) {
  EXPECT_EQ(ParseRetryAfter("3"), std::chrono::milliseconds(3000));
  EXPECT_EQ(ParseRetryAfter(" 0 "), std::chrono::milliseconds(0));
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), std::chrono::milliseconds(0));
  EXPECT_FALSE(ParseRetryAfter("soon").has_value());
}

TEST(ApiStatus, ResourcePathsAndEscaping) {
  EXPECT_EQ(ResourcePath::Core("persistentvolumes").Named("pv-1").UrlPath(),
            "/api/v1/persistentvolumes/pv-1");
  EXPECT_EQ(ResourcePath::Core("persistentvolumeclaims", "ns").Named("c").Sub("status").UrlPath(),
            "/api/v1/namespaces/ns/persistentvolumeclaims/c/status");
  EXPECT_EQ(ResourcePath::Group("apps/v1", "deployments", "ns").Named("d").Sub("scale").UrlPath(),
            "/apis/apps/v1/namespaces/ns/deployments/d/scale");
  EXPECT_EQ(ResourcePath::Core("pods").Named("a/b").UrlPath(), "/api/v1/pods/a%2Fb");
  EXPECT_EQ(ResourcePath::Core("pods").Named("..").UrlPath(), "/api/v1/pods/%2E%2E");
}

}  // namespace
}  // namespace flexcsi::kube
