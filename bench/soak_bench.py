#!/usr/bin/python3
"""The long soak of issue #37: flexcsi-bridge and csi-loopback through many node life cycles and
flexcsi-controller through many provision/delete cycles, with their memory, open files, threads,
databases and logs sampled along the way.

It runs the soak tests of tests/soak (the ones ctest runs for CI, short) for longer:
node_soak_test in a private mount namespace (the kubelet-faithful caller drives the real
flexexec, bridge and csi-loopback on real loop devices: attach, isattached, waitforattach,
mountdevice, getvolumename, read-write and read-only pods with different fsGroups, unmount,
unmountdevice, detach, three volumes at once), and controller_soak_test against the stand-in API
server of tests/apiserver (claims created, provisioned, Bound, deleted, PV and CSI volume gone,
four at once). Each test judges its own samples with JudgeLevelsOff (tests/soak/levels_off.h:
the same rule as CI) and writes them as JSON; this program prints them as tables, with the
verdicts, and plots them into one PNG (python3-matplotlib).

Usage (as root, from the repository root, after building; build dir: FLEXCSI_BUILD_DIR or build):
  bench/soak_bench.py [--lifecycles 10000] [--sample-every 500]
                      [--controller-cycles 5000] [--controller-sample-every 250]
                      [--plot soak.png] [--out DIR]
--lifecycles 0 or --controller-cycles 0 skips that soak. Exits 1 when a figure does not level
off (or a test fails otherwise). A benchmark: nothing here asserts a time."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))


def build_dir():
    return os.path.abspath(os.environ.get("FLEXCSI_BUILD_DIR") or os.path.join(REPO, "build"))


def run_soak(binary, env_vars, out_dir, title):
    """Runs one soak test binary in a private mount namespace; its report (JSON) and exit code."""
    env = dict(os.environ, FLEXCSI_SOAK_REPORT_DIR=out_dir, **env_vars)
    command = ["unshare", "-m", "--propagation", "private", binary]
    print("+ " + " ".join(f"{k}={v}" for k, v in env_vars.items()) + " " + " ".join(command),
          flush=True)
    started = time.monotonic()
    log_path = os.path.join(out_dir, title + ".log")
    with open(log_path, "w") as log:
        code = subprocess.call(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - started
    report_path = os.path.join(out_dir, title + ".json")
    report = None
    if os.path.exists(report_path):
        with open(report_path) as f:
            report = json.load(f)
    print(f"{title}: exit {code} after {seconds:.0f} s (output: {log_path})", flush=True)
    if code != 0:
        with open(log_path) as f:
            tail = f.read()[-4000:]
        print(tail)
    return report, code, seconds


def print_table(report, seconds):
    metrics = report["metrics"]
    names = ["cycles"] + metrics
    rows = [[str(s["cycle"])] + [f"{s[m]:.0f}" for m in metrics] for s in report["samples"]]
    widths = [max(len(n), *(len(r[i]) for r in rows)) for i, n in enumerate(names)]
    print(f"\n{report['title']} ({seconds:.0f} s)")
    print("  ".join(n.rjust(w) for n, w in zip(names, widths)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    for m in metrics:
        v = report["verdicts"][m]
        verdict = "levels off" if v["levelsOff"] else "GROWS: " + v["reason"]
        print(f"  {m}: {verdict} (baseline {v['baseline']:.6g}, last {v['last']:.6g}, "
              f"slope {v['slopePer1000']:.4g} per 1000 cycles)")


def plot(reports, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: python3-matplotlib is missing (scripts/install-deps.sh installs it)")
        return
    panels = [(r, m) for r in reports for m in r["metrics"]]
    columns = 4
    rows = (len(panels) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 2.6 * rows), squeeze=False)
    for ax, (report, metric) in zip(axes.flat, panels):
        xs = [s["cycle"] for s in report["samples"]]
        ys = [s[metric] for s in report["samples"]]
        ok = report["verdicts"][metric]["levelsOff"]
        ax.plot(xs, ys, marker=".", color="tab:blue" if ok else "tab:red")
        ax.set_title(f"{report['title']}: {metric}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylim(bottom=0)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.supxlabel("life cycles (node) / claims (controller)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot written to {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lifecycles", type=int, default=10000)
    parser.add_argument("--sample-every", type=int, default=500)
    parser.add_argument("--controller-cycles", type=int, default=5000)
    parser.add_argument("--controller-sample-every", type=int, default=250)
    parser.add_argument("--plot", default="soak.png")
    parser.add_argument("--out", help="where the reports and logs go (default: a new temp dir)")
    args = parser.parse_args()
    out_dir = args.out or tempfile.mkdtemp(prefix="flexcsi-soak-bench.")
    os.makedirs(out_dir, exist_ok=True)
    tests = os.path.join(build_dir(), "tests", "soak")

    runs = []
    if args.lifecycles > 0:
        runs.append((os.path.join(tests, "node_soak_test"), "node-soak",
                     {"FLEXCSI_SOAK_LIFECYCLES": str(args.lifecycles),
                      "FLEXCSI_SOAK_SAMPLE_EVERY": str(args.sample_every)}))
    if args.controller_cycles > 0:
        runs.append((os.path.join(tests, "controller_soak_test"), "controller-soak",
                     {"FLEXCSI_SOAK_CONTROLLER_CYCLES": str(args.controller_cycles),
                      "FLEXCSI_SOAK_CONTROLLER_SAMPLE_EVERY": str(args.controller_sample_every)}))
    reports, failed = [], False
    for binary, title, env_vars in runs:
        report, code, seconds = run_soak(binary, env_vars, out_dir, title)
        failed |= code != 0
        if report:
            print_table(report, seconds)
            reports.append(report)
    if reports:
        plot(reports, args.plot)
    print(f"reports and logs in {out_dir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
