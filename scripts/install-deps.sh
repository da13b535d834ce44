#!/usr/bin/env bash
# Installs every Debian package flexcsi needs to build, test and run its demo.
# Idempotent: asks apt only for what is missing, so a second run costs a second.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ninja-build
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libboost-dev libboost-filesystem-dev libmount-dev libssl-dev
  libsqlite3-dev libcurl4-openssl-dev libsimdjson-dev rapidjson-dev libgtest-dev libgmock-dev libcli11-dev libyaml-cpp-dev libyaml-dev libspdlog-dev libfmt-dev
  e2fsprogs xfsprogs util-linux mount jq openssl python3
  file  # cpack's dpkg-shlibdeps step (the .deb and the container image build)
  clang libclang-rt-14-dev
  prometheus python3-kubernetes python3-yaml
  hyperfine
  python3-matplotlib  # bench/soak_bench.py: the plot of the soak's samples
  stress-ng  # scripts/test-under-load.sh: the suite with two cores kept busy
  # the real-cluster test suites (tests/cluster): Kubernetes' own binaries come from
  # FLEXCSI_KUBE_ASSETS, the rest from Debian
  etcd-server containerd runc busybox-static
  python3-grpcio  # tests/cluster/slow_csi_proxy.py: a CSI driver that takes seconds
  containernetworking-plugins iproute2  # the deploy suite's pod network (a CNI bridge)
  # the CephFS suite: a real Ceph cluster, ceph-csi's libraries and its mounter (ceph-csi itself
  # comes from FLEXCSI_THIRD_PARTY_CSI)
  ceph-mon ceph-mgr ceph-osd ceph-mds ceph-common ceph-fuse librados2 librbd1
  # the JuiceFS suite: its metadata engine, and fusermount for `juicefs umount`
  redis-server fuse3
  # the container image (scripts/build-image.sh): a Debian 12 base made here, podman to build
  mmdebstrap podman
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Manifest validation renders the kustomizations with kubectl. Debian's own (kubernetes-client,
# kubectl 1.20) is installed only where no kubectl exists, so that a newer one already on the
# machine is never shadowed. Its kustomize v2 renders every overlay but the two made of
# components (old-clusters, provisioner-per-node: kubectl 1.21+), whose check is then skipped.
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
