"""The verbs of the API (get, list, create, update, patch, delete) with the generic registry's
rules (k8s.io/apiserver/pkg/registry/generic/registry/store.go and rest/create.go, update.go,
delete.go): server-set metadata, resourceVersion preconditions, no-op updates that store
nothing, dryRun, finalizers and deletionTimestamp, graceful pod deletion.

Both the HTTP handler and the fake controllers go through this class, so controller writes are
validated, versioned, watched and audited exactly like client writes.
"""
import base64
import contextlib
import copy
import datetime
import json
import random
import threading
import uuid

from . import errors, patches, pruning, selection, strategies, validation
from .admission import Admission

_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apiserver/pkg/storage/names


# Per request thread: how unknown fields are treated ("Strict", "Warn", "Ignore") and the
# warnings to send back as `Warning` headers.
request_context = threading.local()


def begin_request(field_validation):
    request_context.field_validation = field_validation or "Warn"
    request_context.warnings = []


def request_warnings():
    return list(getattr(request_context, "warnings", []))


def _prune_unknown_fields(rtype, obj):
    dropped = pruning.prune(rtype, obj)
    if not dropped:
        return
    mode = getattr(request_context, "field_validation", "Ignore")
    if mode == "Strict":
        raise errors.bad_request("%s in version \"%s\" cannot be handled as a %s: strict "
                                 "decoding error: %s" % (rtype.kind, rtype.version, rtype.kind,
                                                         ", ".join('unknown field "%s"' % d
                                                                   for d in dropped)))
    if mode == "Warn":
        request_context.warnings.extend('unknown field "%s"' % d for d in dropped)


def now_rfc3339(offset_seconds=0):
    when = datetime.datetime.utcnow() + datetime.timedelta(seconds=offset_seconds)
    return when.replace(microsecond=0).isoformat() + "Z"


def generate_suffix(n=5):
    return "".join(random.choice(_GENERATE_CHARS) for _ in range(n))


def _label_selector_string(selector):
    parts = ["%s=%s" % (k, v) for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        op = e.get("operator")
        if op == "In":
            parts.append("%s in (%s)" % (e["key"], ",".join(e.get("values") or [])))
        elif op == "NotIn":
            parts.append("%s notin (%s)" % (e["key"], ",".join(e.get("values") or [])))
        elif op == "Exists":
            parts.append(e["key"])
        elif op == "DoesNotExist":
            parts.append("!" + e["key"])
    return ",".join(parts)


class Api(object):
    def __init__(self, registry, store, audit):
        self.registry = registry
        self.store = store
        self.audit = audit
        self.admission = Admission(registry, store)

    # ---- reads ------------------------------------------------------------------------------

    def get(self, rtype, namespace, name, subresource=None):
        with self.store.lock:
            obj = self.store.get(rtype.key, namespace, name)
            if obj is None:
                raise errors.not_found(rtype, name)
            if subresource == "scale":
                return self._scale_of(rtype, obj)
            return copy.deepcopy(obj)

    def list(self, rtype, namespace, label_selector="", field_selector="", limit=0,
             continue_token=None):
        """Returns the List object (its items are shared with the store: read-only). Pages are
        cut from the live state after the continue token's key (the real server serves them from
        a snapshot at the first page's revision)."""
        labels = selection.parse_label_selector(label_selector)
        fields = selection.parse_field_selector(field_selector, rtype)
        with self.store.lock:
            list_rv = self.store.resource_version
            after = None
            if continue_token:
                try:
                    token = json.loads(base64.b64decode(continue_token).decode())
                    list_rv, after = token["rv"], tuple(token["start"])
                except (ValueError, KeyError, TypeError):
                    raise errors.bad_request("invalid continue token")
                if list_rv < self.store.compacted_rv:
                    raise errors.expired("The provided continue parameter is too old to display "
                                         "a consistent list result. You can start a new list "
                                         "without the continue parameter.")
            items = []
            for obj in self.store.items(rtype.key, namespace if rtype.namespaced and namespace
                                        else None):
                key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
                if after is not None and key <= after:
                    continue
                if selection.labels_match(labels, obj) and selection.fields_match(fields, obj):
                    items.append(obj)
            meta = {"resourceVersion": str(list_rv)}
            if limit and len(items) > limit:
                last = items[limit - 1]["metadata"]
                token = {"rv": list_rv, "start": [last.get("namespace", ""), last["name"]]}
                meta["continue"] = base64.b64encode(json.dumps(token).encode()).decode()
                if not labels and not fields:
                    # Only an unfiltered list can know how many items remain.
                    meta["remainingItemCount"] = len(items) - limit
                items = items[:limit]
            # Stored objects are never modified in place, so the reply may share them.
            return {"kind": rtype.kind + "List", "apiVersion": rtype.group_version,
                    "metadata": meta, "items": list(items)}

    # ---- create -----------------------------------------------------------------------------

    def _check_body(self, rtype, body, expect_kind=None, expect_version=None):
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        kind = expect_kind or rtype.kind
        version = expect_version or rtype.group_version
        if body.get("apiVersion") not in (None, "", version):
            raise errors.bad_request("the API version in the data (%s) does not match the "
                                     "expected API version (%s)" % (body.get("apiVersion"),
                                                                     version))
        if body.get("kind") not in (None, "", kind):
            raise errors.bad_request("%s in version \"%s\" cannot be handled as a %s: the kind "
                                     "in the data does not match" % (body.get("kind"),
                                                                      rtype.version, kind))
        meta = body.get("metadata")
        if meta is None:
            return
        problem = None
        if not isinstance(meta, dict):
            problem = "metadata must be an object"
        else:
            for field in ("name", "generateName", "namespace", "uid", "resourceVersion"):
                if meta.get(field) is not None and not isinstance(meta[field], str):
                    problem = "metadata.%s must be a string" % field
            for field in ("labels", "annotations"):
                value = meta.get(field)
                if value is not None and not (isinstance(value, dict) and all(
                        isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
                    problem = "metadata.%s must map strings to strings" % field
            for field in ("finalizers", "ownerReferences"):
                value = meta.get(field)
                if value is not None and not isinstance(value, list):
                    problem = "metadata.%s must be a list" % field
        if problem:
            # What the real decoder says for a body that does not fit the Go type.
            raise errors.bad_request("%s in version \"%s\" cannot be handled as a %s: %s"
                                     % (kind, rtype.version, kind, problem))

    def create(self, rtype, namespace, body, dry_run=False, user="", subresource=None):
        if subresource:
            raise errors.method_not_allowed()
        self._check_body(rtype, body)
        obj = _with_type(rtype.group_version, rtype.kind, body)
        meta = obj.setdefault("metadata", {})
        with self.store.lock:
            try:
                result = self._create_locked(rtype, namespace, obj, meta, dry_run, user)
            except errors.ApiError as e:
                self.audit.record("create", rtype, namespace, meta.get("name"), dry_run=dry_run,
                                  user=user, code=e.code, reason=e.reason)
                raise
            self.audit.record("create", rtype, namespace, result["metadata"]["name"],
                              dry_run=dry_run, user=user, code=201, obj=result)
            return result

    def _create_locked(self, rtype, namespace, obj, meta, dry_run, user):
        if rtype.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request("the namespace of the provided object does not match "
                                         "the namespace sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            # etcd3 store.Create returns a plain error, which the handler serves as a 500.
            raise errors.ApiError(500, "", "resourceVersion should not be set on objects to be "
                                  "created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + generate_suffix()
        self.admission.check_namespace_for_create(rtype, namespace, meta.get("name") or "")
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
        meta.pop("managedFields", None)
        meta.pop("selfLink", None)
        with _shape_errors_are_bad_requests(rtype):
            _prune_unknown_fields(rtype, obj)
            strategies.prepare_for_create(rtype, obj)
            self.admission.mutate_create(rtype, obj)
            causes = validation.validate_create(rtype, obj)
        if causes:
            raise errors.invalid(rtype, meta.get("name") or "", causes)
        existing = self.store.get(rtype.key, namespace if rtype.namespaced else "", meta["name"])
        if existing is not None:
            err = errors.already_exists(rtype, meta["name"])
            if existing["metadata"].get("deletionTimestamp"):
                err.message = "object is being deleted: " + err.message
            raise err
        if dry_run:
            return obj
        self.store.put(rtype.key, obj, "ADDED")
        return copy.deepcopy(obj)

    # ---- update / patch ----------------------------------------------------------------------

    def update(self, rtype, namespace, name, body, dry_run=False, user="", subresource=None,
               verb="update", patch=None):
        with self.store.lock:
            try:
                result = self._update_locked(rtype, namespace, name, body, dry_run, subresource)
            except errors.ApiError as e:
                self.audit.record(verb, rtype, namespace, name, subresource, dry_run, user,
                                  e.code, e.reason, patch=patch)
                raise
            self.audit.record(verb, rtype, namespace, name, subresource, dry_run, user, 200,
                              obj=result, patch=patch)
            return result

    def patch(self, rtype, namespace, name, patch_type, patch_body, dry_run=False, user="",
              subresource=None):
        if patch_type == "strategic" and rtype.crd:
            raise errors.ApiError(415, "UnsupportedMediaType",
                                  "the body of the request was in an unknown format - accepted "
                                  "media types include: application/json-patch+json, "
                                  "application/merge-patch+json, application/apply-patch+yaml")
        with self.store.lock:
            try:
                current = self.get(rtype, namespace, name, subresource)
                if patch_type == "merge":
                    if not isinstance(patch_body, dict):
                        raise errors.bad_request("merge patch must be a JSON object")
                    patched = patches.merge_patch(current, patch_body)
                elif patch_type == "strategic":
                    patched = patches.strategic_merge_patch(current, patch_body)
                elif patch_type == "json":
                    patched = patches.json_patch(current, patch_body)
                else:
                    raise AssertionError(patch_type)
                if not isinstance(patched, dict):
                    raise errors.bad_request("the patch did not produce an object")
                # A patch applies to the current version unless it sets resourceVersion itself.
                patched.setdefault("metadata", {})
                if not patched["metadata"].get("resourceVersion"):
                    patched["metadata"]["resourceVersion"] = current["metadata"].get(
                        "resourceVersion")
            except (TypeError, ValueError, AttributeError, KeyError) as e:
                err = errors.ApiError(422, "Invalid", "the patch could not be applied: %s: %s"
                                      % (type(e).__name__, e))
                self.audit.record("patch", rtype, namespace, name, subresource, dry_run, user,
                                  err.code, err.reason, patch=patch_body)
                raise err
            except errors.ApiError as e:
                self.audit.record("patch", rtype, namespace, name, subresource, dry_run, user,
                                  e.code, e.reason, patch=patch_body)
                raise
            return self.update(rtype, namespace, name, patched, dry_run, user, subresource,
                               verb="patch", patch=patch_body)

    def _update_locked(self, rtype, namespace, name, body, dry_run, subresource):
        if subresource not in (None, "", "status", "scale") or \
                (subresource and subresource not in rtype.subresources):
            raise errors.resource_not_found()
        if subresource == "scale":
            return self._update_scale(rtype, namespace, name, body, dry_run)
        self._check_body(rtype, body)
        new = _with_type(rtype.group_version, rtype.kind, body)
        meta = new.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request("the name of the object (%s) does not match the name on "
                                     "the URL (%s)" % (meta["name"], name))
        meta["name"] = name
        if rtype.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request("the namespace of the provided object does not match "
                                         "the namespace sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        old = self.store.get(rtype.key, namespace if rtype.namespaced else "", name)
        if old is None:
            if rtype.create_on_update and not subresource:
                # AllowCreateOnUpdate (leases, events): a PUT of a missing object creates it.
                meta.pop("resourceVersion", None)
                return self._create_locked(rtype, namespace, new, meta, dry_run, "")
            raise errors.not_found(rtype, name)
        # The body's uid is a precondition (rest.defaultUpdatedObjectInfo.Preconditions), checked
        # by storage before anything else: an old copy never overwrites a recreated namesake.
        if meta.get("uid") and meta["uid"] != old["metadata"]["uid"]:
            raise errors.conflict(rtype, name, "Precondition failed: UID in precondition: %s, "
                                  "UID in object meta: %s" % (meta["uid"], old["metadata"]["uid"]))
        rv = meta.get("resourceVersion") or ""
        if not rv and not rtype.unconditional_update:
            raise errors.invalid(rtype, name, [("metadata.resourceVersion", "Invalid value",
                                                "0: must be specified for an update")])
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rtype, name, errors.STALE_OBJECT)
        om = old["metadata"]
        if not meta.get("uid"):
            meta["uid"] = om["uid"]
        meta["creationTimestamp"] = om["creationTimestamp"]
        if om.get("deletionTimestamp"):
            meta["deletionTimestamp"] = om["deletionTimestamp"]
            meta["deletionGracePeriodSeconds"] = om.get("deletionGracePeriodSeconds", 0)
        elif "deletionGracePeriodSeconds" in meta and meta.get("deletionTimestamp") is None:
            meta.pop("deletionGracePeriodSeconds")
        meta.pop("managedFields", None)
        meta.pop("selfLink", None)
        if "generation" in om:
            meta["generation"] = om["generation"]
        with _shape_errors_are_bad_requests(rtype):
            _prune_unknown_fields(rtype, new)
            new = strategies.prepare_for_update(rtype, new, old, subresource)
            causes = validation.validate_update(rtype, new, old, subresource)
        if causes:
            raise errors.invalid(rtype, name, causes)
        self.admission.validate_update(rtype, new, old, subresource)
        return self._store_update(rtype, new, old, dry_run)

    def _store_update(self, rtype, new, old, dry_run):
        """REQUIRES: lock held; new validated. Applies the finalizer rule and skips no-ops."""
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and \
                not self._pod_waits_for_kubelet(rtype, new) and \
                not (rtype.kind == "Namespace" and (new.get("spec") or {}).get("finalizers")):
            # The last finalizer is gone from an object being deleted: it disappears.
            if dry_run:
                return new
            self.store.remove(rtype.key, old)
            return new
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        if _canonical(new) == _canonical(old):
            return copy.deepcopy(old)  # a no-op write stores nothing: no new revision, no event
        if dry_run:
            return new
        self.store.put(rtype.key, new, "MODIFIED")
        return copy.deepcopy(new)

    def _pod_waits_for_kubelet(self, rtype, obj):
        # A gracefully deleted pod stays until its kubelet confirms with a zero grace period.
        return rtype.kind == "Pod" and obj["metadata"].get("deletionGracePeriodSeconds", 0) > 0

    def finalize_namespace(self, namespace_obj, user):
        """The namespaces/finalize subresource, for the namespace controller only: stores
        spec.finalizers; an emptied, terminating namespace disappears."""
        rtype = self.registry.core("namespaces")
        name = namespace_obj["metadata"]["name"]
        with self.store.lock:
            old = self.store.get(rtype.key, "", name)
            if old is None:
                return None
            new = copy.deepcopy(old)
            new["spec"] = copy.deepcopy(namespace_obj.get("spec") or {})
            result = self._store_update(rtype, new, old, False)
            self.audit.record("update", rtype, "", name, "finalize", False, user, 200, obj=result)
            return result

    # ---- scale subresource ---------------------------------------------------------------------

    def _scale_of(self, rtype, obj):
        meta = obj["metadata"]
        selector = (obj.get("spec") or {}).get("selector") or {}
        return {
            "kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace", ""),
                         "uid": meta["uid"], "resourceVersion": meta["resourceVersion"],
                         "creationTimestamp": meta["creationTimestamp"]},
            "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                       "selector": _label_selector_string(selector)},
        }

    def _update_scale(self, rtype, namespace, name, body, dry_run):
        self._check_body(rtype, body, "Scale", "autoscaling/v1")
        old = self.store.get(rtype.key, namespace, name)
        if old is None:
            raise errors.not_found(rtype, name)
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request("the name of the object (%s) does not match the name on "
                                     "the URL (%s)" % (meta["name"], name))
        if meta.get("uid") and meta["uid"] != old["metadata"]["uid"]:
            raise errors.conflict(rtype, name, "Precondition failed: UID in precondition: %s, "
                                  "UID in object meta: %s" % (meta["uid"], old["metadata"]["uid"]))
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rtype, name, errors.STALE_OBJECT)
        replicas = (body.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.ApiError(422, "Invalid", 'Scale.autoscaling "%s" is invalid: '
                                  'spec.replicas: Invalid value: %s: must be greater than or '
                                  'equal to 0' % (name, json.dumps(replicas)),
                                  {"name": name, "group": "autoscaling", "kind": "Scale",
                                   "causes": [{"reason": "FieldValueInvalid",
                                               "field": "spec.replicas",
                                               "message": "Invalid value"}]})
        new = copy.deepcopy(old)
        new["spec"]["replicas"] = replicas
        if new.get("spec") != old.get("spec"):
            new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        stored = self._store_update(rtype, new, old, dry_run)
        return self._scale_of(rtype, stored)

    # ---- delete ---------------------------------------------------------------------------------

    def delete(self, rtype, namespace, name, options=None, dry_run=False, user=""):
        """Returns (http code, body): 200 with a Status (or the pod) when gone; 200 with the
        object when finalizers or a grace period keep it (202 only when the request set
        orphanDependents: false, as endpoints/handlers/delete.go does)."""
        options = options or {}
        with self.store.lock:
            before = self.store.get(rtype.key, namespace if rtype.namespaced else "", name)
            try:
                code, body = self._delete_locked(rtype, namespace, name, options, dry_run)
            except errors.ApiError as e:
                self.audit.record("delete", rtype, namespace, name, None, dry_run, user, e.code,
                                  e.reason, obj=before, extra={"options": options})
                raise
            self.audit.record("delete", rtype, namespace, name, None, dry_run, user, code,
                              obj=before, extra={"options": options})
            return code, body

    def _delete_locked(self, rtype, namespace, name, options, dry_run):
        if not isinstance(options, dict):
            raise errors.bad_request("DeleteOptions must be an object")
        old = self.store.get(rtype.key, namespace if rtype.namespaced else "", name)
        if old is None:
            raise errors.not_found(rtype, name)
        pre = options.get("preconditions") or {}
        om = old["metadata"]
        if pre.get("uid") and pre["uid"] != om["uid"]:
            raise errors.conflict(rtype, name, "Precondition failed: UID in precondition: %s, "
                                  "UID in object meta: %s" % (pre["uid"], om["uid"]))
        if pre.get("resourceVersion") and pre["resourceVersion"] != om["resourceVersion"]:
            raise errors.conflict(rtype, name, "Precondition failed: ResourceVersion in "
                                  "precondition: %s, ResourceVersion in object meta: %s"
                                  % (pre["resourceVersion"], om["resourceVersion"]))
        policy = options.get("propagationPolicy")
        if policy not in (None, "", "Orphan", "Background", "Foreground"):
            raise errors.ApiError(422, "Invalid", 'DeleteOptions.meta.k8s.io "" is invalid: '
                                  'propagationPolicy: Unsupported value: "%s": supported '
                                  'values: "Foreground", "Background", "Orphan", "nil"' % policy)
        self.admission.validate_delete(rtype, name)
        kept = 202 if options.get("orphanDependents") is False else 200
        new = copy.deepcopy(old)
        meta = new["metadata"]
        fins = list(meta.get("finalizers") or [])
        if policy == "Orphan" or options.get("orphanDependents") is True:
            if "orphan" not in fins:
                fins.append("orphan")
        elif policy == "Foreground" and "foregroundDeletion" not in fins:
            fins.append("foregroundDeletion")
        grace = self._grace_period(rtype, old, options)
        if rtype.kind == "Namespace" and not meta.get("deletionTimestamp"):
            # The namespace controller empties it, then removes the "kubernetes" finalizer.
            meta["deletionTimestamp"] = now_rfc3339()
            meta["deletionGracePeriodSeconds"] = 0
            new["status"] = {"phase": "Terminating"}
            return self._pending_delete(rtype, new, dry_run, kept)
        if rtype.kind == "Namespace":
            return kept, copy.deepcopy(old)
        if fins or grace > 0:
            if om.get("deletionTimestamp"):
                if grace == 0 and rtype.kind == "Pod" and not fins:
                    pass  # the kubelet's final delete: falls through to removal
                else:
                    # Already being deleted: nothing changes.
                    return kept, copy.deepcopy(old)
            else:
                # A graceful deletion's timestamp is when the grace period ends
                # (BeforeDelete: now + gracePeriodSeconds).
                meta["deletionTimestamp"] = now_rfc3339(grace)
                meta["deletionGracePeriodSeconds"] = grace
                meta["finalizers"] = fins
                return self._pending_delete(rtype, new, dry_run, kept)
        if not dry_run:
            gone = self.store.remove(rtype.key, old)
        else:
            gone = copy.deepcopy(old)
        if rtype.returns_deleted_object:
            return 200, gone
        details = {"name": name, "kind": rtype.plural, "uid": om["uid"]}
        if rtype.group:
            details["group"] = rtype.group
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                     "details": details}

    def _pending_delete(self, rtype, new, dry_run, code):
        if dry_run:
            return code, new
        self.store.put(rtype.key, new, "MODIFIED")
        return code, copy.deepcopy(new)

    def _grace_period(self, rtype, obj, options):
        """Pods bound to a node are deleted gracefully (pkg/registry/core/pod/strategy.go
        CheckGracefulDelete); unscheduled or terminated pods go at once."""
        if rtype.kind != "Pod":
            return 0
        if not (obj.get("spec") or {}).get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        return max(int(grace), 0)

    def delete_collection(self, rtype, namespace, label_selector, field_selector, options,
                          dry_run=False, user=""):
        listed = self.list(rtype, namespace if rtype.namespaced else None, label_selector,
                           field_selector)
        for item in listed["items"]:
            try:
                self.delete(rtype, item["metadata"].get("namespace", ""),
                            item["metadata"]["name"], options, dry_run, user)
            except errors.ApiError as e:
                if e.code != 404:
                    raise
        listed["items"] = []
        return listed


@contextlib.contextmanager
def _shape_errors_are_bad_requests(rtype):
    """A field of the wrong JSON type (a list where an object belongs...) trips the Python
    rules; the real server rejects such a body while decoding it: 400, never a 500."""
    try:
        yield
    except (TypeError, AttributeError, KeyError, ValueError) as e:
        raise errors.bad_request("%s in version \"%s\" cannot be handled as a %s: %s: %s"
                                 % (rtype.kind, rtype.version, rtype.kind, type(e).__name__, e))


def _with_type(api_version, kind, body):
    """A private copy of body with apiVersion and kind first, as the real server writes them."""
    out = {"apiVersion": api_version, "kind": kind}
    for k, v in body.items():
        if k not in out:
            out[k] = copy.deepcopy(v)
    return out


def _canonical(obj):
    o = copy.deepcopy(obj)
    o["metadata"].pop("resourceVersion", None)
    return json.dumps(o, sort_keys=True)
