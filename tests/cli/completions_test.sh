#!/usr/bin/env bash
# The committed completion scripts must be exactly what the CLI generates, must parse
# in their shells, and must complete real subcommands and options.
# Usage: completions_test.sh ARTUNE_BINARY COMPLETIONS_DIR
set -u
artune=$1
dir=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

for pair in "bash:artune.bash" "zsh:_artune" "fish:artune.fish"; do
  shell=${pair%%:*}
  file=$dir/${pair#*:}
  if ! diff -u "$file" <("$artune" completions "$shell") >/tmp/artune-completions-diff.$$ 2>&1; then
    fail "$file is out of date with the CLI; regenerate it: ninja update-completions"
    head -20 /tmp/artune-completions-diff.$$
  fi
  rm -f /tmp/artune-completions-diff.$$
done

# Syntax in each shell (zsh and fish are installed by scripts/setup).
bash -n "$dir/artune.bash" || fail "bash cannot parse artune.bash"
if command -v zsh >/dev/null; then zsh -n "$dir/_artune" || fail "zsh cannot parse _artune"
else echo "note: zsh not installed, its syntax check skipped"; fi
if command -v fish >/dev/null; then fish --no-execute "$dir/artune.fish" || fail "fish cannot parse artune.fish"
else echo "note: fish not installed, its syntax check skipped"; fi

# bash: drive the completion function the way readline does.
complete_bash() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _artune; printf "%s\n" "${COMPREPLY[@]}"' _ "$dir/artune.bash" "$@"
}
# Every top-level subcommand of the real CLI must be offered after "artune ".
subcommands=$("$artune" --help | awk '/^Subcommands:/{f=1; next} f && !NF {exit} f {print $1}')
[ -n "$subcommands" ] || fail "could not read subcommands from artune --help"
offered=$(complete_bash artune "")
for sub in $subcommands; do
  grep -qx "$sub" <<<"$offered" || fail "bash completion does not offer subcommand '$sub'"
done
grep -qx -- "--db" <<<"$(complete_bash artune --d)" || fail "bash completion does not offer --db"
grep -qx "zsh" <<<"$(complete_bash artune completions "")" && fail "positional values should not be offered as words"

# fish: ask fish itself what it would complete.
if command -v fish >/dev/null; then
  got=$(fish -c "source $dir/artune.fish; complete -C 'artune '" | awk '{print $1}')
  for sub in $subcommands; do
    grep -qx "$sub" <<<"$got" || fail "fish completion does not offer subcommand '$sub'"
  done
fi

if ((failures > 0)); then echo "$failures completion check(s) failed"; exit 1; fi
echo "completions: all checks passed"
