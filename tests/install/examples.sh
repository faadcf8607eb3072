#!/usr/bin/env bash
# Installs the transport from a build tree into a temporary prefix, checks the
# layout (SONAME, version macro, public headers that stand alone and carry no
# generated proto code), builds examples/ out of tree against the prefix both
# ways — CMake's find_package (shared, and the echo pair static) and pkg-config —
# and runs the echo and tensor-pull pairs over loopback.
# Usage: examples.sh BUILD_DIR [SOURCE_DIR]
# Exit status 0 when every step passed; the first failure says which step.
set -euo pipefail

build_dir=$(cd "${1:?usage: examples.sh BUILD_DIR [SOURCE_DIR]}" && pwd)
root=$(cd "${2:-$(dirname "$0")/../..}" && pwd)
work=$(mktemp -d /tmp/artune-install.XXXXXX)
prefix=$work/prefix
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
# The consumer's environment: no compiler launcher, flags or config of the build.
unset CMAKE_PREFIX_PATH CXXFLAGS LDFLAGS PKG_CONFIG_PATH ARTUNE_CONFIG ARTUNE_TOKEN_FILE
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config
mkdir -p "$HOME"

step "install the transport into a temporary prefix"
cmake --install "$build_dir" --component transport --prefix "$prefix" >/dev/null
archive=$(find "$prefix" -name 'libartune_transport.a' 2>/dev/null | head -1 || true)
[[ -n $archive ]] || fail "the install laid out no libartune_transport.a under $prefix"
libdir=$(dirname "$archive")
shared=$(find "$libdir" -name 'libartune_transport.so.*.*.*' | head -1)
[[ -n $shared ]] || fail "no versioned libartune_transport.so under $libdir"
soname=$(objdump -p "$shared" | awk '$1 == "SONAME" {print $2}')
[[ $soname == libartune_transport.so.* && -e $libdir/$soname && -e $libdir/libartune_transport.so ]] ||
  fail "SONAME '$soname' of $shared has no link beside it"
echo "$(basename "$shared"), SONAME $soname"

step "public headers: version macro, no generated code, each header on its own"
version=$(sed -nE 's/^project\(artune VERSION ([0-9.]+).*/\1/p' "$root/CMakeLists.txt")
grep -q "ARTUNE_TRANSPORT_VERSION_STRING \"$version\"" "$prefix/include/artune/transport/version.h" ||
  fail "version.h does not say $version"
if find "$prefix/include" -name '*.pb.h' | grep -q . ||
  grep -rlE '\.pb\.h|grpcpp|google/protobuf' "$prefix/include"; then
  fail "generated control-plane or gRPC headers reach the public headers"
fi
grep -rn 'AddSlice\|KeepAlive\|struct Owner {' "$prefix/include" && fail "engine-only members are public"
for header in $(cd "$prefix/include" && find artune -name '*.h' | sort); do
  echo "#include <$header>" | c++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only \
    -I"$prefix/include" -x c++ - || fail "$header does not compile on its own"
done

step "build the examples with find_package and with pkg-config"
for example in echo tensor_pull; do
  cmake -S "$root/examples/$example" -B "$work/cmake-$example" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" >/dev/null || fail "configuring $example with find_package"
  cmake --build "$work/cmake-$example" >/dev/null || fail "building $example with find_package"
  PKG_CONFIG_PATH=$libdir/pkgconfig make -s -C "$root/examples/$example" OUT="$work/pc-$example" \
    CXXFLAGS="-O1 -Wall -Wextra -Werror" >/dev/null || fail "building $example with pkg-config"
done
cmake -S "$root/examples/echo" -B "$work/cmake-static-echo" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DARTUNE_EXAMPLES_STATIC=ON >/dev/null ||
  fail "configuring echo with find_package(... COMPONENTS static)"
cmake --build "$work/cmake-static-echo" >/dev/null || fail "building echo statically"
# ldd's whole output is read before matching: under pipefail, `ldd | grep -q`
# fails at random when grep exits first and ldd dies of SIGPIPE.
shared_deps=$(ldd "$work/cmake-echo/echo_client")
grep -q "$libdir/$soname" <<<"$shared_deps" ||
  fail "echo_client (find_package) does not load $libdir/$soname: $shared_deps"
static_deps=$(ldd "$work/cmake-static-echo/echo_client")
grep -q libartune_transport <<<"$static_deps" &&
  fail "the static echo_client still loads the shared library: $static_deps"

# Runs SERVER in the background, waits (at most 20 s) for its "listening on"
# line, runs CLIENT ADDRESS ARGS..., stops the server and checks both outputs.
run_pair() {  # name server client expected-client-line client-args...
  local name=$1 server=$2 client=$3 expected=$4
  shift 4
  : >"$work/$name.server"  # there before the server writes to it, for the reads below
  "$server" >>"$work/$name.server" 2>&1 &
  server_pid=$!
  local address=
  for _ in $(seq 200); do
    address=$(sed -nE 's/.*listening on ([^ ]+).*/\1/p' "$work/$name.server")
    [[ -n $address ]] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $address ]] || { cat "$work/$name.server"; fail "$name: the server did not start"; }
  timeout 60 "$client" "$address" "$@" >"$work/$name.client" 2>&1 ||
    { cat "$work/$name.client"; fail "$name: the client failed"; }
  kill -TERM "$server_pid"
  local status=0
  wait "$server_pid" || status=$?
  [[ $status -eq 0 ]] || { cat "$work/$name.server"; fail "$name: the server exited $status"; }
  server_pid=
  grep -qx "$expected" "$work/$name.client" ||
    { cat "$work/$name.client"; fail "$name: no line '$expected'"; }
  grep -qE '^served [1-9][0-9]* calls$' "$work/$name.server" ||
    { cat "$work/$name.server"; fail "$name: the server did not count its calls"; }
  echo "$name: $(tail -1 "$work/$name.client"); server $(tail -1 "$work/$name.server")"
}

step "run the pairs over loopback"
export LD_LIBRARY_PATH=$libdir  # the pkg-config builds carry no run path
for way in cmake pc; do
  run_pair "echo-$way" "$work/$way-echo/echo_server" "$work/$way-echo/echo_client" \
    "echo: tensors" hello RDMA tensors
  grep -q "^artune transport $version: listening on" "$work/echo-$way.server" ||
    fail "echo_server ($way) does not print version.h's $version"
  run_pair "tensor-pull-$way" "$work/$way-tensor_pull/tensor_server" \
    "$work/$way-tensor_pull/tensor_client" "pulled 3 tensors"
done
unset LD_LIBRARY_PATH
run_pair echo-static "$work/cmake-static-echo/echo_server" "$work/cmake-static-echo/echo_client" \
  "echo: hello" hello
echo "install and examples: ok"
