"""Certificates (made with the openssl command, once per state directory) and the two
kubeconfig files clients use: one with the admin client certificate, one with a bearer token.
"""
import os
import subprocess


def _openssl(args, cwd):
    subprocess.run(["openssl"] + args, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


# P-256 keys: as good as RSA for a test CA, and generated in milliseconds on a loaded machine.
_NEW_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def ensure_certificates(directory):
    """Creates ca.*, server.* and admin.* in directory unless they all exist already."""
    names = ["ca.crt", "ca.key", "server.crt", "server.key", "admin.crt", "admin.key"]
    if all(os.path.exists(os.path.join(directory, n)) for n in names):
        return
    d = directory
    os.makedirs(d, exist_ok=True)
    _openssl(["req", "-x509"] + _NEW_KEY + ["-days", "3650", "-keyout", "ca.key",
                                             "-out", "ca.crt", "-subj", "/CN=fake-apiserver-ca",
              "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"], d)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n")
    for who, subj, ext in (("server", "/CN=localhost", "server.ext"),
                           ("admin", "/O=system:masters/CN=admin", "client.ext")):
        _openssl(["req"] + _NEW_KEY + ["-keyout", who + ".key", "-out", who + ".csr",
                                        "-subj", subj], d)
        _openssl(["x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                  "-CAcreateserial", "-days", "3650", "-out", who + ".crt", "-extfile", ext], d)
        os.remove(os.path.join(d, who + ".csr"))
    for n in ("ca.key", "server.key", "admin.key"):
        os.chmod(os.path.join(d, n), 0o600)


def _quote(value):
    # YAML double-quoted scalar: safe for any path or token we write.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_kubeconfigs(directory, port, token):
    d = os.path.abspath(directory)
    server = "https://127.0.0.1:%d" % port
    common = ("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
              "    server: %s\n    certificate-authority: %s\n"
              "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: %%s\n"
              "    namespace: default\ncurrent-context: fake\n"
              % (_quote(server), _quote(os.path.join(d, "ca.crt"))))
    cert_cfg = common % "admin" + ("users:\n- name: admin\n  user:\n"
                                   "    client-certificate: %s\n    client-key: %s\n"
                                   % (_quote(os.path.join(d, "admin.crt")),
                                      _quote(os.path.join(d, "admin.key"))))
    token_cfg = common % "token-user" + ("users:\n- name: token-user\n  user:\n    token: %s\n"
                                         % _quote(token))
    for name, text in (("kubeconfig", cert_cfg), ("kubeconfig-token", token_cfg)):
        path = os.path.join(d, name)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
