#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages ptscope needs to build and test.  Idempotent and
# quick when everything is present: apt-get runs only for what is missing.
set -e
PKGS="gcc g++ make pkg-config libipt-dev libelf-dev libdw-dev libcapstone-dev
libprotobuf-c-dev protobuf-c-compiler libyajl-dev zlib1g-dev libiberty-dev
libbpf-dev bpftool clang llvm linux-libc-dev python3 libc6-dbg qemu-user uftrace
libclang-rt-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "ptscope: missing packages:$missing; run 'make deps' as root (or: sudo apt-get install$missing)." >&2
	exit 1
fi
echo "ptscope: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
