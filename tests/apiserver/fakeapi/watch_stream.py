"""WATCH: a chunked stream of JSON lines {"type", "object"} read from the store's history.

From no resourceVersion (or "0"): synthetic ADDED events for the current objects first. From a
kept one: every later event in order; objects entering or leaving a selection arrive as ADDED or
DELETED. From a compacted one: a single ERROR event with a 410 Expired Status. BOOKMARKs after a
second of silence and just before the timeout when asked for. The stream ends at
timeoutSeconds, when the server stops, or on /_fake/close-watches.
"""
import json
import time

from . import errors, selection


def _write_chunk(handler, data):
    handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    handler.wfile.flush()


def _event(handler, etype, obj):
    _write_chunk(handler, json.dumps({"type": etype, "object": obj}).encode() + b"\n")


def serve_watch(handler, fake, r, params):
    """Serves one watch request to its end (timeout, client gone, server stopping)."""
    store = fake.store
    rtype = r.rtype
    labels = selection.parse_label_selector(params.get("labelSelector", ""))
    fields = selection.parse_field_selector(params.get("fieldSelector", ""), rtype)
    try:
        timeout = int(params.get("timeoutSeconds") or 1800)
    except ValueError:
        raise errors.bad_request("invalid timeoutSeconds")
    bookmarks = params.get("allowWatchBookmarks") in ("1", "true", "True")
    rv_param = params.get("resourceVersion") or ""
    if rv_param not in ("", "0"):
        try:
            start_rv = int(rv_param)
        except ValueError:
            raise errors.bad_request('invalid resource version: "%s"' % rv_param)

    def matches(obj):
        if obj is None:
            return False
        if rtype.namespaced and r.namespace and obj["metadata"].get("namespace") != r.namespace:
            return False
        return selection.labels_match(labels, obj) and selection.fields_match(fields, obj)

    with store.lock:
        initial = []
        if rv_param in ("", "0"):
            initial = [o for o in store.items(rtype.key) if matches(o)]
            cursor = store.resource_version
        else:
            cursor = start_rv
        too_old = rv_param not in ("", "0") and cursor < store.compacted_rv
        compacted = store.compacted_rv
        stream = fake.open_watches.register(
            {"path": handler.path.split("?", 1)[0], "resourceVersion": rv_param,
             "labelSelector": params.get("labelSelector", ""),
             "fieldSelector": params.get("fieldSelector", "")})
    try:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        if too_old:
            _event(handler, "ERROR", errors.expired("too old resource version: %d (%d)"
                                                % (cursor, compacted)).status())
            return _end_stream(handler)
        for obj in initial:
            _event(handler, "ADDED", obj)
        deadline = time.time() + timeout
        last_sent = time.time()
        final_bookmark = False
        while True:
            now = time.time()
            if now >= deadline or fake.stopping or stream.closed:
                break
            with store.lock:
                events = store.events_after(cursor, rtype.key)
                if not events and not stream.closed:
                    store.changed.wait(min(0.5, max(deadline - now, 0.01)))
                    events = store.events_after(cursor, rtype.key)
                if cursor < store.compacted_rv and not events:
                    expired = True
                else:
                    expired = False
                head = store.resource_version
            if expired:
                _event(handler, "ERROR", errors.expired("too old resource version: %d (%d)"
                                                    % (cursor, store.compacted_rv)).status())
                break
            for rv, etype, obj, prev in events:
                cursor = rv
                now_match, was_match = matches(obj), matches(prev)
                if etype == "MODIFIED":
                    if now_match and not was_match:
                        etype = "ADDED"
                    elif was_match and not now_match:
                        etype = "DELETED"
                    elif not now_match:
                        continue
                elif not now_match and not (etype == "DELETED" and was_match):
                    continue
                _event(handler, etype, obj)
                last_sent = time.time()
            if not events:
                cursor = max(cursor, head)
                # A bookmark after a second of silence, and one just before the timeout
                # (as the watch cache does), so a client resumes from a recent version.
                closing = deadline - time.time() < 0.6 and not final_bookmark
                if bookmarks and (time.time() - last_sent >= 1.0 or closing):
                    final_bookmark = final_bookmark or closing
                    _event(handler, "BOOKMARK", {"kind": rtype.kind,
                                             "apiVersion": rtype.group_version,
                                             "metadata": {"resourceVersion": str(cursor)}})
                    last_sent = time.time()
        _end_stream(handler)
    except (BrokenPipeError, ConnectionResetError, OSError):
        handler.close_connection = True
    finally:
        fake.open_watches.unregister(stream)


def _end_stream(handler):
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()
