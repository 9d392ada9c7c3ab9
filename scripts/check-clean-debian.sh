#!/usr/bin/env bash
# Runs the README's `make test` as a new user would: in a clean Debian
# bookworm chroot (debootstrap minbase, plus build-essential, cmake, git,
# python3, curl, valgrind and clang), so that scripts/install-deps.sh has to
# install everything else, and with Debian's own /etc/hosts, where
# `localhost` is 127.0.0.1 and ::1.
#
#   scripts/check-clean-debian.sh [--prepare-only] [--keep] [DIR]
#
# DIR (default /var/tmp/cshttp-bookworm) holds DIR/base, the clean system
# (made once, never tested in), and DIR/run, a fresh copy of it for each
# run, so that what one run installs is not there for the next. Each run
# tests a fresh clone of this checkout's HEAD (commit first: uncommitted
# changes are not taken). A `shared/` folder beside the checkout is copied
# beside the clone, as CI has it. --prepare-only makes the base and stops;
# --keep leaves DIR/run (with the clone's build trees) after the run.
#
# Needs root (debootstrap, chroot, mounts) and Debian's package mirror.
# Exit status: make test's.
set -euo pipefail

prepare_only=0
keep=0
dir=/var/tmp/cshttp-bookworm
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare-only) prepare_only=1 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-clean-debian.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) dir="$1" ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || { echo "check-clean-debian.sh: must run as root (debootstrap, chroot, mounts)" >&2; exit 2; }
repo="$(cd "$(dirname "$0")/.." && pwd)"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if ! command -v debootstrap >/dev/null; then
  echo "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
fi

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  mounted=()
}
trap cleanup EXIT

# The kernel's file systems, inside chroot $1.
mount_into() {
  mount -t proc proc "$1/proc"
  mounted+=("$1/proc")
  for p in /sys /dev /dev/pts; do
    mkdir -p "$1$p"
    mount --bind "$p" "$1$p"
    mounted+=("$1$p")
  done
  mkdir -p "$1/dev/shm"
  mount -t tmpfs shm "$1/dev/shm"
  mounted+=("$1/dev/shm")
}

# in_root DIR COMMAND...: COMMAND in chroot DIR, with a clean environment.
in_root() {
  local root="$1"
  shift
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive "$@"
}

base="$dir/base"
if [ ! -e "$base/.cshttp-base" ]; then
  if [ -d "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ] && [ ! -e "$dir/.cshttp-check" ]; then
    echo "check-clean-debian.sh: $dir is not empty and was not made by this script; name another DIR" >&2
    exit 2
  fi
  mkdir -p "$dir"
  touch "$dir/.cshttp-check"
  rm -rf "$base"
  echo "== debootstrap bookworm (minbase) into $base"
  debootstrap --variant=minbase bookworm "$base" "$mirror"
  # Debian's installer writes this; minbase writes none.
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$base/etc/hosts"
  printf 'ff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n' >> "$base/etc/hosts"
  cp /etc/resolv.conf "$base/etc/resolv.conf" 2>/dev/null || true
  echo "== the starting packages"
  mount_into "$base"
  in_root "$base" apt-get update -qq
  in_root "$base" apt-get install -y -qq --no-install-recommends \
    build-essential cmake git python3 curl valgrind clang ca-certificates
  in_root "$base" apt-get clean
  cleanup
  touch "$base/.cshttp-base"
fi
if [ "$prepare_only" -eq 1 ]; then
  echo "base ready in $base"
  exit 0
fi

run="$dir/run"
echo "== a fresh copy of the base in $run"
rm -rf "$run"
cp -a "$base" "$run"
cp /etc/resolv.conf "$run/etc/resolv.conf" 2>/dev/null || true
mount_into "$run"

echo "== a fresh clone of $(git -C "$repo" rev-parse --short HEAD)"
git clone -q --no-hardlinks "$repo" "$run/root/cshttp"
if [ -d "$repo/../shared" ]; then cp -r "$repo/../shared" "$run/root/shared"; fi

addrs="$(in_root "$run" getent ahosts localhost | awk '{print $1}' | sort -u | tr '\n' ' ')"
echo "== make test in the chroot (localhost: $addrs)"
start=$(date +%s)
set +e
in_root "$run" bash -c 'cd /root/cshttp && make test'
rc=$?
set -e
echo "== make test exited $rc after $(($(date +%s) - start)) s"
cleanup
if [ "$keep" -eq 0 ]; then rm -rf "$run"; fi
exit $rc
