"""Which Kubernetes the test cluster runs, and the one place that knows what differs between the
releases the suites run on (v1.24, v1.14.6 and v1.10.6, ../shared/kube-assets/README.md): the harness's
flags, and what the suites may expect of the cluster.

The version is read from the binaries (`kube-apiserver --version`), never from a folder name.
Facts are stated for the three releases measured here; a boundary between them comes from the
Kubernetes release that changed it."""
import os
import re
import subprocess


class KubeVersion:
    def __init__(self, major, minor, patch=0):
        self.major, self.minor, self.patch = major, minor, patch

    @classmethod
    def of_binaries(cls, bin_dir):
        out = subprocess.run([os.path.join(bin_dir, "kube-apiserver"), "--version"],
                             capture_output=True, text=True, check=True).stdout
        m = re.search(r"v(\d+)\.(\d+)\.(\d+)", out)
        if not m:
            raise RuntimeError("kube-apiserver --version said %r" % out.strip())
        return cls(*map(int, m.groups()))

    def __str__(self):
        return "v%d.%d.%d" % (self.major, self.minor, self.patch)

    def at_least(self, minor):
        return (self.major, self.minor) >= (1, minor)

    # ----- the harness ---------------------------------------------------------------------

    @property
    def readiness_path(self):
        # /readyz came with 1.16; before it, /healthz is all there is.
        return "/readyz" if self.at_least(16) else "/healthz"

    def apiserver_flags(self, sa_public_key, sa_private_key):
        if not self.at_least(20):
            # 1.10 serves plain HTTP on 127.0.0.1:8080 unless told not to; its service-account
            # tokens are the legacy ones (the issuer and signing key are 1.20's requirement).
            return ["--insecure-port", "0", "--service-account-key-file", sa_public_key]
        return ["--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file", sa_public_key,
                "--service-account-signing-key-file", sa_private_key]

    @property
    def audit_api_version(self):
        # audit.k8s.io/v1 is 1.12's; 1.10 reads (and writes events in) v1beta1, same fields.
        return "audit.k8s.io/v1" if self.at_least(12) else "audit.k8s.io/v1beta1"

    def control_plane_serving_flags(self, kubeconfig, port):
        """kube-controller-manager's and kube-scheduler's health port on loopback."""
        if not self.at_least(13):
            # 1.10 serves health on plain HTTP only (--address/--port); no delegated auth.
            return ["--address", "127.0.0.1", "--port", str(port)]
        flags = ["--authentication-kubeconfig", kubeconfig,
                 "--authorization-kubeconfig", kubeconfig,
                 "--bind-address", "127.0.0.1", "--secure-port", str(port)]
        if not self.at_least(23):
            # Until the insecure port went (kube-scheduler 1.23), both also serve plain HTTP on
            # every address at a fixed port (10251, 10252) that two clusters would fight over.
            flags += ["--port", "0"]
        return flags

    def kubelet_flags(self, plugin_dir):
        flags = []
        if not self.at_least(11):
            # 1.10 refuses privileged containers unless kubelet allows them.
            flags.append("--allow-privileged=true")
        if not self.at_least(19):
            # KubeletConfiguration has volumePluginDir from 1.19 on; before, the field is
            # silently ignored and kubelet execs FlexVolume drivers from its built-in default.
            flags += ["--volume-plugin-dir", plugin_dir]
        return flags

    @property
    def kubelet_status_config(self):
        """How often kubelet checks its node status. It mounts an attachable volume only once
        a status update listed it in volumesInUse (retrying with a doubling back-off until
        then), and a volume is detached only after one no longer lists it: every second, from
        1.13, where an unchanged status is still written only every nodeStatusReportFrequency.
        1.10 knows no such field and writes the whole status at every check: 5 s there."""
        if not self.at_least(13):
            return {"nodeStatusUpdateFrequency": "5s"}
        return {"nodeStatusUpdateFrequency": "1s", "nodeStatusReportFrequency": "1m"}

    @property
    def kubectl_env(self):
        """kubectl 1.32's exec over websockets hangs against 1.10 (1.24 answers it with a
        fallback to SPDY); SPDY is what every release before 1.30 speaks."""
        return {} if self.at_least(24) else {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}

    # ----- what a suite may expect of the cluster -----------------------------------------

    @property
    def expands_flexvolume(self):
        """kubelet and the expand controller resize FlexVolume PVs from 1.13 on."""
        return self.at_least(13)

    @property
    def expands_in_use(self):
        """kubelet grows a mounted volume's file system from 1.15 (ExpandInUsePersistentVolumes
        beta); on 1.13-1.14 only when it mounts the volume next (measured on 1.14.6)."""
        return self.at_least(15)

    @property
    def serves_csinode(self):
        """storage.k8s.io/v1beta1 from 1.14 (written by kubelet, and by the bridge, in the version
        served), v1 from 1.17."""
        return self.at_least(14)

    @property
    def csinode_has_allocatable(self):
        """A CSINode entry's allocatable count came with 1.17; 1.14 drops it."""
        return self.at_least(17)

    @property
    def serves_lease(self):
        """coordination.k8s.io/v1 Leases from 1.14 (v1beta1 from 1.12)."""
        return self.at_least(14)

    @property
    def csi_provisioner_lock(self):
        """The leader-election lock the csi-provisioner of this release's assets takes by default
        for a driver: v1.2.2 (1.14) an Endpoints object, with fixed 15/10/5 s timings and no
        --node-deployment; v3.4.1 (1.24) a Lease. csi-provisioner v2.0, for 1.17 and later,
        dropped the Endpoints lock (cmd/csi-provisioner: --leader-election, Leases only)."""
        return "Lease" if self.at_least(17) else "Endpoints"

    @property
    def refuses_csi_migration(self):
        """`flexcsi migrate apply` refuses: kubelet before 1.13 cannot mount the CSI PVs it
        would make (migrate/cluster_support.h)."""
        return not self.at_least(13)

    # ----- the CSI sidecars kept beside each release in kube-assets ------------------------
    # (v1.14.6: csi-node-driver-registrar v1.1.0, csi-attacher v1.1.1, csi-provisioner v1.2.2;
    # v1.24: their releases of 2022-23. 1.10 has none: kubelet there speaks CSI 0.2.)

    @property
    def registrar_takes_registration_path(self):
        """csi-node-driver-registrar has --plugin-registration-path from v2.0.0 (2020, the
        1.19 era); 1.14's v1.1.0 always creates /registration/<driver>-reg.sock (kubelet_csi.py
        chroots it) and exits 2 on the unknown flag."""
        return self.at_least(19)

    @property
    def csi_driver_api_version(self):
        """CSIDriver is storage.k8s.io/v1 from 1.18; a built-in v1beta1 from 1.14."""
        return "storage.k8s.io/v1" if self.at_least(18) else "storage.k8s.io/v1beta1"

    @property
    def csi_driver_has_fs_group_policy(self):
        """CSIDriver's fsGroupPolicy: 1.19 (alpha), on by default from 1.20. Before, kubelet
        applies a pod's fsGroup to a CSI volume itself when the PV has an fsType, is
        ReadWriteOnce and mounted read-write (what fsGroupPolicy: File asks for)."""
        return self.at_least(20)

    @property
    def csi_provisioner_without_leader_election(self):
        """csi-provisioner's flags for one instance with no lock: --leader-election from v1.5.0
        (the 1.17 era); 1.14's v1.2.2 has only --enable-leader-election, off by default
        (--leader-election exits 2)."""
        return ["--leader-election=false"] if self.at_least(17) else []

    @property
    def hpa_api_version(self):
        """The HorizontalPodAutoscaler version with metrics[] in the v2 shape: autoscaling/v2
        from 1.23, v2beta2 from 1.12 (same fields)."""
        return "autoscaling/v2" if self.at_least(23) else "autoscaling/v2beta2"
