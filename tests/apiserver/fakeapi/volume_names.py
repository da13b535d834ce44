"""Facts about PV sources that several controllers share: the unique volume names kubelet and
the attach/detach controller report in node status, which sources are attachable, and which
in-tree plugins can delete their storage from the controller-manager."""

# Unique volume name prefix of attachable in-tree plugins (pkg/volume/<plugin>/*.go GetVolumeName
# joined by util.GetUniqueVolumeName: "<plugin name>/<volume name>").
_ATTACHABLE_INTREE = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", lambda s: s.get("volumeID", "")),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", lambda s: s.get("pdName", "")),
    "azureDisk": ("kubernetes.io/azure-disk", lambda s: s.get("diskURI", "")),
    "cinder": ("kubernetes.io/cinder", lambda s: s.get("volumeID", "")),
    "vsphereVolume": ("kubernetes.io/vsphere-volume", lambda s: s.get("volumePath", "")),
    "portworxVolume": ("kubernetes.io/portworx-volume", lambda s: s.get("volumeID", "")),
    "rbd": ("kubernetes.io/rbd", lambda s: "%s-image-%s" % (s.get("pool", "rbd"),
                                                             s.get("image", ""))),
    "iscsi": ("kubernetes.io/iscsi", lambda s: "%s:%s:%s" % (s.get("targetPortal", ""),
                                                              s.get("iqn", ""), s.get("lun", 0))),
    "fc": ("kubernetes.io/fc", lambda s: ",".join(s.get("targetWWNs") or s.get("wwids") or [])),
}

# In-tree plugins that implement DeletableVolumePlugin, so the PV controller itself deletes the
# storage of a released PV with reclaim policy Delete (hostPath only under /tmp/).
DELETABLE_INTREE = {"awsElasticBlockStore": "kubernetes.io/aws-ebs",
                    "gcePersistentDisk": "kubernetes.io/gce-pd",
                    "azureDisk": "kubernetes.io/azure-disk",
                    "azureFile": "kubernetes.io/azure-file",
                    "cinder": "kubernetes.io/cinder",
                    "vsphereVolume": "kubernetes.io/vsphere-volume",
                    "portworxVolume": "kubernetes.io/portworx-volume",
                    "rbd": "kubernetes.io/rbd",
                    "glusterfs": "kubernetes.io/glusterfs",
                    "quobyte": "kubernetes.io/quobyte",
                    "scaleIO": "kubernetes.io/scaleio",
                    "storageos": "kubernetes.io/storageos",
                    "photonPersistentDisk": "kubernetes.io/photon-pd",
                    "hostPath": "kubernetes.io/host-path"}


def source_of(pv):
    from .validation import pv_sources
    sources = pv_sources(pv.get("spec") or {})
    return sources[0] if sources else None


def attached_name(pv, csi_drivers):
    """The name under which an attached PV appears in node.status.volumesAttached, or None when
    its plugin does not attach. csi_drivers: {name: CSIDriver object}."""
    spec = pv.get("spec") or {}
    source = source_of(pv)
    if source == "csi":
        csi = spec["csi"]
        driver = csi_drivers.get(csi.get("driver"))
        if driver is not None and not (driver.get("spec") or {}).get("attachRequired", True):
            return None
        return "kubernetes.io/csi/%s^%s" % (csi.get("driver"), csi.get("volumeHandle"))
    if source == "flexVolume":
        # Treated as an attachable driver; GetVolumeName falls back to the PV name.
        return "flexvolume-%s/%s" % (spec["flexVolume"].get("driver"), pv["metadata"]["name"])
    if source in _ATTACHABLE_INTREE:
        prefix, name = _ATTACHABLE_INTREE[source]
        return "%s/%s" % (prefix, name(spec[source] or {}))
    return None


def in_tree_deleter(pv):
    """The in-tree plugin name that can delete this PV's storage, or None."""
    source = source_of(pv)
    if source == "hostPath":
        path = (pv["spec"]["hostPath"] or {}).get("path", "")
        return DELETABLE_INTREE["hostPath"] if path.startswith("/tmp/") and len(path) > 5 else None
    return DELETABLE_INTREE.get(source)
