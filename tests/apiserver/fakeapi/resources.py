"""The resource types this server serves, as discovery lists them.

Anything not listed here answers 404, so a client that depends on an unserved type fails loudly
instead of reading an empty list.
"""


class ResourceType(object):
    def __init__(self, group, version, plural, kind, namespaced, subresources=(), crd=False,
                 short=(), unconditional_update=True, create_on_update=False):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.subresources = tuple(subresources)
        # Custom resources (the snapshot CRDs) refuse strategic merge patch (415) and require
        # metadata.resourceVersion on update, as apiextensions-apiserver does.
        self.crd = crd
        self.short = tuple(short)
        # rest.RESTUpdateStrategy.AllowUnconditionalUpdate(): built-in types accept a PUT
        # without resourceVersion; custom resources do not.
        self.unconditional_update = unconditional_update and not crd
        self.create_on_update = create_on_update
        # genericregistry.Store.ReturnDeletedObject: a delete answers with the object instead of
        # a Status (pkg/registry/*/storage/storage.go of each type).
        self.returns_deleted_object = plural in _RETURNS_DELETED_OBJECT

    @property
    def group_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def key(self):
        return "%s/%s" % (self.group_version, self.plural)

    @property
    def singular(self):
        return self.kind.lower()

    @property
    def has_status(self):
        return "status" in self.subresources


_RETURNS_DELETED_OBJECT = {"pods", "persistentvolumes", "persistentvolumeclaims",
                           "serviceaccounts", "namespaces", "storageclasses", "csidrivers",
                           "csinodes", "volumeattachments"}


def _core(plural, kind, namespaced, sub=(), **kw):
    return ResourceType("", "v1", plural, kind, namespaced, sub, **kw)


BUILTIN = [
    _core("namespaces", "Namespace", False, ("status",), short=("ns",)),
    _core("nodes", "Node", False, ("status",), short=("no",)),
    _core("persistentvolumes", "PersistentVolume", False, ("status",), short=("pv",)),
    _core("persistentvolumeclaims", "PersistentVolumeClaim", True, ("status",), short=("pvc",)),
    _core("pods", "Pod", True, ("status",), short=("po",)),
    _core("events", "Event", True, short=("ev",), create_on_update=True),
    _core("secrets", "Secret", True),
    _core("configmaps", "ConfigMap", True, short=("cm",)),
    # No endpoints controller: only as client-go's EndpointsLock uses them (leader election).
    _core("endpoints", "Endpoints", True, short=("ep",)),
    _core("serviceaccounts", "ServiceAccount", True, short=("sa",)),
    ResourceType("apps", "v1", "deployments", "Deployment", True, ("status", "scale"),
                 short=("deploy",)),
    ResourceType("apps", "v1", "replicasets", "ReplicaSet", True, ("status", "scale"),
                 short=("rs",)),
    ResourceType("apps", "v1", "statefulsets", "StatefulSet", True, ("status", "scale"),
                 short=("sts",)),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, ("status",), short=("ds",)),
    ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short=("sc",)),
    # The types whose strategy says AllowUnconditionalUpdate() false: a PUT must carry
    # metadata.resourceVersion (pkg/registry/storage/*/strategy.go, coordination/lease).
    ResourceType("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False,
                 unconditional_update=False),
    ResourceType("storage.k8s.io", "v1", "csinodes", "CSINode", False,
                 unconditional_update=False),
    ResourceType("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False,
                 ("status",), unconditional_update=False),
    # Leases may be created by a PUT (AllowCreateOnUpdate), but never updated without a version.
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True,
                 unconditional_update=False, create_on_update=True),
]

SNAPSHOT_CRDS = [
    ResourceType("snapshot.storage.k8s.io", "v1", "volumesnapshots", "VolumeSnapshot", True,
                 ("status",), crd=True, short=("vs",)),
    ResourceType("snapshot.storage.k8s.io", "v1", "volumesnapshotcontents",
                 "VolumeSnapshotContent", False, ("status",), crd=True, short=("vsc",)),
    ResourceType("snapshot.storage.k8s.io", "v1", "volumesnapshotclasses", "VolumeSnapshotClass",
                 False, crd=True, short=("vsclass",)),
]


class Registry(object):
    """Lookup of served types by (group, version, plural) and by kind."""

    def __init__(self, snapshot_crds, leases=True, without=()):
        self.types = list(BUILTIN) + (list(SNAPSHOT_CRDS) if snapshot_crds else [])
        if not leases:
            # A pre-1.14 cluster: no coordination.k8s.io (leader election uses a ConfigMap).
            self.types = [t for t in self.types if t.group != "coordination.k8s.io"]
        # Resources an older cluster does not serve yet ("storage.k8s.io/v1/csinodes"): absent
        # from discovery and 404 like any unknown path.
        gone = set(without)
        unknown = gone - {self._path_of(t) for t in self.types}
        if unknown:
            raise ValueError("--without: not a served resource: %s" % ", ".join(sorted(unknown)))
        self.types = [t for t in self.types if self._path_of(t) not in gone]
        self._by_path = {(t.group, t.version, t.plural): t for t in self.types}
        self._by_kind = {(t.group, t.kind): t for t in self.types}

    @staticmethod
    def _path_of(t):
        return "%s/%s" % (t.group + "/" + t.version if t.group else t.version, t.plural)

    def lookup(self, group, version, plural):
        return self._by_path.get((group, version, plural))

    def by_kind(self, group, kind):
        return self._by_kind.get((group, kind))

    def core(self, plural):
        return self._by_path[("", "v1", plural)]

    def get(self, group_version, plural):
        if "/" in group_version:
            group, version = group_version.split("/", 1)
        else:
            group, version = "", group_version
        return self._by_path[(group, version, plural)]

    def groups(self):
        seen = []
        for t in self.types:
            if t.group and t.group not in [g for g, _ in seen]:
                seen.append((t.group, t.version))
        return seen

    def in_group_version(self, group, version):
        return [t for t in self.types if t.group == group and t.version == version]

    def discovery_list(self, group, version):
        """APIResourceList for /api/v1 or /apis/<group>/<version>."""
        resources = []
        for t in self.in_group_version(group, version):
            verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                     "watch"]
            entry = {"name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
                     "kind": t.kind, "verbs": verbs}
            if t.short:
                entry["shortNames"] = list(t.short)
            resources.append(entry)
            for sub in t.subresources:
                if sub == "scale":
                    resources.append({"name": t.plural + "/scale", "singularName": "",
                                      "namespaced": t.namespaced, "group": "autoscaling",
                                      "version": "v1", "kind": "Scale",
                                      "verbs": ["get", "patch", "update"]})
                else:
                    resources.append({"name": t.plural + "/" + sub, "singularName": "",
                                      "namespaced": t.namespaced, "kind": t.kind,
                                      "verbs": ["get", "patch", "update"]})
        gv = "%s/%s" % (group, version) if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": resources}
