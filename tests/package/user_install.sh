#!/usr/bin/env bash
# The binary tarball as a user at a site meets it: a minimal Debian root with Slurm's client and
# libslurm but none of mirage's libraries and no -dev package; an unprivileged user unpacks the
# tarball into ~/.local (docs/install.md's one line) and runs the quick start's `mirage eval` on
# the shipped sample. Prints the time from unpacking to the first table. Then the launcher's
# refusals: a tarball for another Slurm release, and no libslurm at all.
#
#   tests/package/user_install.sh TARBALL [RELEASE [PLUGIN_TARBALL]]
#       as root; RELEASE: bookworm by default. With PLUGIN_TARBALL, unpacked over the first, the
#       user also trains a model (`mirage train`, the plugin) and decides with it.
#
# The root (tests/package/site_root.sh) is cached in $MIRAGE_TEST_ROOTS (default
# /var/cache/mirage-roots)/RELEASE; delete it to build it again. Exit 77 (skipped) when not root or
# without debootstrap.
set -euo pipefail
tarball="$(realpath "$1")"
release="${2:-bookworm}"
plugin_tarball="${3:+$(realpath "$3")}"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to build and enter the root fs"; exit 77; }
command -v debootstrap >/dev/null || { echo "skipped: needs debootstrap"; exit 77; }

# A site's login node (tests/package/site_root.sh): Slurm's client and its library, nothing of
# mirage's.
. "$(dirname "$0")/site_root.sh"
site_root "$release" || exit 1
root="$site_root"
user="$site_user"
if chroot "$root" dpkg -l | awk '$1 == "ii" {print $2}' | grep -q -- '-dev$'; then
  fail "the $release root has -dev packages: $(chroot "$root" dpkg -l | awk '$1 == "ii" && $2 ~ /-dev$/ {print $2}' | tr '\n' ' ')"
fi

# Of what mirage links, only what the base system itself needs (libstdc++, libgcc_s, zlib; trixie's
# util-linux brings SQLite) is there.
there="$(chroot "$root" ldconfig -p | grep -oE "$mirage_libraries" | grep -vxFf "$root/.base-libraries" || true)"
[ -z "$there" ] || fail "the $release root has mirage's libraries: $there"

# /proc for the program's own path (it finds its samples and plugin from it).
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
hidden=""
cleanup() {
  [ -n "$hidden" ] && mv "$root/libslurm.hidden" "$root$hidden" && chroot "$root" ldconfig
  umount "$root/proc" 2>/dev/null || true
}
trap cleanup EXIT
home="/home/$user"
# Numbers: the host need not know the root's user.
ids="$(chroot "$root" id -u "$user"):$(chroot "$root" id -g "$user")"
rm -rf "${root:?}$home"/{.local,.cache,*.tar.gz,other,*.toml,*.mirage-model}
for t in "$tarball" ${plugin_tarball:+"$plugin_tarball"}; do
  cp "$t" "$root$home/"
  chown "$ids" "$root$home/$(basename "$t")"
done
as_user() {
  chroot --userspec="$ids" "$root" env -i HOME="$home" USER="$user" LANG=C.UTF-8 \
    PATH="$home/.local/bin:/usr/local/bin:/usr/bin:/bin" sh -c "cd && $1"
}

# The one-line install, then the quick start's first table.
out="$(as_user "start=\$(date +%s%N)
  mkdir -p ~/.local && tar -xzf $(basename "$tarball") --strip-components=1 -C ~/.local
  unpacked=\$(date +%s%N)
  mirage eval --trace sample:gpu-cluster --chain-nodes 4 --policies reactive,average,forecast
  echo timings \$(( (unpacked - start) / 1000000 )) \$(( (\$(date +%s%N) - unpacked) / 1000000 ))" 2>&1)" ||
  fail "unpack and eval as $user: $out"
grep -qE "^ *average +[0-9]+ " <<<"$out" || fail "no eval table: $out"
read -r unpack_ms eval_ms < <(sed -n 's/^timings //p' <<<"$out")
echo "ok: $release, as $user: unpacked in $unpack_ms ms, then the first eval table in $eval_ms ms" \
  "($((unpack_ms + eval_ms)) ms in all)"

# Nothing from the build machine: every library mirage loads but glibc's and libslurm is its own.
libs="$(as_user "ldd ~/.local/libexec/mirage")"
grep -q "not found" <<<"$libs" && fail "unresolved libraries: $libs"
outside="$(awk '$2 == "=>" {print $1, $3}' <<<"$libs" |
  grep -vE "^(libc|libm|libpthread|libdl|librt|libresolv|libslurm)\.so|^[^ ]+ $home/\.local/(libexec/\.\./)?lib/mirage/" || true)"
[ -z "$outside" ] || fail "libraries from outside the tarball: $outside"
echo "ok: ldd lists only glibc, libslurm and the tarball's own libraries"

# A tarball for another Slurm release: one line naming what it needs and what there is.
set +e
other="$(as_user "rm -rf ~/other && mkdir -p ~/other/bin && ln -s ~/.local/libexec ~/other/libexec &&
  sed 's/^need=\"libslurm.so.[0-9]*\"/need=\"libslurm.so.99\"/' ~/.local/bin/mirage >~/other/bin/mirage &&
  chmod +x ~/other/bin/mirage && ~/other/bin/mirage --version" 2>&1)"
rc=$?
set -e
[ $rc = 127 ] || fail "a tarball for another Slurm release exited $rc: $other"
# The libslurm found is named with its release (tests/package/site_root.sh installs the release's own).
[ "$(wc -l <<<"$other")" = 1 ] && grep -qE "needs libslurm.so.99 .*found libslurm.so.[0-9]+ of Slurm [0-9]{2}\.[0-9]{2} \(" <<<"$other" ||
  fail "the launcher's line for another release: $other"
echo "ok: another Slurm release is refused in one line: $other"

# No libslurm at all.
hidden="$(chroot "$root" sh -c 'readlink -f "$(ldconfig -p | sed -n "s/.*libslurm\.so\.[0-9]* .*=> //p" | head -1)"')"
# Out of the library folders: ldconfig would take any lib*.so* file there for the library.
mv "$root$hidden" "$root/libslurm.hidden" && chroot "$root" ldconfig
set +e
missing="$(as_user "mirage --version" 2>&1)"
rc=$?
set -e
mv "$root/libslurm.hidden" "$root$hidden" && chroot "$root" ldconfig
hidden=""
[ $rc = 127 ] && [ "$(wc -l <<<"$missing")" = 1 ] && grep -q "found no libslurm at all" <<<"$missing" ||
  fail "without libslurm (exit $rc): $missing"
echo "ok: no libslurm is refused in one line: $missing"

[ -n "$plugin_tarball" ] || exit 0
# The training plugin over it: a small model trained (seconds), then deciding in `mirage eval`.
window="--trace sample:gpu-cluster --chain-nodes 4 --limit 240 --max-wait 12h --calibration none"
trained="$(as_user "tar -xzf $(basename "$plugin_tarball") --strip-components=1 -C ~/.local &&
  printf 'epochs = 2\nensemble = 1\nval_blocks = 1\n' >hp.toml &&
  mirage train --agent dqn $window --from 2024-03-06 --to 2024-03-12 --every 2h \
    --hyperparameters hp.toml --out m.mirage-model 2>/dev/null &&
  mirage eval $window --from 2024-03-12 --to 2024-03-14 --every 6h --policies m.mirage-model 2>/dev/null" 2>&1)" ||
  fail "training with the plugin tarball: $trained"
grep -qE "^ *m\.mirage-model +[0-9]+ " <<<"$trained" || fail "no model in the eval table: $trained"
echo "ok: with the plugin tarball, $user trained a model and decided with it"
