#!/bin/sh
# Detaches loop devices whose backing file lies in a csi-loopback test temp dir
# (/tmp/flexcsi-driver-test-<pid>-*) of a test process that is gone. Runs after the driver tests
# as a ctest cleanup fixture; normally finds nothing, because every test cleans up after itself.
# Exits non-zero when it had to clean up, so a leak is noticed. A running test's devices (another
# checkout's ctest beside this one) are not touched.
set -u
leaked=0
for entry in $(losetup --list --noheadings --output NAME,BACK-FILE 2>/dev/null |
               awk '$2 ~ "^/tmp/flexcsi-driver-test-" {print $1 ":" $2}'); do
  device=${entry%%:*}
  pid=$(printf '%s\n' "${entry#*:}" | sed -n 's|^/tmp/flexcsi-driver-test-\([0-9][0-9]*\)-.*|\1|p')
  if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
    continue
  fi
  echo "detaching leaked $device" >&2
  losetup --detach "$device" || true
  leaked=1
done
exit "$leaked"
