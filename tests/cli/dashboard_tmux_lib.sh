# Helpers for the tmux-driven dashboard tests (sourced, not run). Each test runs
# its own tmux server (-L) with a fixed-size window, so nothing depends on the
# caller's terminal; every wait polls capture-pane against a deadline.
#
# A test calls `dashboard_test_begin NAME` first: it skips (exit 77) without
# tmux, sets WORK (a scratch directory), db (a store in it, not yet made),
# TMUX_SOCKET and `pids` (processes the test starts in the background), and at
# exit stops the tmux server and those processes and removes WORK.

dashboard_test_begin() {
  command -v tmux >/dev/null || { echo "SKIP: tmux not installed (scripts/setup)"; exit 77; }
  WORK=$(mktemp -d)
  db=$WORK/store.db
  TMUX_SOCKET="artune-dash-$1-$$"
  pids=()
  trap dashboard_test_end EXIT
}

dashboard_test_end() {
  tmux -L "$TMUX_SOCKET" kill-server 2>/dev/null || true
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}

tmux_() { tmux -L "$TMUX_SOCKET" -f /dev/null "$@"; }

fail() {
  echo "FAIL: $*" >&2
  echo "----- screen -----" >&2
  tmux_ capture-pane -p -t dash >&2 2>/dev/null || true
  echo "------------------" >&2
  exit 1
}

screen() { tmux_ capture-pane -p -t dash; }

# wait_for TEXT [SECONDS]: polls the pane until it shows TEXT (fixed string).
wait_for() {
  local text=$1 deadline=$((SECONDS + ${2:-30}))
  while ((SECONDS < deadline)); do
    if screen | grep -qF -- "$text"; then return 0; fi
    sleep 0.1
  done
  fail "'$text' did not appear within ${2:-30} s"
}

# wait_gone TEXT [SECONDS]: polls until the pane no longer shows TEXT.
wait_gone() {
  local text=$1 deadline=$((SECONDS + ${2:-30}))
  while ((SECONDS < deadline)); do
    if ! screen | grep -qF -- "$text"; then return 0; fi
    sleep 0.1
  done
  fail "'$text' was still on screen after ${2:-30} s"
}

# wait_file PATH [SECONDS]: polls until PATH exists and is not empty.
wait_file() {
  local path=$1 deadline=$((SECONDS + ${2:-30}))
  while ((SECONDS < deadline)); do
    if [[ -s $path ]]; then return 0; fi
    sleep 0.1
  done
  fail "$path was not written within ${2:-30} s"
}

# start_dashboard WIDTH HEIGHT ARGS...: runs `artune dashboard ARGS` in a new
# session "dash" of WIDTH x HEIGHT. A wrapper shell records the terminal modes
# before and after, and the exit status, so tests can check the terminal was
# restored. The pane stays open after the exit to be inspected.
start_dashboard() {
  local width=$1 height=$2
  shift 2
  local quoted
  quoted=$(printf '%q ' "$@")
  cat >"$WORK/run.sh" <<SCRIPT
stty -g >"$WORK/stty.before"
echo "shell before the dashboard"
$quoted
rc=\$?
stty -g >"$WORK/stty.after"
echo "\$rc" >"$WORK/exit"
echo "dashboard exited with \$rc"
# Keep the pane (and its screen) until the test kills the tmux server.
exec cat >/dev/null
SCRIPT
  rm -f "$WORK/exit" "$WORK/stty.before" "$WORK/stty.after"
  # A session of its own keeps the server up when a test kills "dash" and starts
  # another: a new client racing the exit of the emptied server fails with
  # "server exited unexpectedly" (seen once in CI).
  tmux_ has-session -t hold 2>/dev/null || tmux_ new-session -d -s hold -x 80 -y 24
  tmux_ new-session -d -s dash -x "$width" -y "$height" \
    "env ${DASH_ENV:-} bash $WORK/run.sh"
}

# start_store_dashboard ARGS...: `$artune --db $db dashboard ARGS` at 90 x 28, its
# log in WORK.
start_store_dashboard() {
  start_dashboard 90 28 "$artune" --db "$db" dashboard --log "$WORK/log" "$@"
}

# expect_exit CODE: waits for the dashboard to exit and checks its status, that
# the terminal modes are as before and that the screen is the shell's again.
expect_exit() {
  wait_file "$WORK/exit" 30
  local rc
  rc=$(cat "$WORK/exit")
  [[ $rc == "$1" ]] || fail "exit status $rc, expected $1 (log: $(tail -5 "$WORK/log" 2>/dev/null))"
  cmp -s "$WORK/stty.before" "$WORK/stty.after" ||
    fail "terminal modes not restored: $(cat "$WORK/stty.before") vs $(cat "$WORK/stty.after")"
  wait_for "dashboard exited with $1" 10
  # The alternate screen is gone: the shell's earlier line is visible again
  # (skipped with a second argument after a resize, which reflows that screen).
  if [[ -z ${2:-} ]]; then wait_for "shell before the dashboard" 10; fi
}

# expect_newest_first NEWER OLDER WHAT: the row of id NEWER (a line starting with
# the id and a date) stands above the row of id OLDER.
expect_newest_first() {
  local newer=$1 older=$2 what=$3 rows top bottom
  rows=$(screen | grep -nE "^ +($newer|$older) +[0-9-]+ " | cut -d: -f1 | tr '\n' ' ')
  read -r top bottom <<<"$rows"
  [[ -n $bottom && $top -lt $bottom ]] || fail "$what are not listed newest first ($rows)"
  screen | sed -n "${top}p" | grep -qE "^ +$newer " || fail "the newest of the $what is not first"
}

# quit_dashboard WHAT: q, the dashboard exits 0 as expect_exit checks, and the
# test passes.
quit_dashboard() {
  tmux_ send-keys -t dash q
  expect_exit 0
  echo "PASS dashboard $1"
}

# The dashboard process (the wrapper shell's child).
dashboard_pid() {
  local shell_pid
  shell_pid=$(tmux_ display-message -p -t dash '#{pane_pid}')
  pgrep -P "$shell_pid" | head -1 || true
}
