#!/usr/bin/env bash
# Runs the README's `make test` as a new user would: in a clean Debian
# bookworm chroot (debootstrap minbase, plus build-essential, cmake, git,
# python3, curl, valgrind and clang), so that scripts/install-deps.sh has to
# install everything else, and with Debian's own /etc/hosts, where
# `localhost` is 127.0.0.1 and ::1.
#
#   scripts/check-clean-debian.sh [--prepare-only] [--keep] [DIR]
#
# DIR (default /var/tmp/cshttp-bookworm) holds the chroot. The base system
# is made once and reused by later runs; each run tests a fresh clone of
# this checkout's HEAD (commit first: uncommitted changes are not taken).
# A `shared/` folder beside the checkout is copied beside the clone, as CI
# has it. --prepare-only makes the base and stops; --keep leaves the
# clone's build trees in DIR/root/cshttp after the run.
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
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
}
trap cleanup EXIT
bind() { # bind <host path> <path in the chroot>
  mkdir -p "$dir$2"
  mount --bind "$1" "$dir$2"
  mounted+=("$dir$2")
}
in_root() { chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }

if [ ! -e "$dir/.cshttp-debootstrap" ]; then
  if [ -d "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
    echo "check-clean-debian.sh: $dir is not empty and was not made by this script; name another DIR" >&2
    exit 2
  fi
  echo "== debootstrap bookworm (minbase) into $dir"
  mkdir -p "$dir"
  debootstrap --variant=minbase bookworm "$dir" "$mirror"
  touch "$dir/.cshttp-debootstrap"
fi
# Debian's installer writes these; minbase writes none.
cat > "$dir/etc/hosts" <<'EOF'
127.0.0.1	localhost
::1		localhost ip6-localhost ip6-loopback
ff02::1		ip6-allnodes
ff02::2		ip6-allrouters
EOF
cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true

mount -t proc proc "$dir/proc"; mounted+=("$dir/proc")
bind /sys /sys
bind /dev /dev
bind /dev/pts /dev/pts
mkdir -p "$dir/dev/shm"
mount -t tmpfs shm "$dir/dev/shm"; mounted+=("$dir/dev/shm")

if [ ! -e "$dir/.cshttp-base" ]; then
  echo "== the starting packages"
  in_root apt-get update -qq
  in_root apt-get install -y -qq --no-install-recommends \
    build-essential cmake git python3 curl valgrind clang ca-certificates
  touch "$dir/.cshttp-base"
fi
[ "$prepare_only" -eq 1 ] && { echo "base ready in $dir"; exit 0; }

echo "== a fresh clone of $(git -C "$repo" rev-parse --short HEAD)"
rm -rf "$dir/root/cshttp" "$dir/root/shared"
git clone -q --no-hardlinks "$repo" "$dir/root/cshttp"
[ -d "$repo/../shared" ] && cp -r "$repo/../shared" "$dir/root/shared"

echo "== make test in the chroot (localhost: $(in_root getent ahosts localhost | awk '{print $1}' | sort -u | tr '\n' ' '))"
start=$(date +%s)
set +e
in_root bash -c 'cd /root/cshttp && make test'
rc=$?
set -e
echo "== make test exited $rc after $(( $(date +%s) - start )) s"
[ "$keep" -eq 1 ] || rm -rf "$dir/root/cshttp"
exit $rc
