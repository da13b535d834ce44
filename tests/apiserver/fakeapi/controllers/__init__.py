"""Background stand-ins for kube-controller-manager, kube-scheduler and kubelet (README.md)."""


def all_controllers(fake):
    """The controllers, in the order one pass runs them."""
    from .expander import ExpandController
    from .gc import GarbageCollector, NamespaceController
    from .node_agents import AttachDetachController, KubeletStandIn
    from .protection import PvcProtectionController, PvProtectionController
    from .pv_binder import PersistentVolumeController
    from .scheduler import Scheduler
    from .workloads import DeploymentController, ReplicaSetController, StatefulSetController
    from .csi_attacher import CsiAttacherStandIn
    attachers = (CsiAttacherStandIn,) if getattr(fake, "csi_attacher", False) else ()
    return [cls(fake) for cls in (
        DeploymentController, ReplicaSetController, StatefulSetController, Scheduler,
        PersistentVolumeController, KubeletStandIn, AttachDetachController) + attachers + (
        PvcProtectionController, PvProtectionController, ExpandController,
        NamespaceController, GarbageCollector)]
