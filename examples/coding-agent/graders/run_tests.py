"""code-grader: run one test module of the repository in the case workspace.

Reads AgentV's code-grader payload on stdin and runs
`python3 -m unittest <module>` in the workspace; one check per test result.
"""
import json
import subprocess
import sys

payload = json.load(sys.stdin)
module = sys.argv[1]
done = subprocess.run(
    [sys.executable, "-m", "unittest", "-v", module],
    cwd=payload["workspace_path"],
    capture_output=True,
    text=True,
    timeout=120,
)
checks = []
for line in done.stderr.splitlines():
    if " ... " in line:
        name, _, verdict = line.partition(" ... ")
        checks.append({"text": name.strip(), "passed": verdict.strip() == "ok"})
if not checks:
    checks.append({"text": f"{module} runs", "passed": False, "evidence": done.stderr[-400:]})
passed = sum(c["passed"] for c in checks)
print(json.dumps({"score": passed / len(checks), "assertions": checks}))
