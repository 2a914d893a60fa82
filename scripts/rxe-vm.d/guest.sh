#!/bin/bash
# Runs inside the VM, chrooted into the (read-only, 9p) host root, as root.
# Copied into the per-run control share by scripts/rxe-vm, so it is not part of
# the initramfs cache key. Its stdout/stderr go to guest.log in the control
# share; the command's own streams go to /dev/hvc0 and /dev/hvc1.
set -u
CTL=/run/rxe-vm
# shellcheck source=/dev/null
. "$CTL/config.sh"

t0=$(date +%s%N)
step() { echo "guest: +$(( ($(date +%s%N) - t0) / 1000000 ))ms $*"; }
fail() { echo "guest: FAILED: $*"; echo "$*" >"$CTL/setup-failed"; exit 125; }

# The hvc ports start in cooked mode; without this every \n would reach the
# caller as \r\n.
for t in /dev/hvc0 /dev/hvc1; do
    [ -c "$t" ] || fail "$t missing (virtio_console not loaded?)"
    stty -F "$t" raw -echo || fail "stty $t"
done

step "consoles ready"
hostname "$VM_HOSTNAME" 2>/dev/null
ip link set lo up

# /tmp: the host's /tmp stays visible (the caller may live there, and a
# host-built helper binary under /tmp must be runnable) but every write lands
# in guest memory. Falls back to a plain tmpfs if overlay is disabled.
ovl_n=0
overlay() { # overlay DIR: make DIR writable, changes vanish at power-off
    local d=$1
    ovl_n=$((ovl_n + 1))
    # Upper layers live in the /run tmpfs (guest RAM).
    local u=/run/rxe-vm-ovl/$ovl_n
    mkdir -p "$u/upper" "$u/work" || return 1
    mount -t overlay overlay -o "lowerdir=$d,upperdir=$u/upper,workdir=$u/work" "$d"
}
if [ "$VM_OVERLAY" = 1 ]; then
    overlay /tmp || fail "overlay on /tmp"
    step "/tmp overlay"
    for d in "${VM_RW_DIRS[@]}"; do
        [ -d "$d" ] || { echo "guest: skipping overlay on missing $d"; continue; }
        overlay "$d" || fail "overlay on $d"
    done
else
    mount -t tmpfs -o mode=1777 tmpfs /tmp || fail "tmpfs on /tmp"
fi
chmod 1777 /tmp
step "filesystems ready"

# Results share, mounted at the very same path it has on the host so that
# paths written into result files mean the same thing on both sides.
mkdir -p "$VM_OUT" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,rw out "$VM_OUT" ||
    fail "mount results share at $VM_OUT"

# Soft-RoCE needs an Ethernet netdev with carrier; a veth pair is the
# cheapest one. veth1 stays address-less so that nobody ever answers ARP for
# an invented peer: only static neighbour entries make a peer reachable.
ip link add veth0 type veth peer name veth1 || fail "veth"
ip addr add "$VM_LOCAL_IP/16" dev veth0 || fail "addr"
ip link set veth0 up && ip link set veth1 up || fail "link up"
rdma link add rxe0 type rxe netdev veth0 || fail "rdma link add"

# The default neighbour table (gc_thresh3=1024) would refuse or evict our
# thousands of permanent entries.
npeers=$((VM_PEER_NETS * 250))
# (procps/sysctl is not necessarily installed on the host, hence /proc.)
n=/proc/sys/net/ipv4/neigh/default
echo $((npeers + 8192)) >$n/gc_thresh1 &&
    echo $((npeers + 16384)) >$n/gc_thresh2 &&
    echo $((npeers + 32768)) >$n/gc_thresh3 || fail "neighbour table limits"

# Peer 10.9.X.Y gets MAC 02:00:0a:09:XX:YY (locally administered, unique,
# and readable back to the IP it stands for).
batch=/run/rxe-vm-neigh.batch
for ((x = 1; x <= VM_PEER_NETS; x++)); do
    for ((y = 1; y <= 250; y++)); do
        printf 'neigh replace 10.9.%d.%d lladdr 02:00:0a:09:%02x:%02x dev veth0 nud permanent\n' \
            "$x" "$y" "$x" "$y"
    done
done >"$batch"
ip -batch "$batch" || fail "neighbour batch"
step "network, rxe0 and $npeers neighbours ready"

# rxe fills its GID table asynchronously from netdev events; wait for the
# IPv4-mapped GID of our address and tell the command where it is.
want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${VM_LOCAL_IP//./ })
gid_index=
for ((i = 0; i < 100; i++)); do
    state=$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)
    for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do
        if [ "$(cat "$f" 2>/dev/null)" = "$want" ]; then gid_index=${f##*/}; break; fi
    done
    [ -n "$gid_index" ] && [ "${state#*ACTIVE}" != "$state" ] && break
    gid_index=
    sleep 0.05
done
[ -n "$gid_index" ] || fail "rxe0 port not ACTIVE with GID $want (state: $state)"
step "rxe0 ACTIVE, GID ::ffff:$VM_LOCAL_IP at index $gid_index"

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
)
[ -n "$VM_JAVA_HOME" ] && envv+=(JAVA_HOME="$VM_JAVA_HOME")
envv+=("${VM_ENV[@]}")

cd "$VM_CWD" || fail "cd $VM_CWD"
step "starting command"
env -i "${envv[@]}" "${VM_CMD[@]}" </dev/null >/dev/hvc0 2>/dev/hvc1
rc=$?
step "command exited with $rc"
echo "$rc" >"$CTL/rc"
# hvc output is handed to the host asynchronously; give the virtqueue a moment
# to drain before init powers the machine off under it.
sleep 0.2
exit 0
