# Shared by the relay's shell tests (tests/relay/*_test.sh, tests/cli/relay_live_test.sh):
# sourced, not run.
#
# relay_test_begin NAME: a scratch directory in $dir, and the arrays the test fills:
# pids (background processes: continued if stopped, killed and reaped at exit) and
# namespaces (deleted at exit). Also check() and its count in $failures.
relay_test_begin() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/artune-$1-XXXXXX")
  pids=()
  namespaces=()
  failures=0
  trap relay_test_cleanup EXIT
}

relay_test_cleanup() {
  for pid in "${pids[@]}"; do kill -CONT "$pid" 2>/dev/null; kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$dir"
}

# check DESCRIPTION COMMAND...: passes when COMMAND exits 0 (its output is dropped).
check() {
  local what=$1
  shift
  if "$@" >/dev/null; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}

# veth_pair_up TAG SUBNET: two hosts, network namespaces $a (TAGa) and $b (TAGb,
# deleted at exit), joined by a veth pair: SUBNET.1 in a, SUBNET.2 in b (SUBNET:
# three octets). Exits 1 when they cannot be made.
veth_pair_up() {
  local tag=$1 subnet=$2 ns
  a=${tag}a b=${tag}b
  ip netns add "$a" && namespaces+=("$a") && ip netns add "$b" && namespaces+=("$b") || exit 1
  ip link add "${tag}x" type veth peer name "${tag}y" || exit 1
  ip link set "${tag}x" netns "$a" && ip link set "${tag}y" netns "$b" || exit 1
  ip -n "$a" addr add "$subnet.1/24" dev "${tag}x" && ip -n "$b" addr add "$subnet.2/24" dev "${tag}y"
  for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
  ip -n "$a" link set "${tag}x" up && ip -n "$b" link set "${tag}y" up || exit 1
}
