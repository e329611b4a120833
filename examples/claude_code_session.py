"""What Claude Code's HTTP hooks see from loopwarden, without Claude Code.

Claude Code itself needs no code: run ``loopwarden hooks`` and paste its output into
``.claude/settings.json``. This script POSTs the hook inputs a session that keeps
re-running a failing test would send, and prints loopwarden's answers.

    loopwarden dev                      # another terminal (worker API on port 6066)
    python examples/claude_code_session.py [http://127.0.0.1:6066/hooks/claude-code]
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
import uuid

URL = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:6066/hooks/claude-code"
TOKEN = os.environ.get("LOOPWARDEN_API__TOKEN")
SESSION = f"claude-code-example-{uuid.uuid4().hex[:6]}"


def post(hook: dict) -> dict:
    headers = {"Content-Type": "application/json"}
    if TOKEN:
        headers["Authorization"] = f"Bearer {TOKEN}"
    request = urllib.request.Request(URL, json.dumps(hook).encode(), headers, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"{}")


def bash(n: int, event: str = "PostToolUse") -> dict:
    hook = {
        "session_id": SESSION,
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": "pytest tests/test_flaky.py -x"},
        "tool_use_id": f"toolu_{n:02d}",
    }
    if event == "PostToolUse":
        hook["tool_response"] = {"stdout": "1 failed", "stderr": "", "interrupted": False}
    return hook


for n in range(16):
    decision = post(bash(n, "PreToolUse")).get("hookSpecificOutput", {})
    if decision.get("permissionDecision") == "deny":
        print(f"call {n}: denied — {decision['permissionDecisionReason']}")
        break
    context = post(bash(n)).get("hookSpecificOutput", {}).get("additionalContext")
    print(f"call {n}: " + (f"context added:\n{context}" if context else "nothing to add"))
    time.sleep(1.0)  # Claude thinking before its next call
post({"session_id": SESSION, "hook_event_name": "Stop", "stop_hook_active": False})
