// How an API server's answer becomes a Status. The mapping is documented on ApiReason in
// kube_client.h; this is its one implementation.
#pragma once

#include <string>

#include "common/status.h"

namespace flexcsi::kube {

// The reason client-go assumes when an error body is not a v1 Status ("Conflict" for 409,
// "InternalError" for 500, ...; "Unknown" for codes it has no word for).
std::string DefaultReasonForHttpCode(long http_code);

// Our code for an HTTP error answer with the given Status reason.
Code CodeForHttpAnswer(long http_code, const std::string& reason);

// The Status for a non-2xx answer: "<reason>: <message>" with the server's reason and message
// taken from the body when it is a v1 Status; otherwise a default reason and a message naming
// the HTTP code (the body is not echoed: a proxy's page can be long and say nothing useful).
Status StatusFromHttpAnswer(long http_code, const std::string& body);

// True for the answers that are worth repeating: 429 Too Many Requests and every 5xx.
bool IsRetryableHttpCode(long http_code);

}  // namespace flexcsi::kube
