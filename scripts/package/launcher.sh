#!/bin/sh
# mirage's launcher in the binary tarball (scripts/package.sh): the program links the site's own
# libslurm, whose soname changes with each Slurm release, so a tarball made for another release
# says so in one line here rather than in the dynamic loader's words.
prefix="$(dirname "$(dirname "$(readlink -f "$0")")")"
need="@LIBSLURM@"  # Slurm @SLURM@
# The Slurm release of a libslurm soname (SLURM_API_CURRENT; series_of_libslurm_api in
# daemon/src/slurm/SlurmRelease.cpp holds the same table).
of_release() {
  case "$1" in
    libslurm.so.36) echo " of Slurm 20.11" ;; libslurm.so.37) echo " of Slurm 21.08" ;;
    libslurm.so.38) echo " of Slurm 22.05" ;; libslurm.so.39) echo " of Slurm 23.02" ;;
    libslurm.so.40) echo " of Slurm 23.11" ;; libslurm.so.41) echo " of Slurm 24.05" ;;
    libslurm.so.42) echo " of Slurm 24.11" ;; libslurm.so.43) echo " of Slurm 25.05" ;;
    libslurm.so.44) echo " of Slurm 25.11" ;;
  esac
}
# Where the dynamic loader will look: LD_LIBRARY_PATH, then its cache.
found=""
others=""
IFS_SAVED="$IFS"
IFS=:
for d in ${LD_LIBRARY_PATH:-}; do
  [ -n "$d" ] || continue
  [ -e "$d/$need" ] && found="$d/$need"
  for f in "$d"/libslurm.so.*; do [ -e "$f" ] && others="$others ${f##*/}$(of_release "${f##*/}") ($d)"; done
done
IFS="$IFS_SAVED"
if [ -z "$found" ]; then
  ldconfig=""
  for c in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
    command -v "$c" >/dev/null 2>&1 && ldconfig="$c" && break
  done
  # Without ldconfig the loader itself answers below.
  [ -z "$ldconfig" ] && exec "$prefix/libexec/mirage" "$@"
  cache="$("$ldconfig" -p 2>/dev/null | grep 'libslurm\.so\.[0-9]* ')"
  found="$(printf '%s\n' "$cache" | grep -F "$need " | head -1)"
  if [ -z "$found" ]; then
    while read -r so path; do
      [ -n "$so" ] && others="$others $so$(of_release "$so") ($path)"
    done <<EOF
$(printf '%s\n' "$cache" | sed -n 's/^[[:space:]]*\(libslurm\.so\.[0-9]*\) .*=> \(.*\)$/\1 \2/p')
EOF
  fi
fi
if [ -z "$found" ]; then
  others="$(printf '%s' "$others" | tr -s ' ' | sed 's/^ //; s/ $//')"
  echo "mirage: this build needs $need (Slurm @SLURM@), found ${others:-no libslurm at all}: install Slurm @SLURM@'s libslurm, set LD_LIBRARY_PATH to its folder, or take the tarball made for your Slurm (share/doc/mirage/docs/install.md)" >&2
  exit 127
fi
exec "$prefix/libexec/mirage" "$@"
