#include "recording_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "test_util.h"

namespace phoenix::test {

namespace {

// A socket bound to 127.0.0.1 on a port the kernel picks; its port to *port.
int bind_loopback(int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("cannot bind a loopback socket");
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// Reads and writes of one connection: plain, or through OpenSSL.
struct Io {
  std::function<long(char*, size_t)> read;
  std::function<void(const std::string&)> write;
};

}  // namespace

int dead_port() {
  int port = 0;
  ::close(bind_loopback(&port));
  return port;
}

LoopbackListener::LoopbackListener(std::function<void(int fd)> handle) {
  fd_ = bind_loopback(&port_);
  ::listen(fd_, 16);
  thread_ = std::thread([this, handle = std::move(handle)] {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      timeval five{5, 0};  // a client that stopped talking
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &five, sizeof five);
      handle(fd);
      ::close(fd);
    }
  });
}

LoopbackListener::~LoopbackListener() {
  stop_ = true;
  thread_.join();
  ::close(fd_);
}

namespace {

// A server's TLS context with `tls`'s certificate and key (null: plain HTTP).
std::shared_ptr<void> server_context(const CertFiles& tls) {
  if (tls.cert.empty()) return nullptr;
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  std::shared_ptr<void> owned(ctx, [](void* c) { SSL_CTX_free(static_cast<SSL_CTX*>(c)); });
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, tls.key.c_str(), SSL_FILETYPE_PEM) != 1)
    throw std::runtime_error("cannot load " + tls.cert + " / " + tls.key);
  return owned;
}

}  // namespace

RecordingServer::RecordingServer(std::vector<int> statuses, CertFiles tls)
    : statuses_(std::move(statuses)), tls_(server_context(tls)) {}

std::string RecordingServer::url(const std::string& path, const std::string& host) const {
  return std::string(tls_ ? "https://" : "http://") + host + ":" + std::to_string(port()) + path;
}

std::vector<RecordingServer::Request> RecordingServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void RecordingServer::reply(const std::string& body) {
  std::lock_guard<std::mutex> lock(mu_);
  reply_ = body;
}

namespace {

// The request's head and body from `io` ("" when the client went away).
bool read_request(const Io& io, std::string& in, size_t& head_end, size_t& need) {
  char buf[4096];
  head_end = std::string::npos;
  need = 0;
  while (true) {
    long n = io.read(buf, sizeof buf);
    if (n <= 0) return false;
    in.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos && (head_end = in.find("\r\n\r\n")) != std::string::npos) {
      std::string lower = in.substr(0, head_end);
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t cl = lower.find("content-length:");
      need = cl == std::string::npos ? 0 : std::stoul(lower.substr(cl + 15));
    }
    if (head_end != std::string::npos && in.size() >= head_end + 4 + need) return true;
  }
}

RecordingServer::Request parse_request(const std::string& in, size_t head_end, size_t need) {
  RecordingServer::Request r;
  std::istringstream head(in.substr(0, head_end));
  std::string line;
  std::getline(head, line);
  std::istringstream first(line);
  first >> r.method >> r.target;
  while (std::getline(head, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    r.headers[name] = value;
  }
  r.body = in.substr(head_end + 4, need);
  return r;
}

}  // namespace

void RecordingServer::answer(int fd) {
  SSL* ssl = nullptr;
  Io io{[fd](char* b, size_t n) { return static_cast<long>(::read(fd, b, n)); },
        [fd](const std::string& s) { (void)!::write(fd, s.data(), s.size()); }};
  if (tls_) {
    ssl = SSL_new(static_cast<SSL_CTX*>(tls_.get()));
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) != 1) {
      ERR_clear_error();
      SSL_free(ssl);
      return;
    }
    io = Io{[ssl](char* b, size_t n) { return static_cast<long>(SSL_read(ssl, b, static_cast<int>(n))); },
            [ssl](const std::string& s) { SSL_write(ssl, s.data(), static_cast<int>(s.size())); }};
  }
  std::string in;
  size_t head_end = 0, need = 0;
  if (read_request(io, in, head_end, need)) {
    Request r = parse_request(in, head_end, need);
    if (ssl && SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name))
      r.sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    int status = 200;
    std::string body;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (requests_.size() < statuses_.size()) status = statuses_[requests_.size()];
      requests_.push_back(std::move(r));
      body = reply_;
    }
    io.write("HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\nConnection: close\r\n\r\n" + body);
  }
  if (ssl) {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
}

TestCa::TestCa(const std::string& dir) : dir_(dir) {
  auto r = run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/ca.key", "-out",
                dir + "/ca.pem", "-days", "30", "-subj", "/CN=Phoenix Test CA"},
               dir);
  if (r.exit_code != 0) throw std::runtime_error("openssl req (CA): " + r.output);
  // `openssl ca` signs with any dates, past ones included.
  write(dir, "ca/index.txt", "");
  write(dir, "ca/serial", "1000\n");
  write(dir, "ca.cnf",
        "[ca]\ndefault_ca = test\n[test]\ndir = " + dir +
            "/ca\ndatabase = $dir/index.txt\nserial = $dir/serial\nnew_certs_dir = $dir\n"
            "certificate = " +
            dir + "/ca.pem\nprivate_key = " + dir +
            "/ca.key\ndefault_md = sha256\n"
            "policy = any\ncopy_extensions = copy\nunique_subject = no\n[any]\ncommonName = supplied\n");
}

CertFiles TestCa::issue(const std::string& name, const std::string& san, bool expired) const {
  CertFiles f{dir_ + "/" + name + ".pem", dir_ + "/" + name + ".key"};
  auto r = run({"openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f.key, "-out",
                dir_ + "/" + name + ".csr", "-subj", "/CN=" + name, "-addext", "subjectAltName=" + san},
               dir_);
  if (r.exit_code != 0) throw std::runtime_error("openssl req: " + r.output);
  std::vector<std::string> sign{
      "openssl", "ca",   "-batch", "-config", dir_ + "/ca.cnf", "-in", dir_ + "/" + name + ".csr",
      "-out",    f.cert, "-notext"};
  if (expired) sign.insert(sign.end(), {"-startdate", "20200101000000Z", "-enddate", "20200201000000Z"});
  else sign.insert(sign.end(), {"-days", "365"});
  r = run(sign, dir_);
  if (r.exit_code != 0) throw std::runtime_error("openssl ca: " + r.output);
  return f;
}

std::vector<std::string> ConnectProxy::targets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return targets_;
}

namespace {

// A TCP connection to 127.0.0.1:port, -1 when refused.
int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  ::close(fd);
  return -1;
}

// Copies bytes both ways until either side closes or 10 s pass in silence.
void pipe_both(int a, int b) {
  char buf[16384];
  while (true) {
    pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    if (::poll(p, 2, 10000) <= 0) return;
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(p[i].fd, buf, sizeof buf);
      if (n <= 0) return;
      (void)!::write(p[1 - i].fd, buf, static_cast<size_t>(n));
    }
  }
}

}  // namespace

void ConnectProxy::tunnel(int fd) {
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0 || ::read(fd, &c, 1) != 1) return;  // byte by byte: nothing of TLS is read
    head += c;
  }
  std::istringstream first(head.substr(0, head.find("\r\n")));
  std::string method, authority;
  first >> method >> authority;
  {
    std::lock_guard<std::mutex> lock(mu_);
    targets_.push_back(authority);
  }
  size_t colon = authority.rfind(':');
  std::string host = authority.substr(0, colon);
  int to = method == "CONNECT" && (host == "127.0.0.1" || host == "localhost")
               ? connect_loopback(std::stoi(authority.substr(colon + 1)))
               : -1;
  if (to < 0) {
    std::string no = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
    (void)!::write(fd, no.data(), no.size());
    return;
  }
  std::string ok = "HTTP/1.1 200 Connection established\r\n\r\n";
  (void)!::write(fd, ok.data(), ok.size());
  pipe_both(fd, to);
  ::close(to);
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = ::getenv(name)) old_ = old, had_ = true;
  if (value) ::setenv(name, value, 1);
  else ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (had_) ::setenv(name_.c_str(), old_.c_str(), 1);
  else ::unsetenv(name_.c_str());
}

}  // namespace phoenix::test
