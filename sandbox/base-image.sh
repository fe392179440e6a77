#!/usr/bin/env bash
# Builds flightdeck/base:bookworm from Debian bookworm with debootstrap and
# `docker import`, for engines that reach no registry. Does nothing when the
# image exists. Needs root (debootstrap) or passwordless sudo.
set -euo pipefail

image="${FLIGHTDECK_BASE_IMAGE:-flightdeck/base:bookworm}"
# DEBIAN_MIRROR overrides debootstrap's own default mirror when set.
mirror="${DEBIAN_MIRROR:-}"
packages="bash,coreutils,python3,python3-pytest,git,ca-certificates,procps"

if docker image inspect "$image" >/dev/null 2>&1; then
  echo "base image $image is present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "base-image: debootstrap needs root; run as root or install sudo" >&2; exit 2; }
  sudo="sudo"
fi
if ! command -v debootstrap >/dev/null; then
  echo "base-image: installing debootstrap"
  $sudo apt-get install -y debootstrap >/dev/null 2>&1 || { $sudo apt-get update >/dev/null && $sudo apt-get install -y debootstrap >/dev/null; }
fi

root="$(mktemp -d "${TMPDIR:-/tmp}/flightdeck-base.XXXXXX")"
trap '$sudo rm -rf "$root"' EXIT

echo "base-image: debootstrap bookworm into $root (about a minute)"
$sudo debootstrap --variant=minbase --include="$packages" bookworm "$root" ${mirror:+"$mirror"} >"$root.log" 2>&1 || {
  echo "base-image: debootstrap failed; the last lines of $root.log:" >&2
  tail -20 "$root.log" >&2
  exit 1
}
rm -f "$root.log"
# A smaller image: no apt lists or caches.
$sudo rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

$sudo tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'WORKDIR /' \
  --change 'CMD ["/bin/bash"]' \
  - "$image" >/dev/null
echo "base-image: built $image"
