"""Certificates for one test cluster, made by openssl: a CA and EC P-256 leaf certificates.

EC keys keep the whole set under a second even on a loaded 2-core machine; the Kubernetes
binaries accept them for serving, client and service-account signing."""
import os
import subprocess


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def _ec_key(directory, name):
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", name + ".key",
             cwd=directory)


class ClusterPki:
    """Creates, in `directory`, ca.{crt,key}, one leaf pair per `leaf()` call and the
    service-account key pair sa.{key,pub}. Paths are absolute."""

    def __init__(self, directory):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        _ec_key(directory, "ca")
        _openssl("req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", "2",
                 "-subj", "/CN=flexcsi-test-cluster-ca", "-out", "ca.crt", cwd=directory)
        _ec_key(directory, "sa")
        _openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=directory)

    def path(self, name):
        return os.path.join(self.dir, name)

    def leaf(self, name, common_name, organization=None, dns=(), ips=(), server=False):
        """Signs `name`.crt for `name`.key; returns (crt, key) paths."""
        _ec_key(self.dir, name)
        subject = "/CN=" + common_name + ("/O=" + organization if organization else "")
        _openssl("req", "-new", "-key", name + ".key", "-subj", subject, "-out", name + ".csr",
                 cwd=self.dir)
        usage = "serverAuth" if server else "clientAuth"
        ext = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
               "extendedKeyUsage=" + usage]
        alt = ["DNS:" + d for d in dns] + ["IP:" + i for i in ips]
        if alt:
            ext.append("subjectAltName=" + ",".join(alt))
        with open(self.path(name + ".ext"), "w") as f:
            f.write("\n".join(ext) + "\n")
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-sha256", "-extfile", name + ".ext",
                 "-out", name + ".crt", cwd=self.dir)
        return self.path(name + ".crt"), self.path(name + ".key")


def write_kubeconfig(path, server, ca, crt, key, user="admin", namespace="default"):
    """A kubeconfig with absolute file paths, as kubectl and our kube/ client read it."""
    text = """apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: {user}
  user:
    client-certificate: {crt}
    client-key: {key}
contexts:
- name: test
  context:
    cluster: test
    user: {user}
    namespace: {namespace}
current-context: test
""".format(server=server, ca=ca, crt=crt, key=key, user=user, namespace=namespace)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path
