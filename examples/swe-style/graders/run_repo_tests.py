"""code-grader: run the repository's tests in the case workspace.

Reads AgentV's code-grader payload on stdin, runs `python3 -m unittest` in
<workspace>/repo, and reports one check per test named in the case's
metadata.fail_to_pass_tests plus one for the whole suite. Scores the fraction
of checks that passed.
"""
import json
import os
import subprocess
import sys

payload = json.load(sys.stdin)
repo = os.path.join(payload["workspace_path"], "repo")
wanted = (payload.get("metadata") or {}).get("fail_to_pass_tests", [])


def run(*names):
    cmd = [sys.executable, "-m", "unittest", *names]
    if not names:
        cmd += ["discover", "-s", "tests", "-t", "."]
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=120)
    return done.returncode == 0, done.stderr.strip().splitlines()[-1:] or [""]


checks = []
for name in wanted:
    ok, tail = run(name)
    checks.append({"text": f"{name} passes", "passed": ok, "evidence": tail[0]})
ok, tail = run()
checks.append({"text": "the whole test suite passes", "passed": ok, "evidence": tail[0]})
score = sum(c["passed"] for c in checks) / len(checks)
print(json.dumps({"score": score, "assertions": checks}))
