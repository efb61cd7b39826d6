"""before_each hook of the `recorded` target: put the recorded agent's edits
into the case workspace, as the agent made them when the recording was taken
(the Edit tool calls of its transcript, kept as {file, old, new}).

Reads the hook payload on stdin (workspace_path, test_id, case_metadata) and
applies the edits case_metadata.recording names (relative to the eval file's
directory, the hook's working directory).
"""
import json
import os
import sys

payload = json.load(sys.stdin)
path = os.path.abspath(payload["case_metadata"]["recording"])
with open(path) as f:
    edits = json.load(f)
for edit in edits:
    target = os.path.join(payload["workspace_path"], edit["file"])
    with open(target) as f:
        text = f.read()
    if text.count(edit["old"]) != 1:
        sys.stderr.write(f"{edit['file']}: the recorded text to replace is not there once\n")
        sys.exit(1)
    with open(target, "w") as f:
        f.write(text.replace(edit["old"], edit["new"]))
print(f"replayed {len(edits)} edit(s) of {os.path.basename(path)} for {payload['test_id']}")
