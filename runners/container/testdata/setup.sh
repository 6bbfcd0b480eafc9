#!/usr/bin/env bash
# Installs and configures podman for runners/container's tests (run as root).
# Idempotent and fast once done: apt-get runs only when a binary is missing,
# and the configuration is rewritten only when its content differs.
#
# This project's machines (cgroup v1, no systemd as init, a hard
# RLIMIT_NOFILE below podman's default) need: the runc runtime (installed
# here; the tests pass --runtime=runc, and crun is not installed), no
# default ulimits (otherwise runc fails with "error setting rlimit type 7:
# operation not permitted") and the cgroupfs cgroup manager (no systemd
# to ask). events_logger = "file": there is no journald either.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
	echo "setup.sh: run as root (apt-get, /etc/containers)" >&2
	exit 1
fi

missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v newuidmap >/dev/null || missing+=(uidmap)
command -v fuse-overlayfs >/dev/null || missing+=(fuse-overlayfs)
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Another setup script may hold dpkg's lock: wait for it.
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends podman runc uidmap fuse-overlayfs conmon slirp4netns containernetworking-plugins >/dev/null
fi

mkdir -p /etc/containers
conf=/etc/containers/containers.conf
want='# Written by runners/container/testdata/setup.sh.
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
'
if [ "$(cat "$conf" 2>/dev/null)" != "$(printf '%s' "$want")" ]; then
	printf '%s' "$want" >"$conf"
	echo "setup.sh: wrote $conf"
fi
