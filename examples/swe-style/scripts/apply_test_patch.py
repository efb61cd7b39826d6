"""before_each hook: apply the case's test patch to the workspace repo.

Reads the hook payload on stdin (workspace_path, test_id, case_metadata) and
runs `git apply` with the patch named by case_metadata.test_patch (a path
relative to the eval file's directory, the hook's working directory).
"""
import json
import os
import subprocess
import sys

payload = json.load(sys.stdin)
patch = os.path.abspath(payload["case_metadata"]["test_patch"])
repo = os.path.join(payload["workspace_path"], "repo")
result = subprocess.run(["git", "apply", patch], cwd=repo, capture_output=True, text=True)
if result.returncode != 0:
    sys.stderr.write(f"cannot apply {patch}: {result.stderr}")
    sys.exit(1)
print(f"applied {os.path.basename(patch)} to {payload['test_id']}")
