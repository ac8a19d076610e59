# Sourced by the package tests: a site's machine as a minimal Debian root file system, made once by
# debootstrap (--variant=minbase, 1-3 min) and cached in $MIRAGE_TEST_ROOTS (default
# /var/cache/mirage-roots)/RELEASE. It holds Slurm's runtime and client (libslurm, sbatch,
# slurmctld, slurmd, munge: the login node and the controller it talks to), the unprivileged user
# $site_user, and nothing of mirage's: no -dev package, none of its libraries but what the base
# system itself brings (recorded in .base-libraries: trixie's util-linux needs SQLite).
#
#   site_root RELEASE      sets $site_root; builds the root when missing or made from another list
site_user=siteuser
site_packages=(slurm-client slurmctld slurmd munge procps)
# The libraries the tarball bundles, as ldconfig names them.
mirage_libraries='(libfmt|libspdlog|libtomlplusplus|libsqlite3)\.so[^ ]*'

site_root() {
  local release="$1" roots="${MIRAGE_TEST_ROOTS:-/var/cache/mirage-roots}"
  site_root="$roots/$release"
  local want
  want="$(printf '%s\n' "${site_packages[@]}" | sha256sum | cut -c1-16)"
  if [ "$(cat "$site_root/.complete" 2>/dev/null)" != "$want" ]; then
    rm -rf "$site_root.tmp"
    mkdir -p "$roots"
    debootstrap --variant=minbase "$release" "$site_root.tmp" \
      "${MIRAGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$roots/$release.log" 2>&1 || {
      echo "FAIL: debootstrap $release failed (see $roots/$release.log)" >&2
      return 1
    }
    chroot "$site_root.tmp" ldconfig -p | grep -oE "$mirage_libraries" >"$site_root.tmp/.base-libraries" || true
    # No daemon starts on install (no init system runs in the root).
    printf '#!/bin/sh\nexit 101\n' >"$site_root.tmp/usr/sbin/policy-rc.d"
    chmod 755 "$site_root.tmp/usr/sbin/policy-rc.d"
    # libslurm's package is named after its soname (libslurm38 in bookworm, libslurm42t64 in
    # trixie): take the one there is.
    mount -t proc proc "$site_root.tmp/proc"
    chroot "$site_root.tmp" sh -c "apt-get install -y -q --no-install-recommends ${site_packages[*]} \
      \$(apt-cache search --names-only '^libslurm[0-9]+(t64)?\$' | cut -d' ' -f1)" \
      >>"$roots/$release.log" 2>&1 || {
      umount "$site_root.tmp/proc"
      echo "FAIL: installing Slurm in the $release root failed (see $roots/$release.log)" >&2
      return 1
    }
    umount "$site_root.tmp/proc"
    chroot "$site_root.tmp" apt-get clean
    chroot "$site_root.tmp" useradd --create-home --shell /bin/sh "$site_user"
    rm -rf "$site_root" && mv "$site_root.tmp" "$site_root"
    echo "$want" >"$site_root/.complete"
  fi
}
