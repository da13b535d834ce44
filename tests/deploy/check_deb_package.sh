#!/usr/bin/env bash
# Builds the flexcsi .deb with CPack from an already built tree, then checks what is inside:
# control fields, file list and modes, conffiles, maintainer scripts, and that the packaged
# programs run: `flexcsi install-driver` from the package installs the package's own flexexec
# (from its default config) into a temp plugin dir, and that flexexec's `init` answers.
# Nothing is installed on this machine: the package is only extracted into a temp root.
#
# Usage: check_deb_package.sh BUILD_DIR [PACKAGED_PROGRAM...]
#   PACKAGED_PROGRAM: flexcsi flexcsi-bridge flexexec csi-loopback (those the build has)
set -euo pipefail
build=$1
shift
programs=("$@")

tmp=$(mktemp -d /tmp/flexcsi-deb-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log"; echo "FAIL: cpack"; exit 1; }
deb=$(ls "$tmp"/out/flexcsi_*.deb)
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# Control fields.
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == flexcsi ]] && pass "Package: flexcsi" || fail "Package is $(field Package)"
[[ $(field Section) == admin ]] && pass "Section: admin" || fail "Section $(field Section)"
depends=$(field Depends)
echo "Depends: $depends"
for dep in mount util-linux e2fsprogs; do
  [[ $depends == *"$dep"* ]] && pass "depends on $dep" || fail "Depends lacks $dep"
done
if ((${#programs[@]})); then
  # dpkg-shlibdeps ran: the C library shows up among the dependencies.
  [[ $depends == *libc6* ]] && pass "shared library dependencies computed" ||
    fail "no libc6 in Depends: dpkg-shlibdeps did not run"
fi

# Contents.
dpkg-deb -c "$deb" >"$tmp/contents"
dpkg-deb -x "$deb" "$tmp/root"
dpkg-deb -e "$deb" "$tmp/control"
if grep -v ' root/root ' "$tmp/contents" | grep -q .; then
  fail "files not owned by root/root:"; grep -v ' root/root ' "$tmp/contents"
else
  pass "all files root/root"
fi
declare -A want=(
  [flexcsi]=usr/bin/flexcsi [flexcsi-bridge]=usr/bin/flexcsi-bridge
  [csi-loopback]=usr/bin/csi-loopback [flexexec]=usr/lib/flexcsi/flexexec)
for p in "${programs[@]}"; do
  f=$tmp/root/${want[$p]}
  if [[ -f $f && $(stat -c %a "$f") == 755 ]]; then pass "${want[$p]} (0755)"; else fail "missing or not 0755: ${want[$p]}"; fi
done
for f in lib/systemd/system/flexcsi-bridge.service lib/systemd/system/csi-loopback.service \
         etc/flexcsi/bridge.yaml usr/share/flexcsi/profiles/nfs.yaml \
         usr/share/flexcsi/profiles/digitalocean.yaml usr/share/flexcsi/profiles/juicefs.yaml \
         usr/share/flexcsi/profiles/cephfs.yaml usr/share/flexcsi/profiles/rook-cephfs.yaml; do
  if [[ -f $tmp/root/$f && $(stat -c %a "$tmp/root/$f") == 644 ]]; then pass "$f (0644)"; else fail "missing or not 0644: $f"; fi
done
grep -qx /etc/flexcsi/bridge.yaml "$tmp/control/conffiles" && pass "bridge.yaml is a conffile" ||
  fail "bridge.yaml is not listed in conffiles"
for s in postinst prerm postrm; do
  if [[ -x $tmp/control/$s ]] && sh -n "$tmp/control/$s"; then pass "$s present, executable, parses"; else fail "$s"; fi
done
grep -q 'mkdir -p /var/lib/flexcsi' "$tmp/control/postinst" && pass "postinst creates /var/lib/flexcsi" ||
  fail "postinst does not create /var/lib/flexcsi"
# No build host paths may leak into the package.
if grep -q -- "$build" "$tmp/contents"; then fail "build dir path inside the package"; fi

# The packaged programs work together, from the extracted tree.
if [[ " ${programs[*]} " == *" flexcsi "* ]]; then
  "$tmp/root/usr/bin/flexcsi" version | grep -q '^flexcsi ' && pass "flexcsi version runs" ||
    fail "flexcsi version"
fi
if [[ " ${programs[*]} " == *" flexcsi "* && " ${programs[*]} " == *" flexexec "* ]]; then
  plugins=$tmp/plugins
  if "$tmp/root/usr/bin/flexcsi" install-driver --config "$tmp/root/etc/flexcsi/bridge.yaml" \
       --plugin-dir "$plugins" --flexexec "$tmp/root/usr/lib/flexcsi/flexexec" >"$tmp/install.log" 2>&1; then
    pass "packaged flexcsi installed the packaged flexexec from the default config"
  else
    cat "$tmp/install.log"; fail "install-driver from the package"
  fi
  out=$("$plugins/flexcsi~loopback/loopback" init || true)
  [[ $out == *'"status":"Success"'* ]] && pass "installed flexexec init: $out" ||
    fail "installed flexexec init answered: $out"
fi

# The systemd units, checked by systemd itself against the extracted binaries.
if command -v systemd-analyze >/dev/null; then
  for unit in flexcsi-bridge.service csi-loopback.service; do
    binary=$(sed -n 's|^ExecStart=\(/usr/bin/[^ ]*\).*|\1|p' "$tmp/root/lib/systemd/system/$unit")
    if [[ ! -x $tmp/root$binary ]]; then
      echo "skip: systemd-analyze verify $unit ($binary not built)"
      continue
    fi
    mkdir -p "$tmp/units"
    sed "s|^ExecStart=/usr/bin/|ExecStart=$tmp/root/usr/bin/|" \
      "$tmp/root/lib/systemd/system/$unit" >"$tmp/units/$unit"
    if SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$tmp/units/$unit" >"$tmp/verify.log" 2>&1 &&
       ! grep -v -e 'Failed to prepare filename' -e '^$' "$tmp/verify.log" | grep -q "$unit"; then
      pass "systemd-analyze verify $unit"
    else
      cat "$tmp/verify.log"; fail "systemd-analyze verify $unit"
    fi
  done
else
  echo "skip: systemd-analyze not installed"
fi

echo "deb checks failed: $failures"
exit $((failures > 0))
