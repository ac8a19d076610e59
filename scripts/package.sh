#!/usr/bin/env bash
# Builds the binary tarball a site's users unpack into ~/.local (docs/install.md):
#   dist/mirage-<version>-slurm<major.minor>-<arch>.tar.gz         the program, deciding with
#       model files; every shared library it needs but glibc's and the site's libslurm
#   dist/mirage-<version>-slurm<major.minor>-<arch>-plugin.tar.gz  (--with-plugin) the training
#       plugin and LibTorch's libraries, unpacked over the first to make `mirage train` work
#
#   scripts/package.sh [--with-plugin]     (builds what it needs in build/ or $MIRAGE_BUILD_DIR)
#   scripts/package.sh --name              prints the program's tarball path for this build (configured)
#
# Layout: bin/mirage is a launcher (scripts/package/launcher.sh) that checks the site's libslurm is
# the release this build was made against before running libexec/mirage; the bundled libraries
# live in lib/mirage/ (the program's RPATH), private to mirage even when unpacked into ~/.local.
set -euo pipefail
cd "$(dirname "$0")/.."
with_plugin=0
name_only=0
for a in "$@"; do
  case "$a" in
    --with-plugin) with_plugin=1 ;;
    --name) name_only=1 ;;
    *) echo "package.sh: unknown argument $a; expected --with-plugin or --name" >&2; exit 2 ;;
  esac
done
build_dir="${MIRAGE_BUILD_DIR:-build}"
if [ $name_only = 0 ]; then
  targets=(mirage)
  [ $with_plugin = 1 ] && targets+=(mirage_learned_plugin)
  bash scripts/build.sh "${targets[@]}"
fi

[ -f "$build_dir/CMakeCache.txt" ] || { echo "package.sh: $build_dir is not configured: run scripts/build.sh" >&2; exit 1; }
version="$(sed -n 's/^project(mirage VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
slurm_h="$(sed -n 's/^Slurm_INCLUDE_DIR:PATH=//p' "$build_dir/CMakeCache.txt")/slurm/slurm_version.h"
slurm_hex="$(sed -n 's/^#define SLURM_VERSION_NUMBER 0x\([0-9a-fA-F]*\).*/\1/p' "$slurm_h")"
[ -n "$version" ] && [ -n "$slurm_hex" ] || {
  echo "package.sh: no version in CMakeLists.txt or no SLURM_VERSION_NUMBER in $slurm_h" >&2
  exit 1
}
slurm="$((16#${slurm_hex:0:2})).$(printf '%02d' $((16#${slurm_hex:2:2})))"
arch="$(uname -m)"
name="mirage-$version-slurm$slurm-$arch"
if [ $name_only = 1 ]; then
  echo "dist/$name.tar.gz"
  exit 0
fi
program="$build_dir/cli/mirage"
libslurm="$(readelf -d "$program" | sed -n 's/.*NEEDED.*\[\(libslurm\.so\.[0-9]*\)\].*/\1/p')"
[ -n "$libslurm" ] || { echo "package.sh: $program does not link libslurm" >&2; exit 1; }

# glibc's own libraries come from the site, as does libslurm (it must match its slurmctld).
is_site_library() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
      librt.so.* | libresolv.so.* | libutil.so.* | libslurm.so.*) return 0 ;;
  esac
  return 1
}
# Copies every library `file` needs, transitively, into `dir` (the dynamic loader's own answer).
bundle_libraries() {
  local file="$1" dir="$2" soname path
  while read -r soname path; do
    is_site_library "$soname" && continue
    [ -f "$dir/$soname" ] && continue
    cp -L "$path" "$dir/$soname"
    chmod u+w "$dir/$soname"
    # A library with its own RUNPATH looks for its dependencies only there: point it beside itself.
    if readelf -d "$dir/$soname" | grep -q 'R\(UN\)\?PATH'; then
      patchelf --force-rpath --set-rpath '$ORIGIN' "$dir/$soname"
    fi
  done < <(ldd "$file" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
}

rm -rf dist/stage && mkdir -p dist/stage
stage="dist/stage/$name"
mkdir -p "$stage"/{bin,libexec,lib/mirage,share/mirage/samples,share/mirage/systemd,share/doc/mirage}
objcopy --strip-debug "$program" "$stage/libexec/mirage"
patchelf --force-rpath --set-rpath '$ORIGIN/../lib/mirage' "$stage/libexec/mirage"
bundle_libraries "$program" "$stage/lib/mirage"
sed -e "s/@LIBSLURM@/$libslurm/g" -e "s/@SLURM@/$slurm/g" scripts/package/launcher.sh >"$stage/bin/mirage"
chmod 755 "$stage/bin/mirage"
cp traces/samples/sample-* "$stage/share/mirage/samples/"
cp daemon/config/mirage.example.toml "$stage/share/mirage/"
cp daemon/systemd/mirage.service "$stage/share/mirage/systemd/"
cp scripts/package/scrontab.example "$stage/share/mirage/"
cp README.md CHANGELOG.md "$stage/share/doc/mirage/"
cp -r docs "$stage/share/doc/mirage/docs"

# Nothing from this machine but glibc and libslurm: every other library resolves inside the tree.
check_resolution() {
  local file="$1" soname path
  while read -r soname path; do
    is_site_library "$soname" && continue
    case "$path" in
      "$(realpath "$stage")"/*) ;;
      *) echo "package.sh: $file loads $soname from $path, outside the tarball" >&2; exit 1 ;;
    esac
  done < <(ldd "$file" | awk '$2 == "=>" {print $1, $3}')
}
check_resolution "$(realpath "$stage/libexec/mirage")"

tar_it() {  # tar_it TARBALL DIR: DIR/$name
  tar -C "$2" --owner=0 --group=0 --sort=name -czf "$1" "$name"
  echo "package.sh: $1 ($(du -h "$1" | cut -f1))"
}
tar_it "dist/$name.tar.gz" dist/stage

if [ $with_plugin = 1 ]; then
  # The plugin and LibTorch's libraries (some 280) in their own tree, unpacked over the first.
  plugin_stage="dist/stage/plugin/$name"
  mkdir -p "$plugin_stage/lib/mirage"
  plugin="$build_dir/cli/libmirage_learned_plugin.so"
  objcopy --strip-debug "$plugin" "$plugin_stage/lib/mirage/libmirage_learned_plugin.so"
  patchelf --force-rpath --set-rpath '$ORIGIN' "$plugin_stage/lib/mirage/libmirage_learned_plugin.so"
  bundle_libraries "$plugin" "$plugin_stage/lib/mirage"
  # What the program's tarball already holds stays out of this one.
  for f in "$stage"/lib/mirage/*; do rm -f "$plugin_stage/lib/mirage/$(basename "$f")"; done
  tar_it "dist/$name-plugin.tar.gz" dist/stage/plugin
fi
