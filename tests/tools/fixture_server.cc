// fixture_server: a small HTTP/1.1 server on 127.0.0.1 for contract and
// visual checks. What it serves depends on files in its working directory
// (re-read on every request), so a fix to those files changes behaviour:
//
//   GET /health        200 "ok" (503 with --mode never-ready)
//   GET /chart.png     a bar chart PNG: chart/color "R G B" (bar colour,
//                      default "40 90 200"), chart/size "WxH" (default 64x48),
//                      chart/noise N (each pixel off by up to N per channel,
//                      deterministic), chart/aa-shift (bar edges drawn
//                      anti-aliased, half a pixel further right)
//   ANY /echo          {"method", "body", "headers": {lower-case name: value}}
//   GET /<path>        the file www/<path> (status from www/<path>.status)
//
//   --port N           required
//   --mode normal | exit-early (print an error, exit 3) | never-ready
// Each request is logged to stdout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "image/image.h"

namespace {

std::string read_file(const std::string& path, bool* ok = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (ok) *ok = static_cast<bool>(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string chart_png() {
  int w = 64, h = 48, r = 40, g = 90, b = 200, noise = 0;
  bool ok = false;
  std::string s = read_file("chart/size", &ok);
  if (ok) std::sscanf(s.c_str(), "%dx%d", &w, &h);
  s = read_file("chart/color", &ok);
  if (ok) std::sscanf(s.c_str(), "%d %d %d", &r, &g, &b);
  s = read_file("chart/noise", &ok);
  if (ok) noise = std::atoi(s.c_str());
  read_file("chart/aa-shift", &ok);
  double shift = ok ? 0.5 : 0.0;
  phoenix::image::Image img;
  img.width = w;
  img.height = h;
  img.rgba.assign(static_cast<size_t>(w) * h * 4, 255);
  unsigned seed = 12345;
  auto rnd = [&] {
    seed = seed * 1103515245u + 12345u;
    return static_cast<int>((seed >> 16) % (2 * noise + 1)) - noise;
  };
  // Three bars; coverage of each pixel column gives anti-aliased edges.
  const double bars[3][3] = {{0.1, 0.3, 0.5}, {0.4, 0.6, 0.8}, {0.7, 0.9, 0.3}};  // x0, x1 (of width), height
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      double cover = 0;
      for (const auto& bar : bars) {
        double x0 = bar[0] * w + shift, x1 = bar[1] * w + shift;
        double c = std::max(0.0, std::min<double>(x + 1, x1) - std::max<double>(x, x0));
        if (y >= h - static_cast<int>(bar[2] * h)) cover = std::max(cover, c);
      }
      unsigned char* p = &img.rgba[(static_cast<size_t>(y) * w + x) * 4];
      int col[3] = {r, g, b};
      for (int k = 0; k < 3; ++k) {
        int v = static_cast<int>(std::lround(255 * (1 - cover) + col[k] * cover));
        if (noise) v += rnd();
        p[k] = static_cast<unsigned char>(std::max(0, std::min(255, v)));
      }
    }
  }
  return phoenix::image::encode_png(img);
}

std::string reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

void respond(int fd, int status, const std::string& type, const std::string& body) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\nContent-Type: " + type +
                     "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  std::string all = head + body;
  size_t off = 0;
  while (off < all.size()) {
    ssize_t n = ::send(fd, all.data() + off, all.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string content_type(const std::string& path) {
  auto ends = [&](const char* s) {
    return path.size() >= std::strlen(s) && path.compare(path.size() - std::strlen(s), std::string::npos, s) == 0;
  };
  if (ends(".json")) return "application/json";
  if (ends(".png")) return "image/png";
  if (ends(".html")) return "text/html";
  return "text/plain";
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string mode = "normal";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--port" && i + 1 < argc) port = std::atoi(argv[++i]);
    else if (a == "--mode" && i + 1 < argc) mode = argv[++i];
  }
  std::cout.setf(std::ios::unitbuf);
  if (mode == "exit-early") {
    std::cout << "fixture_server: starting\nfixture_server: fatal: cannot load config/app.yml\n";
    return 3;
  }
  if (port <= 0) {
    std::cerr << "fixture_server: --port N is required\n";
    return 64;
  }
  int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(ls, 16) != 0) {
    std::cout << "fixture_server: cannot listen on 127.0.0.1:" << port << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  std::cout << "fixture_server: listening on 127.0.0.1:" << port << "\n";
  while (true) {
    int fd = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string req;
    char buf[4096];
    size_t header_end = std::string::npos;
    while (header_end == std::string::npos) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      req.append(buf, static_cast<size_t>(n));
      header_end = req.find("\r\n\r\n");
    }
    if (header_end == std::string::npos) {
      ::close(fd);
      continue;
    }
    std::istringstream head(req.substr(0, header_end));
    std::string method, target, line;
    head >> method >> target;
    std::getline(head, line);
    nlohmann::json headers = nlohmann::json::object();
    size_t content_length = 0;
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value[0] == ' ') value.erase(0, 1);
      headers[name] = value;
      if (name == "content-length") content_length = std::strtoul(value.c_str(), nullptr, 10);
    }
    std::string body = req.substr(header_end + 4);
    while (body.size() < content_length) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      body.append(buf, static_cast<size_t>(n));
    }
    int status = 200;
    std::string type = "text/plain", out;
    if (target == "/health") {
      status = mode == "never-ready" ? 503 : 200;
      out = mode == "never-ready" ? "warming up\n" : "ok\n";
    } else if (target == "/chart.png") {
      type = "image/png";
      out = chart_png();
    } else if (target == "/echo") {
      type = "application/json";
      out = nlohmann::json{{"method", method}, {"body", body}, {"headers", headers}}.dump();
    } else if (target.find("..") == std::string::npos) {
      bool ok = false;
      out = read_file("www" + target, &ok);
      if (!ok) {
        status = 404;
        out = "not found\n";
      } else {
        type = content_type(target);
        std::string st = read_file("www" + target + ".status", &ok);
        if (ok) status = std::atoi(st.c_str());
      }
    } else {
      status = 404;
    }
    if (mode == "never-ready" && target == "/health") std::cout << "fixture_server: still warming up\n";
    std::cout << "fixture_server: " << method << " " << target << " " << status << "\n";
    respond(fd, status, type, out);
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
  }
}
