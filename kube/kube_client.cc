#include "kube/kube_client.h"

#include <thread>

#include "common/trim_space.h"
#include "common/yaml_json.h"
#include "kube/api_status.h"
#include "kube/backoff.h"
#include "kube/exec_credential.h"
#include "kube/http_transport.h"
#include "kube/rate_limiter.h"
#include "kube/watch_decoder.h"

namespace flexcsi::kube {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Percent-encodes a query value (selectors contain '=', ',', '!', spaces and parentheses).
std::string QueryEscape(const std::string& value) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.' || c == '~';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

// Builds "?a=b&c=d" from the non-empty pairs.
std::string Query(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string q;
  for (const auto& [key, value] : params) {
    if (value.empty()) continue;
    q += q.empty() ? '?' : '&';
    q += key + "=" + QueryEscape(value);
  }
  return q;
}

std::vector<std::pair<std::string, std::string>> WriteParams(const WriteOptions& options) {
  return {{"dryRun", options.dry_run ? "All" : ""}, {"fieldManager", options.field_manager}};
}

// Serialises a request body; nlohmann throws on strings that are not UTF-8.
StatusOr<std::string> DumpBody(const Json& value) {
  try {
    return value.dump();
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("request body cannot be encoded as JSON: ") + e.what());
  }
}

}  // namespace

class KubeClient::Impl {
 public:
  Impl(ClientConfig config, std::optional<TokenBucketSize> rate_limit)
      : config_(std::move(config)),
        transport_(TransportSettings{config_.server, config_.tls_server_name, config_.proxy_url,
                                     config_.insecure_skip_tls_verify, config_.ca_pem,
                                     config_.user_agent}) {
    if (config_.exec) exec_ = std::make_unique<ExecCredentialProvider>(*config_.exec, config_);
    if (rate_limit) throttle_ = std::make_unique<RequestThrottle>(*rate_limit);
  }

  // Every request goes out through here (after its token, when rate-limited), and is counted.
  HttpResponse Send(const HttpRequest& request, const Credentials& credentials) {
    requests_.fetch_add(1);
    return transport_.Perform(request, credentials);
  }

  // One API call with retries; returns the parsed 2xx body.
  StatusOr<Json> Call(const std::string& method, const std::string& path_and_query,
                      const std::string& content_type, const std::string& body);

  // One streaming GET (watch): no retries (the Informer decides), but a 401 with exec
  // credentials re-runs the plugin once.
  HttpResponse Stream(HttpRequest request);

  StatusOr<Credentials> CurrentCredentials(uint64_t* exec_generation);

  ClientConfig config_;
  HttpTransport transport_;
  std::unique_ptr<ExecCredentialProvider> exec_;
  std::unique_ptr<RequestThrottle> throttle_;  // null: no client-side rate limit
  std::function<Status()> write_fence_;        // empty: writes go out unchecked
  std::atomic<uint64_t> requests_{0};
};

StatusOr<Credentials> KubeClient::Impl::CurrentCredentials(uint64_t* exec_generation) {
  Credentials c;
  c.bearer_token = config_.token;
  if (!config_.token_file.empty()) {
    // Service-account tokens rotate: read the file every time; keep the last good value if the
    // file is briefly missing (kubelet replaces it atomically, but be forgiving). Any other
    // failure (a directory, a file over the size bound) is the request's error.
    StatusOr<std::string> text = ReadCredentialFile(config_.token_file);
    if (!text.ok() && text.status().code() != Code::kNotFound) return text.status();
    std::string token = text.ok() ? TrimSpace(*text) : "";
    if (!token.empty()) c.bearer_token = token;
  }
  c.username = config_.username;
  c.password = config_.password;
  c.client_cert_pem = config_.client_cert_pem;
  c.client_key_pem = config_.client_key_pem;
  *exec_generation = 0;
  // A token given directly (--token, a token file) is used as is and the plugin not run, as
  // client-go's exec round tripper leaves requests that already carry Authorization alone.
  if (exec_ && c.bearer_token.empty()) {
    StatusOr<ExecCredential> cred = exec_->Get();
    if (!cred.ok()) return cred.status();
    *exec_generation = cred->generation;
    if (!cred->token.empty()) c.bearer_token = cred->token;
    if (!cred->client_cert_pem.empty()) {
      c.client_cert_pem = cred->client_cert_pem;
      c.client_key_pem = cred->client_key_pem;
    }
  }
  return c;
}

StatusOr<Json> KubeClient::Impl::Call(const std::string& method, const std::string& path_and_query,
                                      const std::string& content_type, const std::string& body) {
  // As client-go's Request.request: the first attempt waits for its token before the request
  // timeout starts (a throttled client must not time out a request it has not even sent); every
  // later attempt (a retry, the repeat after an exec plugin's 401) takes a token too, within the
  // timeout.
  if (throttle_) FLEXCSI_RETURN_IF_ERROR(throttle_->Wait());
  const Clock::time_point deadline = Clock::now() + config_.request_timeout;
  Backoff backoff(std::chrono::milliseconds(200), std::chrono::seconds(5));
  bool reran_exec_plugin = false;
  int retries = 0;
  Status last_failure;  // the answer that made us retry
  for (bool first_attempt = true;; first_attempt = false) {
    if (!first_attempt && throttle_) {
      if (Status s = throttle_->Wait(deadline); !s.ok()) {
        if (last_failure.ok()) {
          return s.WithContext(method + " " + path_and_query.substr(0, path_and_query.find('?')));
        }
        return Status(last_failure.code(),
                      last_failure.message() + " (gave up: " + s.message() + ")");
      }
    }
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (remaining.count() <= 0) {
      return DeadlineExceeded(method + " " + path_and_query.substr(0, path_and_query.find('?')) +
                              ": no answer within " +
                              std::to_string(config_.request_timeout.count()) + " ms");
    }
    // Asked again before every retry: a write may wait out a backoff while the fence closes.
    if (method != "GET" && write_fence_) {
      if (Status fenced = write_fence_(); !fenced.ok()) {
        return fenced.WithContext(method + " " +
                                  path_and_query.substr(0, path_and_query.find('?')));
      }
    }
    uint64_t generation = 0;
    StatusOr<Credentials> credentials = CurrentCredentials(&generation);
    if (!credentials.ok()) return credentials.status();
    HttpRequest request;
    request.method = method;
    request.path_and_query = path_and_query;
    request.content_type = content_type;
    request.body = body;
    request.timeout = remaining;
    HttpResponse response = Send(request, *credentials);

    Status failure;
    std::optional<std::chrono::milliseconds> wait;
    bool retryable = false;
    if (response.transport.ok()) {
      if (response.http_code >= 200 && response.http_code < 300) {
        if (TrimSpace(response.body).empty()) return Json::object();
        StatusOr<Json> parsed = ParseJsonText(response.body);
        if (!parsed.ok()) {
          return Status(Code::kDataLoss,
                        method + " " + path_and_query +
                            ": the server's answer is not JSON: " + parsed.status().message());
        }
        return parsed;
      }
      if (response.http_code == 401 && exec_ && !reran_exec_plugin) {
        // The plugin's credential was refused (revoked, or expired early): run it again once.
        exec_->Invalidate(generation);
        reran_exec_plugin = true;
        continue;
      }
      failure = StatusFromHttpAnswer(response.http_code, response.body);
      retryable = IsRetryableHttpCode(response.http_code);
      if (retryable && !response.retry_after.empty()) wait = ParseRetryAfter(response.retry_after);
    } else {
      failure = response.transport;
      // A request that may have reached the server is repeated only when repeating is
      // harmless (reads); a write might have been applied before the connection broke.
      retryable = !response.permanent && response.transport.code() != Code::kCancelled &&
                  (!response.may_have_reached_server || method == "GET");
    }
    if (!retryable || retries >= config_.max_retries) return failure;
    std::chrono::milliseconds pause = wait ? *wait : backoff.Next();
    if (Clock::now() + pause >= deadline) {
      return Status(failure.code(), failure.message() + " (gave up: a retry after " +
                                        std::to_string(pause.count()) +
                                        " ms would pass the request timeout)");
    }
    std::this_thread::sleep_for(pause);
    last_failure = failure;
    ++retries;
  }
}

HttpResponse KubeClient::Impl::Stream(HttpRequest request) {
  for (int attempt = 0;; ++attempt) {
    uint64_t generation = 0;
    StatusOr<Credentials> credentials = CurrentCredentials(&generation);
    if (!credentials.ok()) {
      HttpResponse failed;
      failed.transport = credentials.status();
      return failed;
    }
    if (throttle_) {
      // As client-go's Watch: the opening request waits for a token, without a deadline; the
      // watch's stop flag ends the wait.
      if (Status s = throttle_->Wait(std::nullopt, request.should_cancel); !s.ok()) {
        HttpResponse stopped;
        stopped.transport = s;
        return stopped;
      }
    }
    HttpResponse response = Send(request, *credentials);
    if (response.transport.ok() && response.http_code == 401 && exec_ && attempt == 0) {
      exec_->Invalidate(generation);
      continue;
    }
    return response;
  }
}

StatusOr<std::unique_ptr<KubeClient>> KubeClient::Create(ClientConfig config) {
  if (config.server.empty()) return InvalidArgument("kube client: no server configured");
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return InvalidArgument("kube client: server " + config.server +
                           " is not an http:// or https:// URL");
  }
  if (config.request_timeout.count() <= 0) {
    return InvalidArgument("kube client: request timeout must be positive");
  }
  if (config.max_retries < 0) config.max_retries = 0;
  auto rate_limit = ResolveRateLimit(config.rate_limit);
  if (!rate_limit.ok()) return rate_limit.status();
  return std::unique_ptr<KubeClient>(
      new KubeClient(std::make_unique<Impl>(std::move(config), *rate_limit)));
}

KubeClient::KubeClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KubeClient::~KubeClient() = default;

const std::string& KubeClient::DefaultNamespace() const { return impl_->config_.namespace_; }
const ClientConfig& KubeClient::config() const { return impl_->config_; }

void KubeClient::SetWriteFence(std::function<Status()> fence) {
  impl_->write_fence_ = std::move(fence);
}

KubeClient::RequestStats KubeClient::Stats() const {
  RequestStats stats;
  stats.requests = impl_->requests_.load();
  if (impl_->throttle_) {
    stats.rate_limit = impl_->throttle_->size();
    stats.delayed_requests = impl_->throttle_->delayed_requests();
    stats.total_delay = impl_->throttle_->total_delay();
  }
  return stats;
}

StatusOr<Json> KubeClient::Get(const ResourcePath& object) {
  return impl_->Call("GET", object.UrlPath(), "", "");
}

StatusOr<Json> KubeClient::GetPath(const std::string& url_path) {
  if (url_path.empty() || url_path[0] != '/' || url_path.find('?') != std::string::npos) {
    return InvalidArgument("GetPath: \"" + url_path + "\" is not an absolute path without a query");
  }
  return impl_->Call("GET", url_path, "", "");
}

StatusOr<Json> KubeClient::List(const ResourcePath& collection, const ListOptions& options) {
  Json result = {{"items", Json::array()}, {"metadata", Json::object()}};
  std::string continue_token;
  bool first_page = true;
  while (true) {
    std::string query =
        Query({{"labelSelector", options.label_selector},
               {"fieldSelector", options.field_selector},
               {"limit", options.page_size > 0 ? std::to_string(options.page_size) : ""},
               {"continue", continue_token}});
    StatusOr<Json> page = impl_->Call("GET", collection.UrlPath() + query, "", "");
    if (!page.ok()) {
      if (page.status().code() == Code::kOutOfRange && !continue_token.empty()) {
        // The continue token expired between pages (the server compacted): as client-go's
        // pager does, fall back to one unpaginated list, which is consistent in itself.
        ListOptions whole = options;
        whole.page_size = 0;
        return List(collection, whole);
      }
      return page.status();
    }
    if (!page->is_object() || !page->contains("items") || !(*page)["items"].is_array()) {
      if (!(page->contains("items") && (*page)["items"].is_null())) {
        return Status(Code::kDataLoss,
                      "GET " + collection.UrlPath() + ": answer has no items list");
      }
    }
    if (first_page) {
      // The first page's resourceVersion is the snapshot every later page belongs to, and
      // where a watch must begin.
      if (page->contains("kind")) result["kind"] = (*page)["kind"];
      if (page->contains("apiVersion")) result["apiVersion"] = (*page)["apiVersion"];
      if (page->contains("metadata") && (*page)["metadata"].contains("resourceVersion")) {
        result["metadata"]["resourceVersion"] = (*page)["metadata"]["resourceVersion"];
      }
      first_page = false;
    }
    if ((*page)["items"].is_array()) {
      for (Json& item : (*page)["items"]) result["items"].push_back(std::move(item));
    }
    continue_token.clear();
    if (page->contains("metadata") && (*page)["metadata"].is_object()) {
      continue_token = (*page)["metadata"].value("continue", "");
    }
    if (continue_token.empty()) return result;
  }
}

StatusOr<Json> KubeClient::Create(const ResourcePath& collection, const Json& object,
                                  const WriteOptions& options) {
  StatusOr<std::string> body = DumpBody(object);
  if (!body.ok()) return body.status();
  return impl_->Call("POST", collection.UrlPath() + Query(WriteParams(options)), "application/json",
                     *body);
}

StatusOr<Json> KubeClient::Update(const ResourcePath& object, const Json& value,
                                  const WriteOptions& options) {
  StatusOr<std::string> body = DumpBody(value);
  if (!body.ok()) return body.status();
  return impl_->Call("PUT", object.UrlPath() + Query(WriteParams(options)), "application/json",
                     *body);
}

StatusOr<Json> KubeClient::Patch(const ResourcePath& object, PatchType type, const Json& patch,
                                 const WriteOptions& options) {
  const char* content_type = "application/merge-patch+json";
  if (type == PatchType::kStrategicMerge) content_type = "application/strategic-merge-patch+json";
  if (type == PatchType::kJson) content_type = "application/json-patch+json";
  StatusOr<std::string> body = DumpBody(patch);
  if (!body.ok()) return body.status();
  return impl_->Call("PATCH", object.UrlPath() + Query(WriteParams(options)), content_type, *body);
}

StatusOr<Json> KubeClient::Delete(const ResourcePath& object, const DeleteOptions& options) {
  Json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.precondition_uid || options.precondition_resource_version) {
    body["preconditions"] = Json::object();
    if (options.precondition_uid) body["preconditions"]["uid"] = *options.precondition_uid;
    if (options.precondition_resource_version) {
      body["preconditions"]["resourceVersion"] = *options.precondition_resource_version;
    }
  }
  if (!options.propagation_policy.empty()) {
    body["propagationPolicy"] = options.propagation_policy;
  }
  if (options.dry_run) body["dryRun"] = Json::array({"All"});
  StatusOr<std::string> text = DumpBody(body);
  if (!text.ok()) return text.status();
  // dryRun also travels in the query, where every server version reads it.
  return impl_->Call("DELETE", object.UrlPath() + Query({{"dryRun", options.dry_run ? "All" : ""}}),
                     "application/json", *text);
}

Status KubeClient::Watch(const ResourcePath& collection, const WatchOptions& options,
                         const std::function<bool(const WatchEvent&)>& on_event) {
  std::string query =
      Query({{"watch", "1"},
             {"resourceVersion", options.resource_version},
             {"timeoutSeconds",
              options.timeout_seconds > 0 ? std::to_string(options.timeout_seconds) : ""},
             {"allowWatchBookmarks", options.allow_bookmarks ? "true" : ""},
             {"labelSelector", options.list.label_selector},
             {"fieldSelector", options.list.field_selector}});
  WatchDecoder decoder;
  Status stream_status;  // why the stream was ended from our side, if it was
  bool handler_stopped = false;
  HttpRequest request;
  request.method = "GET";
  request.path_and_query = collection.UrlPath() + query;
  if (options.timeout_seconds > 0) {
    // The server ends the watch after timeoutSeconds; a server that hangs instead is cut off a
    // minute later rather than waited for forever.
    request.timeout = std::chrono::seconds(options.timeout_seconds + 60);
  }
  request.should_cancel = [&] { return options.stop != nullptr && options.stop->load(); };
  if (options.on_open) {
    request.on_headers = [&](long code) {
      if (code >= 200 && code < 300) options.on_open();
    };
  }
  request.on_body = [&](const char* data, size_t size) {
    Status s = decoder.Feed(data, size, [&](const std::string& text) {
      StatusOr<Json> value = ParseJsonText(text);
      if (!value.ok() || !value->is_object()) {
        stream_status = Status(Code::kDataLoss, "watch stream: an event is not a JSON object");
        return false;
      }
      std::string type = value->value("type", "");
      Json& object = (*value)["object"];
      if (type == "ERROR") {
        long code = object.is_object() ? object.value("code", 0L) : 0L;
        stream_status =
            StatusFromHttpAnswer(code == 0 ? 500 : code, object.is_null() ? "" : object.dump());
        return false;
      }
      if (type != "ADDED" && type != "MODIFIED" && type != "DELETED" && type != "BOOKMARK") {
        stream_status = Status(Code::kDataLoss, "watch stream: unknown event type " + type);
        return false;
      }
      if (!on_event(WatchEvent{type, std::move(object)})) {
        handler_stopped = true;
        return false;
      }
      return true;
    });
    if (!s.ok() && stream_status.ok() && !handler_stopped) stream_status = s;
    return s.ok();
  };

  HttpResponse response = impl_->Stream(std::move(request));
  if (handler_stopped) return Status::Ok();
  if (!stream_status.ok()) return stream_status;
  if (!response.transport.ok()) {
    if (response.transport.code() == Code::kCancelled && options.stop && options.stop->load()) {
      return Status(Code::kCancelled, "watch stopped");
    }
    return response.transport;
  }
  if (response.http_code < 200 || response.http_code >= 300) {
    return StatusFromHttpAnswer(response.http_code, response.body);
  }
  if (decoder.HasPartialValue()) {
    return Unavailable("watch " + collection.UrlPath() + ": the stream ended inside an event");
  }
  return Status::Ok();  // the server ended the watch (timeoutSeconds)
}

}  // namespace flexcsi::kube
