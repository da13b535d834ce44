#!/usr/bin/env bash
# Builds a previous release's binaries from git history into a cache shared by every test run:
#   build_release.sh <repo> [binary...]        (binaries: flexexec flexcsi-bridge
#                                               flexcsi-migrate flexcsi-controller; default
#                                               the first two)
# The release is the newest `## X.Y.Z — commit <sha>` heading of <repo>/CHANGELOG.md (the
# unreleased section above it names no commit). Prints the directory whose bin/ holds the
# binaries; its VERSION file names the release and commit.
#
# Cache: ${FLEXCSI_RELEASE_CACHE:-/var/cache/flexcsi-test-releases}/<full commit>/bin/<binary>.
# A commit's binaries never change, so a binary present is a binary done. Builds of one commit
# take turns under a flock; each builds from `git archive` in a temp dir on the cache's file
# system and renames its binaries into place, so a reader never sees half a file and a killed
# build leaves only its temp dir (removed by the next build of that commit).
set -euo pipefail

die() { echo "build_release: $*" >&2; exit 1; }

repo=${1:?usage: build_release.sh <repo> [binary...]}
shift
# Another clone whose CHANGELOG.md names the release to build (e.g. to test against an older one).
repo=${FLEXCSI_UPGRADE_REPO:-$repo}
binaries=("$@")
[[ ${#binaries[@]} -gt 0 ]] || binaries=(flexexec flexcsi-bridge)

# The top-level folders each binary needs (FLEXCSI_PARTS), so nothing else is configured; a
# binary not listed here is refused (add its parts, checked against a build of the release).
declare -A parts_of=(
  [flexexec]="common;flexexec"
  [flexcsi-bridge]="proto;common;translator;kube;bridge"
  [flexcsi-migrate]="common;translator;kube;migrate"
  [flexcsi-controller]="proto;common;translator;kube;bridge;controller"
)
for b in "${binaries[@]}"; do
  [[ -n ${parts_of[$b]:-} ]] || die "no parts known for binary '$b'"
done

changelog=$repo/CHANGELOG.md
[[ -f $changelog ]] || die "$changelog is missing: it names the previous release's commit"
heading=$(grep -m1 -E '^## [0-9]+\.[0-9]+\.[0-9]+ — commit [0-9a-f]{7,40}\b' "$changelog" || true)
[[ -n $heading ]] ||
  die "$changelog names no release commit (a line like '## 0.1.0 — commit aa82685')"
release=$(sed -E 's/^## ([0-9.]+) .*/\1/' <<<"$heading")
short=$(sed -E 's/.* commit ([0-9a-f]+).*/\1/' <<<"$heading")
commit=$(git -C "$repo" rev-parse --verify -q "$short^{commit}" 2>/dev/null) ||
  die "release $release's commit $short (CHANGELOG.md) is not in $repo's history (a shallow clone? git fetch --unshallow)"

cache_root=${FLEXCSI_RELEASE_CACHE:-/var/cache/flexcsi-test-releases}
cache=$cache_root/$commit
mkdir -p "$cache/bin"

missing() {
  local b
  for b in "${binaries[@]}"; do [[ -x $cache/bin/$b ]] || echo "$b"; done
}

exec 9>"$cache/lock"
flock 9
mapfile -t to_build < <(missing)
if [[ ${#to_build[@]} -gt 0 ]]; then
  parts=""
  for b in "${to_build[@]}"; do parts+="${parts_of[$b]};"; done
  parts=$(tr ';' '\n' <<<"$parts" | awk 'NF && !seen[$0]++' | paste -sd';')
  rm -rf "$cache"/tmp.*  # what a killed build left
  work=$(mktemp -d "$cache/tmp.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  started=$(date +%s)
  echo "build_release: building ${to_build[*]} of $release ($commit), parts $parts" >&2
  mkdir "$work/src"
  git -C "$repo" archive "$commit" | tar -x -C "$work/src"
  launcher=()
  command -v ccache >/dev/null 2>&1 &&
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # Unoptimized and without debug information: the tests need the release's behaviour, not its
  # speed, and every CI run starts with an empty cache, so the compile time is paid each time.
  cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_FLAGS=-O0 -DCMAKE_C_FLAGS=-O0 \
    "-DFLEXCSI_PARTS=$parts" "${launcher[@]}" >"$work/configure.log" 2>&1 ||
    { tail -n 30 "$work/configure.log" >&2; die "configuring $commit failed"; }
  cmake --build "$work/build" -j "${JOBS:-$(nproc)}" --target "${to_build[@]}" \
    >"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log" >&2; die "building ${to_build[*]} of $commit failed"; }
  for b in "${to_build[@]}"; do
    built=$(find "$work/build" -name "$b" -type f -perm -u+x | head -n1)
    [[ -n $built ]] || die "the build of $commit made no $b"
    cp "$built" "$work/$b.new"
    mv -f "$work/$b.new" "$cache/bin/$b"
  done
  echo "$release $commit" >"$cache/VERSION"
  echo "build_release: built in $(($(date +%s) - started)) s" >&2
fi
echo "$cache"
