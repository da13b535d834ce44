"""LIST (pagination, label and field selectors, list resourceVersion) and WATCH (ordered events
from a resourceVersion, 410 Gone after compaction, selector transitions, bookmarks, timeout)."""
import threading
import unittest

from testlib import PV, ServerTestCase, flex_pv, ns_path, pod

PODS = ns_path("default", "pods")


class ListTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for i in range(7):
            body = flex_pv("list-%d" % i)
            body["metadata"]["labels"] = {"tier": "gold" if i % 2 else "silver", "n": str(i)}
            if i == 0:
                del body["metadata"]["labels"]["tier"]
            cls.api.create(PV, body)

    def names(self, **params):
        return [i["metadata"]["name"] for i in self.api.get(PV, **params)["items"]
                if i["metadata"]["name"].startswith("list-")]

    def test_limit_and_continue_walk_every_item_once(self):
        seen, token = [], None
        first_rv = None
        while True:
            params = {"limit": "3", "labelSelector": "n"}
            if token:
                params["continue"] = token
            page = self.api.get(PV, **params)
            first_rv = first_rv or page["metadata"]["resourceVersion"]
            seen += [i["metadata"]["name"] for i in page["items"]]
            token = page["metadata"].get("continue")
            if not token:
                break
            # Filtered lists carry no remainingItemCount.
            self.assertNotIn("remainingItemCount", page["metadata"])
        self.assertEqual(seen, ["list-%d" % i for i in range(7)])
        self.assertEqual(page["kind"], "PersistentVolumeList")
        first = self.api.get(PV, limit="2")
        total = len(self.api.get(PV)["items"])
        self.assertEqual(first["metadata"]["remainingItemCount"], total - 2)

    def test_label_selector_operators(self):
        self.assertEqual(self.names(labelSelector="tier=gold"), ["list-1", "list-3", "list-5"])
        self.assertEqual(self.names(labelSelector="tier!=gold,n"),
                         ["list-0", "list-2", "list-4", "list-6"])
        self.assertEqual(self.names(labelSelector="n in (1,2)"), ["list-1", "list-2"])
        self.assertEqual(self.names(labelSelector="n notin (1,2),tier"),
                         ["list-3", "list-4", "list-5", "list-6"])
        self.assertEqual(self.names(labelSelector="!tier,n"), ["list-0"])
        self.assertApiError(400, self.api.get, PV, labelSelector="tier in gold")

    def test_field_selectors(self):
        self.assertEqual(self.names(fieldSelector="metadata.name=list-4"), ["list-4"])
        self.assertEqual(len(self.names(fieldSelector="metadata.name!=list-4")), 6)
        self.api.create(PODS, pod("fs-a", node="n1"))
        self.api.create(PODS, pod("fs-b", node="n2"))
        got = self.api.get(PODS, fieldSelector="spec.nodeName=n2,status.phase=Pending")
        self.assertEqual([p["metadata"]["name"] for p in got["items"]], ["fs-b"])
        e = self.assertApiError(400, self.api.get, PV, fieldSelector="spec.capacity=1Gi")
        self.assertIn("field label not supported", e["message"])

    def test_list_across_namespaces(self):
        self.api.create(ns_path("kube-system", "pods"), pod("xns"))
        names = [p["metadata"]["name"] for p in self.api.get("/api/v1/pods")["items"]]
        self.assertIn("xns", names)


class WatchTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False, "history_limit": 3}

    def test_watch_from_list_version_streams_changes_in_order(self):
        rv = self.api.get(PV)["metadata"]["resourceVersion"]
        a = self.api.create(PV, flex_pv("w-a"))
        self.api.patch(PV + "/w-a", {"metadata": {"labels": {"x": "1"}}})
        self.api.delete(PV + "/w-a")  # pv-protection keeps it: MODIFIED with deletionTimestamp
        self.api.patch(PV + "/w-a", {"metadata": {"finalizers": None}})
        events = self.api.watch(PV, max_events=4, resourceVersion=rv)
        self.assertEqual([e["type"] for e in events], ["ADDED", "MODIFIED", "MODIFIED", "DELETED"])
        self.assertEqual(events[0]["object"]["metadata"]["uid"], a["metadata"]["uid"])
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        self.assertEqual(rvs, sorted(rvs))
        self.assertIn("deletionTimestamp", events[2]["object"]["metadata"])

    def test_watch_without_version_starts_with_synthetic_added_events(self):
        self.api.create(PV, flex_pv("w-initial"))
        events = self.api.watch(PV, max_events=1, fieldSelector="metadata.name=w-initial")
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in events],
                         [("ADDED", "w-initial")])

    def test_watch_on_a_named_path_follows_that_object_only(self):
        rv = self.api.get(PV)["metadata"]["resourceVersion"]
        self.api.create(PV, flex_pv("w-other"))
        self.api.create(PV, flex_pv("w-named"))
        events = self.api.watch(PV + "/w-named", max_events=1, resourceVersion=rv)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in events],
                         [("ADDED", "w-named")])

    def test_compacted_version_gets_410_error_event(self):
        rv = self.api.get(PV)["metadata"]["resourceVersion"]
        self.api.create(PV, flex_pv("w-compact"))
        self.api.request("POST", "/_fake/compact")
        events = self.api.watch(PV, resourceVersion=rv)
        self.assertEqual(len(events), 1)
        self.assertEqual(events[0]["type"], "ERROR")
        self.assertEqual(events[0]["object"]["code"], 410)
        self.assertEqual(events[0]["object"]["reason"], "Expired")

    def test_history_window_expires_old_versions(self):
        rv = self.api.get(PV)["metadata"]["resourceVersion"]
        for i in range(8):
            self.api.patch("/api/v1/namespaces/default", {"metadata": {"labels": {"i": str(i)}}})
        events = self.api.watch(PV, resourceVersion=rv)
        self.assertEqual(events[0]["object"]["code"], 410)

    def test_selector_transitions_become_added_and_deleted(self):
        self.api.create(PV, flex_pv("w-sel"))
        rv = self.api.get(PV)["metadata"]["resourceVersion"]
        self.api.patch(PV + "/w-sel", {"metadata": {"labels": {"watch": "me"}}})
        self.api.patch(PV + "/w-sel", {"metadata": {"labels": {"watch": "other"}}})
        events = self.api.watch(PV, max_events=2, resourceVersion=rv, labelSelector="watch=me")
        self.assertEqual([e["type"] for e in events], ["ADDED", "DELETED"])

    def test_bookmarks_and_timeout_end_an_idle_watch(self):
        rv = self.api.get(PV)["metadata"]["resourceVersion"]
        # 3 s: a bookmark after each second of silence and one before the end, so a stream
        # thread that a busy machine wakes late still sends some.
        events = self.api.watch(PV, timeout=3, resourceVersion=rv, allowWatchBookmarks="true",
                                labelSelector="nothing=here")
        self.assertTrue(events)
        self.assertTrue(all(e["type"] == "BOOKMARK" for e in events))
        self.assertGreaterEqual(int(events[-1]["object"]["metadata"]["resourceVersion"]), int(rv))

    def test_live_watch_sees_a_write_made_while_it_waits(self):
        rv = self.api.get(PV)["metadata"]["resourceVersion"]
        result = []
        t = threading.Thread(target=lambda: result.extend(
            self.api.watch(PV, max_events=1, timeout=60, resourceVersion=rv,
                           fieldSelector="metadata.name=w-live")))
        t.start()
        self.api.create(PV, flex_pv("w-live"))
        t.join(60)
        self.assertEqual([e["type"] for e in result], ["ADDED"])

    def start_watch(self, label_selector, timeout=300):
        """Starts a long watch in a thread and waits until the server lists this very stream
        (its unique selector), so a close from then on reaches it. Another test's stream that
        is still being served (a client that stopped reading after max_events) is not enough."""
        rv = self.api.get(PV)["metadata"]["resourceVersion"]
        result = []
        t = threading.Thread(target=lambda: result.append(
            self.api.watch(PV, timeout=timeout, resourceVersion=rv,
                           labelSelector=label_selector)))
        t.start()
        self.wait_for(lambda: any(w["labelSelector"] == label_selector for w in
                                  self.api.get("/_fake/controllers")["watches"]),
                      what="the watch on %s to be open" % label_selector)
        return t, result

    def test_close_watches_ends_open_streams(self):
        t, result = self.start_watch("never=close-1")
        self.api.request("POST", "/_fake/close-watches")
        t.join(60)  # the watch itself would run for 300 s: only the close ends it this soon
        self.assertFalse(t.is_alive())
        self.assertEqual(result, [[]])

    def test_close_watches_reaches_a_stream_opened_beside_a_lingering_one(self):
        # A client that stops reading after one event leaves its stream served until its
        # timeout: the count of open streams is above zero before the next watch opens.
        self.api.create(PV, flex_pv("w-linger"))
        self.api.watch(PV, max_events=1, timeout=300, fieldSelector="metadata.name=w-linger")
        self.assertGreater(self.api.get("/_fake/controllers")["openWatches"], 0)
        t, result = self.start_watch("never=close-2")
        self.api.request("POST", "/_fake/close-watches")
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertEqual(result, [[]])
        self.wait_for(lambda: not self.api.get("/_fake/controllers")["watches"],
                      what="both streams to end")

if __name__ == "__main__":
    unittest.main()
