#include "kube/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace flexcsi::kube {
namespace {

// A collected answer larger than this is refused rather than allowed to exhaust memory. A page
// of 500 large objects is a few megabytes; streaming watches are not collected.
constexpr size_t kMaxCollectedBody = 512u << 20;
constexpr size_t kMaxIdleHandles = 8;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// What one transfer collects; the callbacks get a pointer to it.
struct Transfer {
  CURL* curl = nullptr;
  const HttpRequest* request = nullptr;
  HttpResponse* response = nullptr;
  bool stopped_by_handler = false;
  bool too_large = false;
};

bool Is2xx(CURL* curl) {
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  return code >= 200 && code < 300;
}

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  if (t->request->on_body && Is2xx(t->curl)) {
    if (!t->request->on_body(data, n)) {
      t->stopped_by_handler = true;
      return 0;  // short write: curl ends the transfer
    }
    return n;
  }
  if (t->response->body.size() + n > kMaxCollectedBody) {
    t->too_large = true;
    return 0;
  }
  t->response->body.append(data, n);
  return n;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  std::string line(data, n);
  if (line.rfind("HTTP/", 0) == 0) t->response->retry_after.clear();  // a new answer starts
  if ((line == "\r\n" || line == "\n") && t->request->on_headers) {
    long code = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    t->request->on_headers(code);
  }
  static const char kName[] = "retry-after:";
  if (line.size() > sizeof(kName) - 1 && strncasecmp(line.c_str(), kName, sizeof(kName) - 1) == 0) {
    std::string value = line.substr(sizeof(kName) - 1);
    size_t b = value.find_first_not_of(" \t");
    size_t e = value.find_last_not_of(" \t\r\n");
    t->response->retry_after = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  }
  return n;
}

// Runs a transfer that must stop soon after should_cancel() turns true, even while the server
// sends nothing (an idle watch): the multi interface waits at most kCancelPollMs at a time,
// where curl's progress callback would only come about once a second.
CURLcode PerformCancellable(CURL* curl, Transfer* transfer) {
  constexpr int kCancelPollMs = 100;
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) return CURLE_OUT_OF_MEMORY;
  curl_multi_add_handle(multi, curl);
  CURLcode result = CURLE_OK;
  bool finished = false;
  while (!finished) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        result = msg->data.result;
        finished = true;
      }
    }
    if (finished) break;
    if (transfer->request->should_cancel()) {
      transfer->stopped_by_handler = true;
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    curl_multi_poll(multi, nullptr, 0, kCancelPollMs, nullptr);
  }
  curl_multi_remove_handle(multi, curl);
  curl_multi_cleanup(multi);
  return result;
}

void SetBlob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob;
  blob.data = const_cast<char*>(pem.data());
  blob.len = pem.size();
  blob.flags = CURL_BLOB_COPY;
  curl_easy_setopt(curl, option, &blob);
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

}  // namespace

HttpTransport::HttpTransport(TransportSettings settings) : settings_(std::move(settings)) {
  GlobalInitOnce();
  url_base_ = settings_.server;
  CURLU* url = curl_url();
  if (curl_url_set(url, CURLUPART_URL, settings_.server.c_str(), 0) == CURLUE_OK) {
    char* scheme = nullptr;
    char* host = nullptr;
    char* port = nullptr;
    char* path = nullptr;
    curl_url_get(url, CURLUPART_SCHEME, &scheme, 0);
    curl_url_get(url, CURLUPART_HOST, &host, 0);
    curl_url_get(url, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    curl_url_get(url, CURLUPART_PATH, &path, 0);
    std::string h = host ? host : "";
    std::string p = port ? port : "";
    std::string prefix = path ? path : "";
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    loopback_server_ = IsLoopbackHost(h);
    if (!settings_.tls_server_name.empty() && settings_.tls_server_name != h && scheme &&
        std::string(scheme) == "https") {
      // tls-server-name is the name the certificate must carry (and the SNI), while the TCP
      // connection still goes to the configured host: connect to `h` for a URL that names
      // tls_server_name, and send the real host in Host: as Go's client does.
      url_base_ = std::string(scheme) + "://" + settings_.tls_server_name + ":" + p + prefix;
      connect_to_ = settings_.tls_server_name + ":" + p + ":" + h + ":" + p;
      char* authority_port = nullptr;
      curl_url_get(url, CURLUPART_PORT, &authority_port, 0);
      host_header_ = "Host: " + h + (authority_port ? std::string(":") + authority_port : "");
      curl_free(authority_port);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
  }
  curl_url_cleanup(url);
}

HttpTransport::~HttpTransport() {
  for (void* handle : idle_handles_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

void* HttpTransport::TakeHandle() {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!idle_handles_.empty()) {
      void* handle = idle_handles_.back();
      idle_handles_.pop_back();
      // Keeps live connections and the TLS session cache; forgets every option.
      curl_easy_reset(static_cast<CURL*>(handle));
      return handle;
    }
  }
  return curl_easy_init();
}

void HttpTransport::ReturnHandle(void* handle) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (idle_handles_.size() < kMaxIdleHandles) {
    idle_handles_.push_back(handle);
  } else {
    curl_easy_cleanup(static_cast<CURL*>(handle));
  }
}

HttpResponse HttpTransport::Perform(const HttpRequest& request, const Credentials& credentials) {
  HttpResponse response;
  CURL* curl = static_cast<CURL*>(TakeHandle());
  if (curl == nullptr) {
    response.transport = Internal("cannot create a libcurl handle");
    response.may_have_reached_server = false;
    return response;
  }
  Transfer transfer{curl, &request, &response};
  const std::string url = url_base_ + request.path_and_query;
  char error_buffer[CURL_ERROR_SIZE] = {0};

  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM-based DNS timeouts
  curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "GET") curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  if (!settings_.user_agent.empty()) {
    curl_easy_setopt(curl, CURLOPT_USERAGENT, settings_.user_agent.c_str());
  }
  // Connecting never takes longer than kMaxConnectMs, even for a watch that may then run for
  // minutes: an unreachable server is reported, not waited for.
  constexpr long kMaxConnectMs = 30000;
  long connect_ms = kMaxConnectMs;
  if (request.timeout.count() > 0) {
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
    connect_ms = std::min<long>(connect_ms, static_cast<long>(request.timeout.count()));
  }
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);

  // Trust: the configured CA only (client-go builds a pool of exactly those), else the system's.
  if (settings_.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!settings_.ca_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, nullptr);
    curl_easy_setopt(curl, CURLOPT_CAPATH, nullptr);
    SetBlob(curl, CURLOPT_CAINFO_BLOB, settings_.ca_pem);
  }
  // Lists handed to curl must outlive the transfer; both are freed after perform.
  curl_slist* connect_to = nullptr;
  if (!connect_to_.empty()) {
    connect_to = curl_slist_append(nullptr, connect_to_.c_str());
    curl_easy_setopt(curl, CURLOPT_CONNECT_TO, connect_to);
  }
  if (!settings_.proxy_url.empty()) {
    curl_easy_setopt(curl, CURLOPT_PROXY, settings_.proxy_url.c_str());
  } else if (loopback_server_) {
    // Go never proxies requests to loopback addresses; curl would honour https_proxy.
    curl_easy_setopt(curl, CURLOPT_PROXY, "");
  }

  if (!credentials.client_cert_pem.empty() && !credentials.client_key_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    SetBlob(curl, CURLOPT_SSLCERT_BLOB, credentials.client_cert_pem);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    SetBlob(curl, CURLOPT_SSLKEY_BLOB, credentials.client_key_pem);
  }
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!host_header_.empty()) headers = curl_slist_append(headers, host_header_.c_str());
  if (!request.content_type.empty()) {
    headers = curl_slist_append(headers, ("Content-Type: " + request.content_type).c_str());
  }
  if (!credentials.bearer_token.empty()) {
    headers =
        curl_slist_append(headers, ("Authorization: Bearer " + credentials.bearer_token).c_str());
  } else if (!credentials.username.empty() || !credentials.password.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(curl, CURLOPT_USERNAME, credentials.username.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, credentials.password.c_str());
  }
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (!request.content_type.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnWrite);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  CURLcode rc =
      request.should_cancel ? PerformCancellable(curl, &transfer) : curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.http_code);
  curl_off_t pretransfer = 0;
  curl_easy_getinfo(curl, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
  curl_slist_free_all(headers);
  curl_slist_free_all(connect_to);

  // The URL in messages has no query (selectors are harmless, but keep messages short) and
  // never credentials: those travel in headers and TLS blobs only.
  std::string where = request.method + " " + url.substr(0, url.find('?'));
  if (rc == CURLE_OK) {
    response.transport = Status::Ok();
  } else if (transfer.stopped_by_handler) {
    response.transport = Status(Code::kCancelled, where + ": stopped");
  } else if (transfer.too_large) {
    response.transport = ResourceExhausted(where + ": answer larger than " +
                                           std::to_string(kMaxCollectedBody) + " bytes");
  } else {
    std::string detail = error_buffer[0] ? error_buffer : curl_easy_strerror(rc);
    std::string message = where + ": " + detail;
    switch (rc) {
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
      case CURLE_COULDNT_CONNECT:
      case CURLE_SSL_CONNECT_ERROR:
        response.may_have_reached_server = false;
        response.transport = Unavailable(message);
        break;
      case CURLE_PEER_FAILED_VERIFICATION:
        response.may_have_reached_server = false;
        response.permanent = true;
        response.transport = Unavailable(message +
                                         " (the server's certificate is not trusted "
                                         "by the configured certificate authority)");
        break;
      case CURLE_SSL_CERTPROBLEM:
      case CURLE_SSL_CACERT_BADFILE:
      case CURLE_SSL_CIPHER:
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL:
        response.may_have_reached_server = false;
        response.permanent = true;
        response.transport = InvalidArgument(message);
        break;
      case CURLE_OPERATION_TIMEDOUT:
        response.may_have_reached_server = pretransfer > 0;
        response.transport = DeadlineExceeded(message);
        break;
      default:
        response.may_have_reached_server = pretransfer > 0;
        response.transport = Unavailable(message);
        break;
    }
  }
  ReturnHandle(curl);
  return response;
}

}  // namespace flexcsi::kube
