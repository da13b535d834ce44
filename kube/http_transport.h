// HttpTransport: the only place that speaks HTTP (libcurl). One per KubeClient; safe to use from
// several threads at once (each call takes its own easy handle from a small pool, which keeps
// connections and TLS sessions warm between calls).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi::kube {

// Fixed for the life of a client: where the server is and how to trust it.
struct TransportSettings {
  std::string server;  // https://host:port[/prefix], no trailing slash
  std::string tls_server_name;
  std::string proxy_url;
  bool insecure_skip_tls_verify = false;
  std::string ca_pem;  // empty: the system's roots
  std::string user_agent;
};

// Per-request credentials (they can change: rotated token files, exec plugins).
struct Credentials {
  std::string bearer_token;  // secret
  std::string username;
  std::string password;  // secret
  std::string client_cert_pem;
  std::string client_key_pem;  // secret
};

struct HttpRequest {
  std::string method;          // GET, POST, PUT, PATCH, DELETE
  std::string path_and_query;  // "/api/v1/pods?limit=5", appended to the server URL
  std::string body;            // sent when content_type is set
  std::string content_type;
  std::chrono::milliseconds timeout{0};  // whole transfer; 0: none (watches)
  // When set, the body of a 2xx answer is handed over as it arrives instead of being collected;
  // returning false ends the transfer (the result then says kCancelled).
  std::function<bool(const char* data, size_t size)> on_body;
  // Called once an answer's headers are complete, with its status code, before its body: a
  // watch learns that its stream is open although the server may send nothing for minutes.
  std::function<void(long http_code)> on_headers;
  // Polled every 100 ms or so while the transfer runs; true ends it with kCancelled.
  std::function<bool()> should_cancel;
};

struct HttpResponse {
  // OK when an HTTP answer arrived (whatever its code). Otherwise kUnavailable (cannot connect,
  // connection lost), kDeadlineExceeded (timeout), kCancelled, or kUnavailable for TLS trust
  // failures; the message never contains credentials.
  Status transport;
  // False only when the failure happened before the request could have reached the server
  // (connection refused, DNS, TLS handshake): then any request, even a POST, may be repeated.
  bool may_have_reached_server = true;
  // True for failures that repeating cannot fix (untrusted certificate, bad client key).
  bool permanent = false;
  long http_code = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
};

class HttpTransport {
 public:
  explicit HttpTransport(TransportSettings settings);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  HttpResponse Perform(const HttpRequest& request, const Credentials& credentials);

  const TransportSettings& settings() const { return settings_; }

 private:
  void* TakeHandle();
  void ReturnHandle(void* handle);

  TransportSettings settings_;
  std::string url_base_;    // scheme://authority[/prefix] the URLs are built on
  std::string connect_to_;  // CURLOPT_CONNECT_TO entry when tls_server_name differs from host
  std::string host_header_;
  bool loopback_server_ = false;
  std::mutex pool_mutex_;
  std::vector<void*> idle_handles_;  // CURL*; REQUIRES pool_mutex_
};

}  // namespace flexcsi::kube
