"""Running `flexcsi migrate` against a test cluster, and reading back from the API server's audit
log what it did to workloads: shared by the migrate suite and the multi-node suite."""
import json
import os
import subprocess


def write_rules(path, flex_driver, csi_driver):
    """A rules file that moves `flex_driver`'s PVs to `csi_driver`, the handle from the
    volumeID option (as the bridge's own rule does)."""
    with open(path, "w") as f:
        json.dump({"flexVolumeRules": [{"flexDriver": flex_driver, "csiDriver": csi_driver,
                                        "volumeHandle": {"fromOption": "volumeID"}}]}, f)
    return path


def migrate(flexcsi_bin, rules, kubeconfig, *args, crash_after=None, journal, timeout=300):
    """`flexcsi migrate <args> --yes`; `crash_after`: the step after which it kills itself with
    -9 (FLEXCSI_MIGRATE_CRASH_AFTER). Returns the CompletedProcess."""
    env = dict(os.environ)
    env.pop("FLEXCSI_MIGRATE_CRASH_AFTER", None)
    if crash_after:
        env["FLEXCSI_MIGRATE_CRASH_AFTER"] = crash_after
    rules_args = [] if args[0] == "rollback" else ["--rules", rules]
    return subprocess.run(
        [flexcsi_bin, "migrate", *args, *rules_args, "--journal", journal,
         "--kubeconfig", kubeconfig, "--yes", "--timeout", str(timeout)],
        capture_output=True, text=True, env=env, timeout=timeout * 4 + 100)


def scale_writes(events, resource, ns=None, name=None):
    """[(user agent's program, replicas written)] of the successful /scale writes of
    `resource` ("deployments", "statefulsets"), optionally of one object, in the audit log's
    order."""
    written = []
    for e in events:
        ref = e.get("objectRef", {})
        if (ref.get("resource") != resource or ref.get("subresource") != "scale"
                or e.get("verb") not in ("update", "patch")
                or e.get("responseStatus", {}).get("code", 500) >= 300
                or (ns and ref.get("namespace") != ns) or (name and ref.get("name") != name)):
            continue
        # a Scale's spec.replicas is omitempty: 0 is an absent field in the recorded body
        written.append((e.get("userAgent", "").split("/")[0],
                        (e.get("requestObject") or {}).get("spec", {}).get("replicas", 0)))
    return written
