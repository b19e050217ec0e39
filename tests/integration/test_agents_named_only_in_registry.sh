#!/usr/bin/env bash
# test_agents_named_only_in_registry.sh - each agent CLI taskq knows is
# written in its own file and the registry's list only (issue 18): adding
# a fifth is one file under src/agent, one name in registry.c, data and
# tests (src/agent/registry.h says so), because no other code names one.
#   - no C file of src/ has an agent's name as a string of its own
#     ("codex") but the agent's file src/agent/NAME.c, so no code compares a
#     name to pick what an agent needs (profile.c's DEFAULT_AGENT, a
#     profile's name, excepted); help text that mentions one inside a
#     sentence is not such a string;
#   - no C file of src/ has an identifier holding an agent's name
#     (tq_result_codex, cap_gemini, CODEX_HOME) but NAME.c and registry.c:
#     what is an agent's lives in its file;
#   - no .c file of src/agent writes an agent's name at all, comments and
#     strings included, but NAME.c and registry.c: the generic code
#     (workspace, run, config helpers, result framer, profiles, scrub)
#     names no agent;
#   - the names looked for are registry.c's list, each with its file that
#     defines its entry.
. "$(dirname "$0")/lib.sh"

cd "$TASKQ_SRCDIR" || exit 1

# The agents: registry.c's AGENTS list must say the same (checked last).
NAMES=(claude gemini codex opencode)

# Each C file of src/ as "FILE:LINE:TEXT" lines, in one of three views:
# code (comments blanked), bare (comments and string and character literals
# blanked), all (as written).
view() {
	python3 - "$1" <<'EOF'
import os, sys
mode = sys.argv[1]
for root, _, files in sorted(os.walk('src')):
    for f in sorted(files):
        if not f.endswith(('.c', '.h')):
            continue
        path = os.path.join(root, f)
        text = open(path, encoding='utf-8', errors='replace').read()
        out, i, n = [], 0, len(text)
        while i < n and mode != 'all':
            c = text[i]
            if text.startswith('/*', i):
                j = text.find('*/', i + 2)
                j = n if j < 0 else j + 2
                out.append(''.join(ch if ch == '\n' else ' ' for ch in text[i:j]))
                i = j
            elif text.startswith('//', i):
                j = text.find('\n', i)
                j = n if j < 0 else j
                out.append(' ' * (j - i))
                i = j
            elif c in '"\'':
                j = i + 1
                while j < n and text[j] != c and text[j] != '\n':
                    j += 2 if text[j] == '\\' else 1
                j = min(j + 1, n)
                out.append(text[i:j] if mode == 'code' else c + ' ' * (j - i - 2) + c)
                i = j
            else:
                out.append(c)
                i += 1
        if mode == 'all':
            out = [text]
        for k, line in enumerate(''.join(out).split('\n'), 1):
            print(f'{path}:{k}:{line}')
EOF
}

# Lines of a view that name agent NAME, other than in the files allowed.
# $1 view output, $2 extended regex with NAME for the name, $3.. allowed
# files (NAME replaced).
named_outside() {
	local lines=$1 pattern=$2 name found f
	shift 2
	for name in "${NAMES[@]}"; do
		found=$(grep -iE -- "^[^:]+:[0-9]+:.*${pattern//NAME/$name}" <<<"$lines" || true)
		for f in "$@"; do
			found=$(grep -v "^${f//NAME/$name}:" <<<"$found" || true)
		done
		[ -z "$found" ] || printf '%s\n' "$found"
	done
}

CODE=$(view code)
BARE=$(view bare)
ALL=$(view all)

check "an agent's name is a string of its own only in its file"
found=$(named_outside "$CODE" '(^|[^\\])"NAME"' src/agent/NAME.c |
	grep -v '^src/agent/profile.c:[0-9]*:#define DEFAULT_AGENT "claude"$' || true)
[ -z "$found" ] || fail "an agent CLI named as a string outside its file (ask agent/registry.h):
$found"

check "an identifier holding an agent's name only in its file and registry.c"
found=$(named_outside "$BARE" '[A-Za-z0-9_]*NAME' src/agent/NAME.c src/agent/registry.c)
[ -z "$found" ] || fail "code for one agent outside its file src/agent/NAME.c:
$found"

check "the generic files of src/agent name no agent, comments included"
found=$(named_outside "$(grep -E '^src/agent/[^/:]+\.c:' <<<"$ALL")" '(^|[^A-Za-z0-9_])NAME' \
		src/agent/NAME.c src/agent/registry.c |
	grep -v '^src/agent/profile.c:[0-9]*:#define DEFAULT_AGENT "claude"$' || true)
[ -z "$found" ] || fail "a generic file of src/agent names an agent (say it of every agent, or
move it to the agent's file):
$found"

check "the names looked for are the registry's, each with its file"
list=$(grep -E '^#define AGENTS\(X\)' src/agent/registry.c |
	sed -E 's/^#define AGENTS\(X\) //; s/X\(([a-z0-9_]+)\)/\1/g')
[ "$list" = "${NAMES[*]}" ] ||
	fail "registry.c's AGENTS ($list) and this test's NAMES (${NAMES[*]}) differ:
add the new agent to NAMES"
for name in "${NAMES[@]}"; do
	[ -f "src/agent/$name.c" ] || fail "src/agent/$name.c is missing"
	grep -q "^const struct tq_agent_def tq_agent_$name = {" "src/agent/$name.c" ||
		fail "src/agent/$name.c does not define tq_agent_$name"
	grep -qE "^[[:space:]]*\.name = \"$name\",$" "src/agent/$name.c" ||
		fail "src/agent/$name.c's entry is not named \"$name\""
done
# the views see what they must: a name in a comment is in "all" only, an
# identifier in "bare", a string in "code"
grep -qE '^src/agent/codex.c:[0-9]+:.*"codex"' <<<"$CODE" || fail "the code view lost a string"
grep -qE '^src/agent/codex.c:[0-9]+:.*tq_agent_codex' <<<"$BARE" ||
	fail "the bare view lost an identifier"
if grep -qE '^src/agent/codex.c:[0-9]+:.*"codex"' <<<"$BARE"; then
	fail "the bare view kept a string"
fi
grep -qE '^src/agent/codex.c:[0-9]+: \* codex.c - ' <<<"$ALL" || fail "the all view lost a comment"
if grep -qE '^src/agent/codex.c:[0-9]+: \* codex.c - ' <<<"$CODE"; then
	fail "the code view kept a comment"
fi
