#!/bin/bash
# Runs inside the VM, chrooted into the (read-only, 9p) host root, as root.
# Copied into the per-run control share by scripts/rxe-vm, so it is not part of
# the initramfs cache key. Its stdout/stderr go to guest.log in the control
# share; the command's own streams go to two virtio serial ports.
set -u
CTL=/run/rxe-vm
# shellcheck source=/dev/null
. "$CTL/config.sh"

# Every exec of a dynamically linked host binary costs ~0.2-0.6 s under TCG
# (ld.so + libraries over 9p), so this script avoids execs where it can: bash
# builtins, /proc writes, the static busybox, and a single `ip -batch`.
BB=/bin/busybox
ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
t0=$(ms)
step() { echo "guest: +$(($(ms) - t0))ms $*"; }
fail() { echo "guest: FAILED: $*"; echo "$*" >"$CTL/setup-failed"; exit 125; }

# Find the host's stdout/stderr ports by name (no udev here to make the
# /dev/virtio-ports/ symlinks).
out_port= err_port=
for p in /sys/class/virtio-ports/*; do
    read -r name <"$p/name" 2>/dev/null || continue
    case $name in
        rxe-vm.stdout) out_port=/dev/${p##*/} ;;
        rxe-vm.stderr) err_port=/dev/${p##*/} ;;
    esac
done
[ -c "$out_port" ] && [ -c "$err_port" ] || fail "virtio serial ports missing"
step "ports found"
echo "$VM_HOSTNAME" >/proc/sys/kernel/hostname
$BB mkfifo /run/rxe-vm-sleep # `read -t` on it is an exec-free sleep

# Soft-RoCE needs an Ethernet netdev with carrier; a veth pair is the
# cheapest one. veth1 stays address-less so that nobody ever answers ARP for
# an invented peer: only static neighbour entries make a peer reachable.
# The default neighbour table (gc_thresh3=1024) would refuse or evict our
# thousands of permanent entries, so raise the limits first.
npeers=$((VM_PEER_NETS * 250))
n=/proc/sys/net/ipv4/neigh/default
echo $((npeers + 8192)) >$n/gc_thresh1 &&
    echo $((npeers + 16384)) >$n/gc_thresh2 &&
    echo $((npeers + 32768)) >$n/gc_thresh3 || fail "neighbour table limits"
# net.batch: veth pair, address, links up; neigh.batch: one permanent entry
# per peer. Both are written by the host, which generates them ~13x faster.
ip -batch "$CTL/net.batch" || fail "ip -batch net.batch"
# Each permanent entry costs ~2 ms of kernel time under TCG (4 s for 2000),
# so they are added in the background while the rest is set up.
ip -batch "$CTL/neigh.batch" &
neigh_pid=$!
rdma link add rxe0 type rxe netdev veth0 || fail "rdma link add"
step "rxe0 added"

# /tmp: the host's /tmp stays visible (the caller may live there, and a
# host-built helper binary under /tmp must be runnable) but every write lands
# in guest memory. Falls back to a plain tmpfs if overlay is disabled.
ovl_n=0
overlay() { # overlay DIR: make DIR writable, changes vanish at power-off
    local d=$1
    ovl_n=$((ovl_n + 1))
    # Upper layers live in the /run tmpfs (guest RAM).
    local u=/run/rxe-vm-ovl/$ovl_n
    $BB mkdir -p "$u/upper" "$u/work" || return 1
    $BB mount -t overlay overlay -o "lowerdir=$d,upperdir=$u/upper,workdir=$u/work" "$d"
}
if [ "$VM_OVERLAY" = 1 ]; then
    overlay /tmp || fail "overlay on /tmp"
    step "/tmp overlay"
    for d in "${VM_RW_DIRS[@]}"; do
        [ -d "$d" ] || { echo "guest: skipping overlay on missing $d"; continue; }
        overlay "$d" || fail "overlay on $d"
    done
else
    $BB mount -t tmpfs -o mode=1777 tmpfs /tmp || fail "tmpfs on /tmp"
fi
$BB chmod 1777 /tmp
step "filesystems ready"

# Results share, mounted at the very same path it has on the host so that
# paths written into result files mean the same thing on both sides.
$BB mkdir -p "$VM_OUT" 2>/dev/null
$BB mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,rw out "$VM_OUT" ||
    fail "mount results share at $VM_OUT"

# rxe fills its GID table asynchronously from netdev events; wait for the
# IPv4-mapped GID of our address and tell the command where it is.
printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${VM_LOCAL_IP//./ }
gid_index= state=
for ((i = 0; i < 200; i++)); do
    read -r state </sys/class/infiniband/rxe0/ports/1/state 2>/dev/null
    for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do
        g=
        read -r g <"$f" 2>/dev/null
        if [ "$g" = "$want" ]; then gid_index=${f##*/}; break; fi
    done
    [ -n "$gid_index" ] && [ "${state#*ACTIVE}" != "$state" ] && break
    gid_index=
    read -r -t 0.05 <>/run/rxe-vm-sleep 2>/dev/null # sleep without an exec
done
[ -n "$gid_index" ] || fail "rxe0 port not ACTIVE with GID $want (state: $state)"
step "rxe0 ACTIVE, GID ::ffff:$VM_LOCAL_IP at index $gid_index"
wait "$neigh_pid" || fail "ip -batch neigh.batch"
step "$npeers neighbours ready"

envv=(
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 TERM=dumb
    EFA_AH_VM=1
    EFA_AH_VM_OUT="$VM_OUT"
    EFA_AH_VM_DEVICE=rxe0
    EFA_AH_VM_PORT=1
    EFA_AH_VM_GID_INDEX="$gid_index"
    EFA_AH_VM_LOCAL_IP="$VM_LOCAL_IP"
    EFA_AH_VM_PEER_NETS="$VM_PEER_NETS"
    EFA_AH_VM_PEER_HOSTS=250
    EFA_AH_VM_CLIENT_IPS="$(for ((c = 11; c <= 26; c++)); do printf '10.9.0.%d ' $c; done)"
)
[ -n "$VM_JAVA_HOME" ] && envv+=(JAVA_HOME="$VM_JAVA_HOME")
# HotSpot under TCG: a few JVM runs in a hundred died at compiled code the JIT had just patched
# (an nmethod made not entrant when tiered compilation moves a method from C1 to C2, while the
# emulator still ran the old translation). With C1 only there are no tier transitions, so
# almost no live code is patched; the tests here are I/O-bound and lose little speed.
# VM_ENV may override it (JAVA_TOOL_OPTIONS=...).
envv+=(JAVA_TOOL_OPTIONS="-XX:TieredStopAtLevel=1")
envv+=("${VM_ENV[@]}")

cd "$VM_CWD" || fail "cd $VM_CWD"
step "starting command"
# Equivalent of env -i, minus one exec.
(
    for v in $(compgen -e); do unset "$v" 2>/dev/null; done
    export "${envv[@]}"
    exec "${VM_CMD[@]}"
) </dev/null >"$out_port" 2>"$err_port"
rc=$?
step "command exited with $rc"
echo "$rc" >"$CTL/rc"
# Port output is handed to the host asynchronously; give the virtqueue a
# moment to drain before init powers the machine off under it.
read -r -t 0.2 <>/run/rxe-vm-sleep 2>/dev/null
exit 0
