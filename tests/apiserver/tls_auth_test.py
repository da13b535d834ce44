"""Reaching the server: HTTPS on 127.0.0.1 with a CA-verified client certificate or a bearer
token, 401 otherwise, and the kubeconfig/port files of the launch contract."""
import os
import shutil
import ssl
import subprocess
import tempfile
import unittest

from testlib import ApiError, Client, ServerTestCase


class TlsAndAuthenticationTest(ServerTestCase):
    SERVER_OPTIONS = {"tokens": ["tok-one", "tok-two"], "run_controllers": False}

    def test_client_certificate_is_accepted(self):
        self.assertEqual(self.api.get("/version")["gitVersion"], "v1.28.0")

    def test_every_configured_token_is_accepted(self):
        for tok in ("tok-one", "tok-two"):
            c = Client(self.server.port, self.dir, cert=False, token=tok)
            self.assertEqual(c.get("/api/v1/namespaces/default")["metadata"]["name"], "default")

    def test_no_credentials_get_401_status(self):
        c = Client(self.server.port, self.dir, cert=False)
        with self.assertRaises(ApiError) as e:
            c.get("/api/v1/namespaces")
        self.assertEqual(e.exception.code, 401)
        self.assertEqual(e.exception.body["kind"], "Status")
        self.assertEqual(e.exception.body["reason"], "Unauthorized")

    def test_unknown_token_gets_401(self):
        c = Client(self.server.port, self.dir, cert=False, token="guess")
        with self.assertRaises(ApiError) as e:
            c.get("/version")
        self.assertEqual(e.exception.code, 401)

    def test_certificate_from_another_ca_is_refused(self):
        other = tempfile.mkdtemp(prefix="fake-apiserver-other-ca-")
        self.addCleanup(shutil.rmtree, other, True)
        from fakeapi import tls_material
        tls_material.ensure_certificates(other)
        c = Client(self.server.port, other, ca=os.path.join(self.dir, "ca.crt"))
        with self.assertRaises((ssl.SSLError, ConnectionError, ApiError)):
            c.get("/version")
        c.close()

    def test_server_certificate_names_127_0_0_1_and_localhost(self):
        out = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in",
                              os.path.join(self.dir, "server.crt")], capture_output=True,
                             text=True, check=True).stdout
        self.assertIn("IP Address:127.0.0.1", out)
        self.assertIn("DNS:localhost", out)

    def test_kubeconfigs_and_port_file_match_the_listener(self):
        with open(os.path.join(self.dir, "port")) as f:
            self.assertEqual(int(f.read()), self.server.port)
        with open(os.path.join(self.dir, "kubeconfig")) as f:
            text = f.read()
        self.assertIn('"https://127.0.0.1:%d"' % self.server.port, text)
        self.assertIn("client-certificate: \"%s/admin.crt\"" % self.dir, text)
        self.assertIn("current-context: fake", text)
        with open(os.path.join(self.dir, "kubeconfig-token")) as f:
            self.assertIn('token: "tok-one"', f.read())

    def test_discovery_lists_served_groups_only(self):
        groups = [g["name"] for g in self.api.get("/apis")["groups"]]
        self.assertIn("storage.k8s.io", groups)
        self.assertNotIn("snapshot.storage.k8s.io", groups)
        names = [r["name"] for r in self.api.get("/apis/apps/v1")["resources"]]
        self.assertIn("statefulsets/scale", names)
        e = self.assertApiError(404, self.api.get, "/apis/snapshot.storage.k8s.io/v1")
        self.assertEqual(e["reason"], "NotFound")


class WithoutLeasesTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False, "leases": False}

    def test_cluster_without_leases_serves_no_coordination_group(self):
        groups = [g["name"] for g in self.api.get("/apis")["groups"]]
        self.assertNotIn("coordination.k8s.io", groups)
        self.assertApiError(404, self.api.get,
                            "/apis/coordination.k8s.io/v1/namespaces/default/leases")


if __name__ == "__main__":
    unittest.main()
