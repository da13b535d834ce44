"""What a test of a rolling upgrade watches: the workload rolled out to its new template, and a
pod appending numbered, timed lines to its volume meanwhile, whose file shows a lost or failed
write and the longest stall, and whether the node kept the volume's mounts. Used by the deploy
suite (one node) and the multi-node suite's rollout test."""
from clustertest import get

# A rollout must leave the writer's volume mounted throughout. A write gap alone cannot tell a
# remount from a busy machine (two cores under stress-ng stall a shell loop for seconds), so
# the tests hold the node's mounts fixed (volume_mounts) and bound the gap only against a hung
# volume.
HUNG_VOLUME_S = 30

# Appends "<n> <seconds>" to /data/log every 0.2 s; the time is the machine's uptime, to 10 ms
# (busybox's date has no fractions), the same clock in every pod and node of a test cluster. A
# failed write is logged ("FAILED write <n>"), not fatal: the next ones still tell.
APPEND_EVERY_0_2_S = ('i=0; while true; do i=$((i+1)); '
                      'echo "$i $(cut -d" " -f1 /proc/uptime)" >> /data/log '
                      '|| echo "FAILED write $i"; sleep 0.2; done')


def uptime():
    """The writers' clock, for the test's own marks (rollout start and end)."""
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def volume_mounts(mountinfo, volume):
    """{mount point: mount ID} of a volume's mounts in a node's mountinfo text: kubelet's
    device mount and each pod's, all named after the PV (or inline volume). Unmounted and
    mounted again, a volume's mount has another ID; a container's own view cannot show that,
    as it keeps its bind mount either way."""
    mounts = {}
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4].rsplit("/", 1)[-1] == volume:
            mounts[fields[4]] = fields[0]
    return mounts


def rolled_out(kind, name, ns, image=None):
    """The workload's newest generation is observed, every replica updated and ready, and
    (when given) running `image`."""
    obj = get(kind, name, ns)
    if not obj or obj["status"].get("observedGeneration") != obj["metadata"]["generation"]:
        return False
    st = obj["status"]
    if kind == "daemonset":
        done = (st.get("desiredNumberScheduled", 0) > 0
                and st.get("updatedNumberScheduled") == st["desiredNumberScheduled"]
                and st.get("numberReady") == st["desiredNumberScheduled"]
                and st.get("numberUnavailable", 0) == 0)
    else:
        done = (st.get("updatedReplicas") == obj["spec"]["replicas"]
                and st.get("availableReplicas") == obj["spec"]["replicas"])
    if done and image:
        done = all(ct["image"] == image for ct in obj["spec"]["template"]["spec"]["containers"])
    return done


class WriteLog:
    """The lines APPEND_EVERY_0_2_S wrote: `missing` numbers (a write lost), and the gaps
    between consecutive writes."""

    def __init__(self, lines):
        rows = [line.split() for line in lines if line.strip()]
        self.seq = [int(r[0]) for r in rows]
        self.stamps = [float(r[1]) for r in rows]
        self.missing = sorted(set(range(1, max(self.seq, default=0) + 1)) - set(self.seq))
        self.in_order = self.seq == sorted(self.seq) and len(set(self.seq)) == len(self.seq)

    def longest_gap(self, since=None, until=None):
        """(seconds, at) of the longest gap between two writes, counting only writes from
        `since` to `until` (uptime) when given, and the gap into the first of them."""
        best = (0.0, None)
        for a, b in zip(self.stamps, self.stamps[1:]):
            if (since is None or b >= since) and (until is None or a <= until):
                best = max(best, (b - a, a))
        return best
