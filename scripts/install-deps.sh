#!/usr/bin/env bash
# Installs the Debian packages mirage needs on a fresh Debian bookworm machine (run as root).
# Idempotent: packages already present are skipped by apt.
#   scripts/install-deps.sh            everything: the program, its learned-agent plugin
#                                      (LibTorch), the tests and their Slurm clusters, the tools
#   scripts/install-deps.sh --program  what `scripts/build.sh mirage` needs (the quick start)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
case "${1:-}" in
  "" | --program) ;;
  *) echo "install-deps: unknown argument '$1' (expected nothing or --program)" >&2; exit 2 ;;
esac

# The program alone (GoogleTest too: the build configures the tests even when it builds none).
program=(
  # ccache: scripts/build.sh compiles through it, so a second checkout reuses what one built
  build-essential cmake pkg-config ca-certificates ccache
  libslurm-dev libboost-dev libspdlog-dev libfmt-dev libtomlplusplus-dev libsqlite3-dev
  libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
)
packages=(
  "${program[@]}" git clang-format
  # the learned agents' training (the plugin)
  libtorch-dev libgloo-dev
  # an optimised BLAS for LibTorch's CPU matrix products: Debian's LibTorch links libblas.so.3,
  # which is otherwise the reference BLAS; training the agents ran 12x faster (19 -> 230 steps/s).
  # The OpenMP flavour: it follows LibTorch's thread setting and is safe to call from several
  # threads at once (moe trains experts side by side; the serial flavour has no locking)
  libopenblas0-openmp
  # a real Slurm cluster on this machine for the slurm-labelled tests (docs/development.md)
  slurmctld slurmd slurm-client munge
  # accounting for that cluster (tests/slurm/cluster.sh --accounting): the age and fairshare
  # factors, associations and QOS limits need slurmdbd, which keeps its records in MariaDB
  slurmdbd mariadb-server
  # a Debian 13 root for the Slurm 24.11 suites (scripts/slurm-24.11.sh)
  debootstrap
  # plots for `mirage eval --out`
  gnuplot-nox
  # the binary tarball (scripts/package.sh): the program's RPATH to its bundled libraries; a
  # minimal Debian root to test it in as a user at a site (tests/package/user_install.sh)
  patchelf debootstrap
)

[ "${1:-}" != --program ] || packages=("${program[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "install-deps: all ${#packages[@]} packages present"
