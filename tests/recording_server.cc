#include "recording_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <sstream>
#include <stdexcept>

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

}  // namespace

int dead_port() {
  int port = 0;
  ::close(bind_loopback(&port));
  return port;
}

RecordingServer::RecordingServer(std::vector<int> statuses) : statuses_(std::move(statuses)) {
  listen_fd_ = bind_loopback(&port_);
  ::listen(listen_fd_, 16);
  thread_ = std::thread([this] { serve(); });
}

RecordingServer::~RecordingServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

std::string RecordingServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<RecordingServer::Request> RecordingServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void RecordingServer::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    answer(fd);
    ::close(fd);
  }
}

void RecordingServer::answer(int fd) {
  std::string in;
  char buf[4096];
  size_t head_end = std::string::npos, need = 0;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return;  // a client that stopped talking
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return;
    in.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos && (head_end = in.find("\r\n\r\n")) != std::string::npos) {
      std::string lower = in.substr(0, head_end);
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t cl = lower.find("content-length:");
      need = cl == std::string::npos ? 0 : std::stoul(lower.substr(cl + 15));
    }
    if (head_end != std::string::npos && in.size() >= head_end + 4 + need) break;
  }
  Request r;
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
    r.headers[name] = value;
    while (!r.headers[name].empty() && r.headers[name].front() == ' ') r.headers[name].erase(0, 1);
  }
  r.body = in.substr(head_end + 4, need);
  int status = 200;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (requests_.size() < statuses_.size()) status = statuses_[requests_.size()];
    requests_.push_back(std::move(r));
  }
  std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, out.data(), out.size());
}

}  // namespace phoenix::test
