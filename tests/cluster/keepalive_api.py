"""Admin requests to the API server over kept-alive TLS connections, one per thread, under a user
agent of the caller's choosing: for the scale harness, which makes thousands of requests a
second (api_requests.py opens a connection per call: a TLS handshake each, far too dear here).
The user agent lets the audit log tell these requests apart from those of the programs
measured."""
import http.client
import json
import ssl
import threading
import time
import urllib.parse


class ApiError(RuntimeError):
    def __init__(self, method, path, status, body):
        super().__init__("%s %s: %d %s" % (method, path, status, body[:300]))
        self.status = status


class KeepAliveApi:
    # Statuses worth another try: the API server's own back-pressure (429 from its max in-flight
    # limit) and its transient failures (etcd slow under load).
    RETRIED = (429, 500, 503, 504)

    def __init__(self, server, ca, cert, key, user_agent, timeout=60):
        url = urllib.parse.urlsplit(server)
        self._host, self._port = url.hostname, url.port
        self._context = ssl.create_default_context(cafile=ca)
        self._context.load_cert_chain(cert, key)
        self._agent, self._timeout = user_agent, timeout
        self._local = threading.local()

    def _connection(self):
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = http.client.HTTPSConnection(self._host, self._port,
                                                     context=self._context,
                                                     timeout=self._timeout)
            self._local.connection = connection
        return connection

    def _drop_connection(self):
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
        self._local.connection = None

    def raw(self, method, path, body=None, content_type="application/json"):
        """(HTTP status, body text); reconnects once when the kept-alive connection was closed
        by the server meanwhile."""
        headers = {"Accept": "application/json", "User-Agent": self._agent}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        for attempt in range(2):
            try:
                connection = self._connection()
                connection.request(method, path, body=data, headers=headers)
                response = connection.getresponse()
                return response.status, response.read().decode()
            except (OSError, http.client.HTTPException):
                self._drop_connection()
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def stream(self, path, timeout=3600):
        """A GET whose answer is read as it comes (a watch), on a connection of its own; the
        caller closes the returned (connection, response)."""
        connection = http.client.HTTPSConnection(self._host, self._port, context=self._context,
                                                 timeout=timeout)
        connection.request("GET", path, headers={"Accept": "application/json",
                                                 "User-Agent": self._agent})
        response = connection.getresponse()
        if response.status != 200:
            body = response.read().decode()
            connection.close()
            raise ApiError("GET", path, response.status, body)
        return connection, response

    def call(self, method, path, body=None, content_type="application/json", ok=(200, 201),
             attempts=20):
        """The answer's JSON for a status in `ok`; retries the statuses in RETRIED with a short
        pause; raises ApiError otherwise."""
        for attempt in range(attempts):
            status, text = self.raw(method, path, body, content_type)
            if status in ok:
                return json.loads(text) if text else {}
            if status not in self.RETRIED or attempt == attempts - 1:
                raise ApiError(method, path, status, text)
            time.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")
