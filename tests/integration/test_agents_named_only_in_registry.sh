#!/usr/bin/env bash
# test_agents_named_only_in_registry.sh - the agent CLIs taskq knows are
# listed once, in src/agent/registry.c (issue 18): no other C file names
# claude, gemini, codex or opencode as a string of its own ("codex", on a
# line that is not a comment), so no code compares a name to pick what an
# agent needs; it asks the registry (tq_registry_find). Help text that
# mentions them inside a sentence, or a name quoted within a string
# (\"claude\"), is not such a string.
. "$(dirname "$0")/lib.sh"

cd "$TASKQ_SRCDIR" || exit 1

names='(^|[^\\])"(claude|gemini|codex|opencode)"'

# Files allowed to name one, and why.
ALLOWED=(
	# the table itself
	src/agent/registry.c
	# DEFAULT_AGENT: the profile `taskq ask` uses without --agent, a
	# profile's name (profiles.json), not a choice of code
	src/agent/profile.c
)

check "agent CLIs are named in src/agent/registry.c only"
# code only: a line's comment (from /* or //, or a line that starts with
# a comment's *) is cut before the names are looked for
found=$(grep -rnE --include='*.c' --include='*.h' -- "$names" src |
	grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/\*|\*|//)' |
	sed -E 's#(/\*|//).*$##' |
	grep -E -- "$names" || true)
for f in "${ALLOWED[@]}"; do
	found=$(grep -v "^$f:" <<<"$found" || true)
done
[ -z "$found" ] || fail "an agent CLI named outside the registry (use agent/registry.h):
$found"

check "profile.c names only its default profile"
found=$(grep -nE -- "$names" src/agent/profile.c | grep -v 'define DEFAULT_AGENT' || true)
[ -z "$found" ] || fail "src/agent/profile.c names an agent beyond DEFAULT_AGENT:
$found"

check "the check finds what it looks for"
grep -qE "$names" src/agent/registry.c || fail "the pattern finds nothing in registry.c"
[ "$(grep -cE "$names" src/agent/registry.c)" -eq 4 ] ||
	fail "registry.c should name each of the 4 agents once"
