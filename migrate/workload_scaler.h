// The one place `flexcsi migrate` changes a workload's replicas: through its /scale subresource,
// read-modify-write with resourceVersion, so a concurrent writer (a person, or an
// HorizontalPodAutoscaler that read the scale before us) gets 409 instead of undoing our write.
// Used by a PV's own steps (rollback, and apply of a PV outside any workload group) and by the
// workload group's steps (apply of every PV of a workload under one scale-down).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "kube/kube_client.h"
#include "migrate/journal.h"

namespace flexcsi::migrate {

kube::ResourcePath ScaleOf(const ScaledWorkload& w);

// spec.replicas of `w` as the server says now.
StatusOr<int64_t> ReadReplicas(kube::KubeClient& client, const ScaledWorkload& w);

// Sets spec.replicas to `replicas` unless it is there already (no write then, so repeating a
// scale after a crash writes nothing). only_from_zero: the restore rule: the workload is changed
// only while it is still at 0; if someone scaled it meanwhile their word stands and `note` says
// so. A workload that no longer exists is a note too when `note` is given, else an error.
Status ScaleWorkloadTo(kube::KubeClient& client, const ScaledWorkload& w, int64_t replicas,
                       bool only_from_zero, std::string* note);

}  // namespace flexcsi::migrate
