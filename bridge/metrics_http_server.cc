#include "bridge/metrics_http_server.h"

#include <chrono>
#include <istream>
#include <utility>

#include <boost/asio.hpp>

namespace flexcsi {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// Request head limit: a scrape's request line and headers are a few hundred bytes; anything
// bigger is not a scraper, and capping it bounds the memory one connection can take.
constexpr size_t kMaxRequestHeadBytes = 8192;
// A client that has not sent its request head by then is dropped.
constexpr std::chrono::seconds kRequestTimeout(10);

std::string HttpResponse(int code, const char* reason, const std::string& content_type,
                         const std::string& body, bool head_only) {
  std::string r = "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\n";
  r += "Content-Type: " + content_type + "\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  r += "Connection: close\r\n\r\n";
  if (!head_only) r += body;
  return r;
}

// One accepted connection: read the request head, write one response, close.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::function<std::string(const std::string&)> respond)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        buffer_(kMaxRequestHeadBytes),
        respond_(std::move(respond)) {}

  void Run() {
    auto self = shared_from_this();
    timer_.expires_after(kRequestTimeout);
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) {
        boost::system::error_code ignored;
        self->socket_.close(ignored);
      }
    });
    asio::async_read_until(
        socket_, buffer_, "\r\n\r\n",
        [self](const boost::system::error_code& ec, size_t) { self->OnRequestHead(ec); });
  }

 private:
  void OnRequestHead(const boost::system::error_code& ec) {
    std::string request_line;
    if (!ec) {
      std::istream in(&buffer_);
      std::getline(in, request_line);
      if (!request_line.empty() && request_line.back() == '\r') request_line.pop_back();
    } else if (ec != asio::error::not_found) {
      // Timed out, reset, or closed: nothing to answer. (not_found = head over the size cap,
      // which gets a 431 below via an empty request line.)
      timer_.cancel();
      return;
    }
    response_ = respond_(request_line);
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(response_),
                      [self](const boost::system::error_code&, size_t) {
                        boost::system::error_code ignored;
                        self->socket_.shutdown(tcp::socket::shutdown_both, ignored);
                        self->socket_.close(ignored);
                        self->timer_.cancel();
                      });
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  asio::streambuf buffer_;
  std::function<std::string(const std::string&)> respond_;
  std::string response_;  // must live until async_write completes
};

}  // namespace

struct MetricsHttpServer::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
};

Status ParseListenAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgument("metrics address \"" + address + "\" has no :port");
  }
  std::string h = address.substr(0, colon);
  const std::string p = address.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("metrics address \"" + address + "\" has a bad port");
  }
  const int n = std::stoi(p);
  if (n > 65535) return InvalidArgument("metrics address \"" + address + "\" has a bad port");
  *host = h.empty() ? "0.0.0.0" : h;
  *port = n;
  return Status::Ok();
}

MetricsHttpServer::MetricsHttpServer(const Metrics& metrics,
                                     std::function<HealthAnswer()> health_check)
    : metrics_(metrics), health_check_(std::move(health_check)) {}

MetricsHttpServer::MetricsHttpServer(const Metrics& metrics, std::function<bool()> health_check)
    : metrics_(metrics) {
  if (health_check) {
    health_check_ = [check = std::move(health_check)] { return HealthAnswer{check(), ""}; };
  }
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

int MetricsHttpServer::port() const { return port_.load(); }

Status MetricsHttpServer::Start(const std::string& address) {
  if (impl_) return FailedPrecondition("metrics server already started");
  std::string host;
  int port = 0;
  FLEXCSI_RETURN_IF_ERROR(ParseListenAddress(address, &host, &port));

  auto impl = std::make_unique<Impl>();
  boost::system::error_code ec;
  tcp::resolver resolver(impl->io);
  auto endpoints = resolver.resolve(host, std::to_string(port),
                                    tcp::resolver::numeric_service | tcp::resolver::passive, ec);
  if (ec || endpoints.empty()) {
    return InvalidArgument("metrics address \"" + address + "\": " + ec.message());
  }
  const tcp::endpoint endpoint = *endpoints.begin();
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("cannot listen on " + address + ": " + ec.message());
  port_ = impl->acceptor.local_endpoint().port();

  auto respond = [this](const std::string& request_line) -> std::string {
    // "GET /metrics HTTP/1.1"; the query string, if any, is ignored.
    const size_t sp1 = request_line.find(' ');
    const size_t sp2 = request_line.find(' ', sp1 == std::string::npos ? 0 : sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) {
      return HttpResponse(400, "Bad Request", "text/plain", "bad request\n", false);
    }
    const std::string method = request_line.substr(0, sp1);
    std::string path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    const bool head = method == "HEAD";
    if (method != "GET" && !head) {
      return HttpResponse(405, "Method Not Allowed", "text/plain", "only GET\n", false);
    }
    if (path == "/metrics") {
      return HttpResponse(200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                          metrics_.RenderPrometheusText(), head);
    }
    if (path == "/healthz") {
      const HealthAnswer answer = health_check_ ? health_check_() : HealthAnswer{};
      return answer.healthy ? HttpResponse(200, "OK", "text/plain", "ok\n" + answer.detail, head)
                            : HttpResponse(503, "Service Unavailable", "text/plain",
                                           "unhealthy\n" + answer.detail, head);
    }
    return HttpResponse(404, "Not Found", "text/plain", "not found\n", head);
  };

  // Accept loop; each connection is handled asynchronously on the same single thread.
  auto accept = std::make_shared<std::function<void()>>();
  Impl* raw = impl.get();
  *accept = [raw, accept_weak = std::weak_ptr<std::function<void()>>(accept), respond]() {
    raw->acceptor.async_accept(
        [raw, accept_weak, respond](const boost::system::error_code& ec, tcp::socket socket) {
          if (ec == asio::error::operation_aborted || !raw->acceptor.is_open()) return;
          if (!ec) std::make_shared<Connection>(std::move(socket), respond)->Run();
          if (auto next = accept_weak.lock()) (*next)();
        });
  };
  impl_ = std::move(impl);
  thread_ = std::thread([raw, accept]() {
    (*accept)();
    raw->io.run();
  });
  return Status::Ok();
}

void MetricsHttpServer::Stop() {
  if (!impl_) return;
  asio::post(impl_->io, [raw = impl_.get()]() {
    boost::system::error_code ignored;
    raw->acceptor.close(ignored);
  });
  impl_->io.stop();
  if (thread_.joinable()) thread_.join();
  impl_.reset();
  port_ = 0;
}

}  // namespace flexcsi
