// RelevantRevision: a fingerprint of the parts of an API object that the controller's work on
// it depends on, for the work queue's backoff (work_queue.h). Two versions of an object with
// the same fingerprint would be handled the same way, so an update between them (an event
// echoed back, a status or label write, a resync) must not retry a failed key early; a
// different fingerprint (a new spec, a new selected node, deletion) is a new attempt.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace flexcsi::controller {

// `kind` is the work-queue key prefix: "claim", "pv", "snapshot" or "content". Covered: uid,
// spec, whether deletion started, and for claims the provisioner and selected-node annotations,
// for PVs the phase. Not covered: status (for claims and snapshots mostly written by the
// controllers themselves), labels, other annotations, resourceVersion.
std::string RelevantRevision(const std::string& kind, const nlohmann::json& object);

}  // namespace flexcsi::controller
