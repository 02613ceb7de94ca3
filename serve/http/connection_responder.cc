#include "connection_responder.h"

#include <mutex>
#include <utility>

#include <boost/asio/post.hpp>

#include "http_connection.h"
#include "padless/serve/http/api_error.h"
#include "wire_response.h"

namespace padless::serve::http {

ConnectionResponder::ConnectionResponder(std::weak_ptr<HttpConnection> connection,
                                         uint64_t sequence, std::shared_ptr<ResponderGate> gate)
    : connection_(std::move(connection)), sequence_(sequence), gate_(std::move(gate)) {}

ConnectionResponder::~ConnectionResponder() {
  if (!Claim()) return;
  Deliver([] { return ErrorResponse(Internal("the request was dropped without an answer")); });
}

bool ConnectionResponder::Claim() { return !answered_.exchange(true, std::memory_order_acq_rel); }

void ConnectionResponder::Send(HttpResponse response) {
  if (!Claim()) return;
  Deliver([response = std::move(response)]() mutable { return std::move(response); });
}

void ConnectionResponder::Defer(std::function<HttpResponse()> make) {
  if (!Claim()) return;
  Deliver(std::move(make));
}

void ConnectionResponder::Deliver(std::function<HttpResponse()> make) {
  // Shared: answers from many threads post at once; Drain takes it exclusively to close the gate.
  std::shared_lock<std::shared_mutex> lock(gate_->mu);
  if (!gate_->open) return;
  std::shared_ptr<HttpConnection> connection = connection_.lock();
  if (connection == nullptr) return;  // closed: nobody to answer
  const Strand strand = connection->strand();
  boost::asio::post(strand, [connection = std::move(connection), sequence = sequence_,
                             make = std::move(make)] { connection->Answer(sequence, make); });
}

}  // namespace padless::serve::http
