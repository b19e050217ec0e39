#!/usr/bin/env bash
# install-claude.sh - install the pinned Claude Code CLI for the agent tests
# and print the path of `claude`: `install-agent.sh claude`, kept under its
# old name (tests/agents/install-agent.sh says everything).
#
#   tests/agents/install-claude.sh            install if needed, print the path
#   tests/agents/install-claude.sh --check    print the path if installed, never install
exec "$(dirname -- "${BASH_SOURCE[0]}")/install-agent.sh" claude "$@"
