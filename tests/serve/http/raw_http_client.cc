#include "raw_http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace padless::serve::http {
namespace {

using Clock = std::chrono::steady_clock;

bool HasNoBody(int status, bool head) {
  return head || (status >= 100 && status < 200) || status == 204 || status == 304;
}

// Parses the status line and headers of `head` (without the blank line) into `reply`.
bool ParseHead(absl::string_view head, RawReply* reply) {
  std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  if (lines.empty()) return false;
  std::vector<absl::string_view> status_line = absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  if (status_line.size() < 2 || !absl::StartsWith(status_line[0], "HTTP/1.")) return false;
  if (!absl::SimpleAtoi(status_line[1], &reply->status)) return false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) return false;
    reply->headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  return true;
}

}  // namespace

std::string RawReply::Header(const std::string& lower_case_name) const {
  const auto it = headers.find(lower_case_name);
  return it == headers.end() ? "" : it->second;
}

RawHttpClient::RawHttpClient(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    Close();
    return;
  }
  int yes = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
}

RawHttpClient::~RawHttpClient() { Close(); }

void RawHttpClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawHttpClient::Send(absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool RawHttpClient::Fill(Clock::time_point deadline) {
  if (fd_ < 0 || closed_by_peer_) return false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // end of stream, or reset
      closed_by_peer_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }
}

std::optional<RawReply> RawHttpClient::Read(std::chrono::milliseconds timeout, bool head) {
  const Clock::time_point deadline = Clock::now() + timeout;
  size_t end_of_head;
  while ((end_of_head = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!Fill(deadline)) return std::nullopt;
  }
  RawReply reply;
  if (!ParseHead(absl::string_view(buffer_).substr(0, end_of_head), &reply)) return std::nullopt;
  size_t length = 0;
  if (!HasNoBody(reply.status, head) &&
      !absl::SimpleAtoi(reply.Header("content-length"), &length)) {
    return std::nullopt;  // the transport always frames by Content-Length
  }
  if (HasNoBody(reply.status, head)) length = 0;
  const size_t body_start = end_of_head + 4;
  while (buffer_.size() < body_start + length) {
    if (!Fill(deadline)) return std::nullopt;
  }
  reply.body = buffer_.substr(body_start, length);
  buffer_.erase(0, body_start + length);
  return reply;
}

bool RawHttpClient::ClosedWithin(std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (Fill(deadline)) {
  }
  return closed_by_peer_;
}

std::string GetRequest(absl::string_view path, absl::string_view extra_headers) {
  return absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: test\r\n", extra_headers, "\r\n");
}

std::string PostRequest(absl::string_view path, absl::string_view body,
                        absl::string_view content_type, absl::string_view extra_headers) {
  return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: test\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(), "\r\n", extra_headers, "\r\n", body);
}

}  // namespace padless::serve::http
