#!/usr/bin/env python3
"""`flexcsi migrate apply` on a real Kubernetes v1.24 (the tests/cluster harness): PVs per minute
for idle FlexVolume claims moved one at a time and with --parallel, the parallel run killed with
-9 half-way and resumed. Prints figures; asserts nothing about time.

    FLEXCSI_KUBE_ASSETS=../shared/kube-assets [FLEXCSI_BUILD_DIR=build] \\
        bench/migrate_cluster_bench.py [--pvs 500] [--serial-pvs 50] [--parallel 16]

Where the time goes is printed too, per step, from the journal's history (whole seconds):
`binding` waits for kube-controller-manager's PV controller, which binds a Lost claim again
only at its periodic claim sync (--pvclaimbinder-sync-period, 15 s), so one PV at a time is
bounded by that sync (about 4 PVs/min); --parallel N overlaps the waits (about 4N/min)."""
import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from cluster_bench import bench_cluster, flexcsi_binary

FLEX_DRIVER = "bench/lvm"
CSI_DRIVER = "bench.csi.flexcsi.io"


def objects_for(ns, names):
    out = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    for n in names:
        out.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": n},
                    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                             "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "",
                             "claimRef": {"namespace": ns, "name": n},
                             "flexVolume": {"driver": FLEX_DRIVER, "fsType": "ext4",
                                            "options": {"volumeID": "vg0/" + n}}}})
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": n, "namespace": ns},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                             "volumeName": n, "resources": {"requests": {"storage": "1Gi"}}}})
    return out


class Bench:
    def __init__(self, c, flexcsi, workdir):
        self.c, self.flexcsi, self.workdir = c, flexcsi, workdir
        self.rules = os.path.join(workdir, "rules.json")
        with open(self.rules, "w") as f:
            json.dump({"flexVolumeRules": [{"flexDriver": FLEX_DRIVER, "csiDriver": CSI_DRIVER,
                                            "volumeHandle": {"fromOption": "volumeID"}}]}, f)
        self.apply([{"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                     "metadata": {"name": CSI_DRIVER}, "spec": {"attachRequired": False}}])

    def apply(self, items):
        for i in range(0, len(items), 200):
            self.c.kubectl("apply", "-f", "-", timeout=300, input=json.dumps(
                {"apiVersion": "v1", "kind": "List", "items": items[i:i + 200]}))

    def bound(self, ns):
        claims = self.c.kubectl_json("get", "pvc", "-n", ns)["items"]
        return sum(1 for c in claims if c.get("status", {}).get("phase") == "Bound")

    def create(self, ns, count):
        names = ["%s-%04d" % (ns, i) for i in range(count)]
        self.apply(objects_for(ns, names))
        deadline = time.monotonic() + 600
        while self.bound(ns) < count:
            if time.monotonic() > deadline:
                raise RuntimeError("claims in %s did not bind" % ns)
            time.sleep(2)
        return names

    def command(self, ns, journal, parallel):
        return [self.flexcsi, "migrate", "apply", "--all", "-n", ns, "--parallel", str(parallel),
                "--rules", self.rules, "--journal", journal, "--kubeconfig", self.c.kubeconfig,
                "--yes", "-o", "json"]

    def moved(self, journal):
        r = subprocess.run([self.flexcsi, "migrate", "status", "--journal", journal, "-o", "json"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return 0
        return sum(1 for i in json.loads(r.stdout)["items"] if i["state"] == "moved")

    def run(self, ns, count, parallel, kill_at=None):
        """Moves every PV of `ns`; with kill_at, SIGKILLs the run once that many are moved and
        resumes it. Returns (seconds, runs' exit codes, moved when killed)."""
        journal = os.path.join(self.workdir, "journal-" + ns)
        log = open(os.path.join(self.workdir, ns + ".log"), "w")
        started = time.monotonic()
        codes, moved_at_kill = [], None
        p = subprocess.Popen(self.command(ns, journal, parallel), stdout=subprocess.DEVNULL,
                             stderr=log)
        if kill_at is not None:
            while p.poll() is None and self.moved(journal) < kill_at:
                time.sleep(0.5)
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                moved_at_kill = self.moved(journal)
        codes.append(p.wait())
        if kill_at is not None:
            codes.append(subprocess.run(self.command(ns, journal, parallel),
                                        stdout=subprocess.DEVNULL, stderr=log).returncode)
        seconds = time.monotonic() - started
        done = self.moved(journal)
        if done != count:
            raise RuntimeError("%s: %d of %d moved (exit codes %s, log %s)"
                               % (ns, done, count, codes, log.name))
        return seconds, codes, moved_at_kill, journal


def step_seconds(journal):
    """Mean seconds from each apply step's announcement to the next one, over every PV."""
    db = sqlite3.connect(os.path.join(journal, "journal.db"))
    rows = db.execute("SELECT pv_name, step, at FROM history WHERE direction='apply' "
                      "AND pv_name NOT LIKE 'group:%' ORDER BY pv_name, id").fetchall()
    spans = {}
    for (pv, step, at), (pv2, _, at2) in zip(rows, rows[1:]):
        if pv == pv2:
            spans.setdefault(step, []).append(at2 - at)
    return {s: sum(v) / len(v) for s, v in spans.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pvs", type=int, default=500)
    parser.add_argument("--serial-pvs", type=int, default=20, help="0: no serial run")
    parser.add_argument("--parallel", type=int, default=16)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    with bench_cluster(__file__, keep=args.keep) as c:
        bench = Bench(c, flexcsi_binary(), c.dir)
        t0 = time.monotonic()
        if args.serial_pvs:
            bench.create("serial", args.serial_pvs)
        bench.create("parallel", args.pvs)
        print("%d + %d bound claims created in %.1f s"
              % (args.serial_pvs, args.pvs, time.monotonic() - t0), flush=True)

        serial_rate = None
        if args.serial_pvs:
            secs, codes, _, journal = bench.run("serial", args.serial_pvs, 1)
            serial_rate = args.serial_pvs * 60 / secs
            print("one at a time (--parallel 1): %d PVs in %.1f s = %.1f PVs/min (exit %s)"
                  % (args.serial_pvs, secs, serial_rate, codes), flush=True)
            print("  mean seconds per step: %s" % ", ".join(
                "%s %.1f" % kv for kv in step_seconds(journal).items()), flush=True)

        secs, codes, at_kill, journal = bench.run("parallel", args.pvs, args.parallel,
                                                  kill_at=args.pvs // 2)
        rate = args.pvs * 60 / secs
        print("--parallel %d: %d PVs in %.1f s = %.1f PVs/min, killed with -9 at %s moved and "
              "resumed (exit codes %s)" % (args.parallel, args.pvs, secs, rate, at_kill, codes),
              flush=True)
        print("  mean seconds per step: %s" % ", ".join(
            "%s %.1f" % kv for kv in step_seconds(journal).items()), flush=True)
        if serial_rate:
            print("speed-up: %.1fx" % (rate / serial_rate), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
