# shellcheck shell=bash
# Sourced by cluster_mpi_test.sh and bench/cluster-run: N MPI ranks on this
# machine as if on N hosts. Each rank gets its own network namespace (a veth pair
# to a bridge, 10.199.0.(i+1)) and its own UTS namespace (hostname nodeI).
#
# Open MPI's byte transfer between the ranks stays on shared memory (--mca btl
# self,vader), which namespaces do not separate; but a rank reaches mpirun's PMIx
# server over TCP, on loopback by default, which a rank's namespace does not
# have: so the bridge is in this namespace with 10.199.0.254, and PMIx listens
# there (PMIX_MCA_ptl_tcp_remote_connections, PMIX_MCA_ptl_tcp_if_include).
#
#   netns_up TAG N DIR   namespaces TAGn0..TAGn(N-1), bridge TAGbr, wrapper DIR/rank
#   netns_down           removes what netns_up made (call it from an EXIT trap)
#   run_ranks SECONDS ARGS...   mpirun -np N of ARGS through the wrapper, bounded
#   netns_throttle TAG A B RATE  the path between ranks A and B at RATE (tc htb)
#   cluster_test_begin ARTUNE TAG [TOOL...]  a cluster test's common start (below)
#   kill_rank_once_linked DB RANK  RANK killed once DB holds 2 links (below)
# Needs root. TAG: at most 9 characters (interface names: 15).

netns_tag="" netns_count=0 netns_dir=""

netns_up() {
  netns_tag=$1 netns_count=$2 netns_dir=$3
  ip link add "${netns_tag}br" type bridge || return 1
  ip addr add 10.199.0.254/24 dev "${netns_tag}br" && ip link set "${netns_tag}br" up || return 1
  local i ns
  for ((i = 0; i < netns_count; i++)); do
    ns="${netns_tag}n$i"
    ip netns add "$ns" || return 1
    ip link add "${netns_tag}v$i" type veth peer name "${netns_tag}p$i" || return 1
    ip link set "${netns_tag}v$i" netns "$ns" || return 1
    ip link set "${netns_tag}p$i" master "${netns_tag}br" up || return 1
    ip -n "$ns" addr add "10.199.0.$((i + 1))/24" dev "${netns_tag}v$i" || return 1
    ip -n "$ns" link set "${netns_tag}v$i" up && ip -n "$ns" link set lo up || return 1
  done
  # mpirun starts this for every rank: into the rank's namespaces, hostname nodeN,
  # its pid in DIR/rankN.pid (the exec chain keeps it), then the command.
  # FAULT_RANK listens on an address it does not have, so it cannot serve.
  # In a sanitizer build LeakSanitizer is off for the ranks (ASan and UBSan stay
  # on): Open MPI leaks in MPI_Init and unloads its components at MPI_Finalize,
  # so their leaks cannot even be attributed, let alone suppressed.
  cat >"$netns_dir/rank" <<WRAPPER
#!/bin/sh
export ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0"
r=\$OMPI_COMM_WORLD_RANK
if [ "\$r" = "\${FAULT_RANK:-}" ]; then set -- "\$@" --listen 10.199.0.99; fi
echo \$\$ > "$netns_dir/rank\$r.pid"
exec nsenter --net=/run/netns/${netns_tag}n\$r unshare --uts sh -c 'hostname node\$0 && exec "\$@"' "\$r" "\$@"
WRAPPER
  chmod +x "$netns_dir/rank"
}

netns_down() {
  local i
  for ((i = 0; i < netns_count; i++)); do ip netns del "${netns_tag}n$i" 2>/dev/null; done
  [[ -z $netns_tag ]] || ip link del "${netns_tag}br" 2>/dev/null
  return 0
}

# The path between ranks A and B (10.199.0.(A+1), 10.199.0.(B+1)) throttled to RATE
# both ways: an htb class on each end's veth that a u32 filter sends only the other
# end's packets to, so that the bytes of that link are slow and its calls are not.
# Fails (status 1) where tc, htb or u32 are missing.
netns_throttle() {
  local tag=$1 a=$2 b=$3 rate=$4 rank peer ns dev
  for rank in "$a" "$b"; do
    peer=$((rank == a ? b : a))
    ns=(ip netns exec "${tag}n$rank") dev="${tag}v$rank"
    "${ns[@]}" tc qdisc add dev "$dev" root handle 1: htb default 10 &&
      "${ns[@]}" tc class add dev "$dev" parent 1: classid 1:10 htb rate 10gbit &&
      "${ns[@]}" tc class add dev "$dev" parent 1: classid 1:20 htb rate "$rate" &&
      "${ns[@]}" tc filter add dev "$dev" protocol ip parent 1: prio 1 u32 match ip dst \
        "10.199.0.$((peer + 1))/32" flowid 1:20 || return 1
  done
}

run_ranks() {
  local seconds=$1
  shift
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include="${netns_tag}br" \
    timeout "$seconds" mpirun --allow-run-as-root --oversubscribe -np "$netns_count" \
    --mca btl self,vader "$netns_dir/rank" "$@"
}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# What a cluster test under mpirun starts with: skips (exit 77) without root,
# mpirun, sqlite3, each TOOL, an ARTUNE built with MPI, or network namespaces.
# Then 4 ranks in namespaces TAG..., a scratch directory $dir (removed at exit
# unless KEEP is set) and fail() counting in $fails. The ranks' scratch
# directories go with the test's (TMPDIR), a killed run's too: its ranks may still
# be dying when a resumed run starts, and so are not stale yet.
cluster_test_begin() {
  local artune=$1 tag=$2 tool out
  shift 2
  [[ $(id -u) == 0 ]] || skip "needs root for network namespaces"
  command -v mpirun >/dev/null || skip "mpirun not found (apt-get install openmpi-bin)"
  for tool in sqlite3 "$@"; do command -v "$tool" >/dev/null || skip "$tool not found"; done
  # One rank is no cluster: an artune with MPI says so (exit 2); without MPI, exit 4.
  # (LeakSanitizer off: Open MPI's own leaks, see netns_up.)
  out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 30 \
    "$artune" --db /dev/null sweep --mpi 2>&1)
  [[ $out == *"at least 2 ranks"* ]] || skip "this artune has no MPI: $out"
  dir=$(mktemp -d)
  export TMPDIR="$dir"
  trap cluster_test_cleanup EXIT
  fails=0
  netns_up "$tag" 4 "$dir" || skip "cannot create network namespaces and a bridge"
}

cluster_test_cleanup() {
  netns_down
  [[ -n ${KEEP:-} ]] || rm -rf "$dir"
}

# Kills RANK (its pid from netns_up's wrapper) once DB holds at least 2 cluster
# links, that is once round 1 is stored; waits at most 60 s for that.
kill_rank_once_linked() {
  local db=$1 rank=$2 links
  for _ in $(seq 1 600); do
    links=$(sqlite3 "$db" "SELECT count(*) FROM cluster_links" 2>/dev/null || echo 0)
    [[ ${links:-0} -ge 2 ]] && break
    sleep 0.1
  done
  kill -9 "$(cat "$netns_dir/rank$rank.pid")"
}
