"""The watch streams being served: counted and described for /_fake/controllers, and ended
together by /_fake/close-watches.

A stream registers in the same store-lock section in which it reads its starting revision, so
that a test which sees its own stream listed knows that a close from then on reaches it. A close
marks exactly the streams registered at that moment and wakes those waiting for a store change,
so they end at once instead of at their next poll.
"""
import threading


class WatchStream(object):
    """One registered stream. `closed` is set by close_all; the stream ends when it sees it."""

    def __init__(self, description):
        self.description = description
        self.closed = False


class OpenWatches(object):
    def __init__(self, store):
        self._store = store
        self._lock = threading.Lock()
        self._streams = []

    def register(self, description):
        """REQUIRES: store.lock held, in the section that reads the stream's start revision."""
        stream = WatchStream(dict(description))
        with self._lock:
            self._streams.append(stream)
        return stream

    def unregister(self, stream):
        with self._lock:
            self._streams.remove(stream)

    def count(self):
        with self._lock:
            return len(self._streams)

    def describe(self):
        """What each stream watches (path, selectors, resourceVersion), oldest first."""
        with self._lock:
            return [dict(s.description) for s in self._streams]

    def close_all(self):
        """Ends every stream registered now; streams registered later are not affected."""
        with self._store.lock:
            with self._lock:
                closed = len(self._streams)
                for s in self._streams:
                    s.closed = True
            self._store.changed.notify_all()
        return closed
