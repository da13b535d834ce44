#!/bin/sh
# Detaches loop devices whose backing file lies in a csi-loopback test temp dir. Runs after the
# driver tests as a ctest cleanup fixture; normally finds nothing, because every test cleans up
# after itself. Exits non-zero when it had to clean up, so a leak is noticed.
set -u
leaked=0
for device in $(losetup --list --noheadings --output NAME,BACK-FILE 2>/dev/null |
                awk '$2 ~ "^/tmp/flexcsi-driver-test-" {print $1}'); do
  echo "detaching leaked $device" >&2
  losetup --detach "$device" || true
  leaked=1
done
exit "$leaked"
