#!/usr/bin/env python3
"""Records promptfoo 0.121.20's results on the configs in tests/data/promptfoo-conformance/.

Each directory holds a `promptfooconfig.yaml` (with its files) that runs
offline on the `echo` provider. promptfoo runs it unchanged, and what it
scored — each row's vars, prompt, provider, pass, score, and each
assertion's type, pass and score — is written beside it as
`promptfoo.json`, so that `tests/integration/dialects.rs` can run evalhost
on the same config and compare row by row without Node.

    scripts/conformance-promptfoo.py [NAME...]   # needs node and npm (offline registry ok)

With names, only those directories are recorded again.

promptfoo is installed from npm into target/promptfoo on first use.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "data" / "promptfoo-conformance"
# PROMPTFOO_VERSION records with another version (0.123.1 needs Node >= 22
# on PATH), installed into target/promptfoo-<version> (or PROMPTFOO_DIR).
VERSION = os.environ.get("PROMPTFOO_VERSION", "0.121.20")
PROMPTFOO = pathlib.Path(os.environ.get("PROMPTFOO_DIR") or (
    ROOT / "target" / ("promptfoo" if VERSION == "0.121.20" else f"promptfoo-{VERSION}")))
# promptfoo's meteor loads natural with `import()`, which sees none of
# natural's CommonJS exports: stock 0.121.20 errors on every meteor
# assertion. This hook exposes them, so the recording holds what promptfoo's
# meteor code computes (it touches nothing but the `natural` import).
NATURAL_HOOK = ROOT / "plugins" / "promptfoo" / "src" / "testdata" / "natural-named-exports.mjs"


def last_text(body):
    """The last message's content: a string as written; Anthropic's list of
    blocks as its text blocks joined."""
    last = (body.get("messages") or [{}])[-1].get("content")
    if isinstance(last, list):
        return "".join(b.get("text", "") for b in last if isinstance(b, dict))
    return last


def openai_server(replies, anthropic=None, requests=None, responses=None):
    """A loopback OpenAI-compatible server answering each chat completion
    with the first reply whose `match` equals the last message's content,
    or whose `contains` is in it, and whose `model` (if any) is the one
    asked; each embedding request with the `vector` of the first reply
    whose `embed` is in the input (the same rules as the Rust conformance
    test's server)."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            if requests is not None:
                requests.append({"path": self.path, "body": body})
            if self.path.rstrip("/").endswith("/v1/responses"):
                # OpenAI's Responses API: the reply whose `contains` is in
                # the input's text (a string, or the last item's content).
                inp = body.get("input")
                text = inp if isinstance(inp, str) else json.dumps(inp)
                reply = next((r for r in responses or []
                              if ("model" not in r or r["model"] == body.get("model"))
                              and "contains" in r and r["contains"] in text), None)
                status, payload = ((200, reply["body"]) if reply else
                                   (404, {"error": {"message": f"no reply for {text!r}"}}))
            elif self.path.rstrip("/").endswith("/v1/messages"):
                # Anthropic's Messages API: the reply whose `match` is the
                # last message's text, or whose `contains` is in it.
                last = last_text(body)
                reply = next((r for r in anthropic or []
                              if ("model" not in r or r["model"] == body.get("model"))
                              and (("match" in r and r["match"] == last)
                                   or ("contains" in r and isinstance(last, str) and r["contains"] in last))), None)
                status, payload = ((200, reply["body"]) if reply else
                                   (404, {"type": "error", "error": {"type": "not_found_error", "message": f"no reply for {last!r}"}}))
            elif "input" in body and "messages" not in body:
                # An embedding request: the vector of the first reply whose
                # `embed` is the input text (or is in it).
                text = body["input"] if isinstance(body["input"], str) else json.dumps(body["input"])
                reply = next((r for r in replies if "embed" in r and r["embed"] in text
                              and ("model" not in r or r["model"] == body.get("model"))), None)
                status, payload = ((200, {"object": "list", "model": body.get("model"),
                                          "data": [{"object": "embedding", "index": 0, "embedding": reply["vector"]}],
                                          "usage": {"prompt_tokens": 3, "total_tokens": 3}})
                                   if reply else (404, {"error": {"message": f"no embedding for {text!r}"}}))
            elif "/api/generate" in self.path or "/api/chat" in self.path or self.path.endswith(":generateContent"):
                # Ollama's and Google's own APIs: the OpenAI reply's text,
                # found by the same rule, in their shape.
                if "/api/generate" in self.path:
                    last = body.get("prompt")
                elif "/api/chat" in self.path:
                    last = (body.get("messages") or [{}])[-1].get("content")
                else:
                    last = "".join(p.get("text", "") for p in ((body.get("contents") or [{}])[-1].get("parts") or []))
                reply = next((r for r in replies
                              if ("match" in r and r["match"] == last)
                              or ("contains" in r and isinstance(last, str) and r["contains"] in last)), None)
                if not reply:
                    status, payload = 404, {"error": f"no reply for {last!r}"}
                else:
                    text = reply["body"]["choices"][0]["message"]["content"]
                    usage = reply["body"].get("usage") or {}
                    status = 200
                    if "/api/generate" in self.path:
                        payload = {"model": body.get("model"), "response": text, "done": True,
                                   "prompt_eval_count": usage.get("prompt_tokens", 0), "eval_count": usage.get("completion_tokens", 0)}
                    elif "/api/chat" in self.path:
                        payload = {"model": body.get("model"), "message": {"role": "assistant", "content": text}, "done": True,
                                   "prompt_eval_count": usage.get("prompt_tokens", 0), "eval_count": usage.get("completion_tokens", 0)}
                    else:
                        payload = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
                                   "usageMetadata": {"promptTokenCount": usage.get("prompt_tokens", 0),
                                                     "candidatesTokenCount": usage.get("completion_tokens", 0),
                                                     "totalTokenCount": usage.get("total_tokens", 0)}}
            else:
                last = (body.get("messages") or [{}])[-1].get("content")
                reply = next((r for r in replies
                              if ("model" not in r or r["model"] == body.get("model"))
                              and (("match" in r and r["match"] == last)
                                   or ("contains" in r and isinstance(last, str) and r["contains"] in last))), None)
                status, payload = (200, reply["body"]) if reply else (404, {"error": {"message": f"no reply for {last!r}"}})
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    binary = PROMPTFOO / "node_modules" / ".bin" / "promptfoo"
    if not binary.exists():
        PROMPTFOO.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "init", "-y"], cwd=PROMPTFOO, check=True, capture_output=True)
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", f"promptfoo@{VERSION}"],
                       cwd=PROMPTFOO, check=True)
    only = set(sys.argv[1:])
    for config_dir in sorted(p for p in CONFIGS.iterdir() if p.is_dir() and (not only or p.name in only)):
        with tempfile.TemporaryDirectory() as tmp:
            work = pathlib.Path(tmp) / "config"
            shutil.copytree(config_dir, work, ignore=shutil.ignore_patterns("promptfoo.json"))
            env = dict(os.environ, PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
                       PROMPTFOO_CONFIG_DIR=str(pathlib.Path(tmp) / "home"),
                       NODE_OPTIONS=f"--import {NATURAL_HOOK.as_uri()}")
            server = None
            replies = config_dir / "openai-replies.json"
            anthropic = config_dir / "anthropic-replies.json"
            responses = config_dir / "responses-replies.json"
            requests = []
            if replies.exists() or anthropic.exists() or responses.exists():
                server = openai_server(json.loads(replies.read_text()) if replies.exists() else [],
                                       json.loads(anthropic.read_text()) if anthropic.exists() else [],
                                       requests,
                                       json.loads(responses.read_text()) if responses.exists() else [])
                env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
                env["OPENAI_API_KEY"] = "sk-loopback"
                env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{server.server_address[1]}"
                env["ANTHROPIC_API_KEY"] = "sk-ant-loopback"
                # promptfoo's other hosted providers, at the same server.
                url = f"http://127.0.0.1:{server.server_address[1]}"
                env.update(LOOPBACK_URL=f"{url}/v1", AZURE_API_BASE_URL=url, AZURE_API_KEY="az-loopback",
                           OPENROUTER_API_KEY="or-loopback", OLLAMA_BASE_URL=url,
                           GOOGLE_API_BASE_URL=url, GOOGLE_API_KEY="g-loopback")
            out = pathlib.Path(tmp) / "out.json"
            proc = subprocess.run(
                [str(binary), "eval", "-c", "promptfooconfig.yaml", "-o", str(out), "--no-cache", "--no-table"],
                cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            )
            if server:
                server.shutdown()
            if not out.exists():
                print(f"{config_dir.name}: promptfoo wrote nothing (exit {proc.returncode})\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}",
                      file=sys.stderr)
                sys.exit(1)
            results = json.loads(out.read_text())["results"]["results"]
            rows = []
            for r in results:
                grading = r.get("gradingResult") or {}
                rows.append({
                    "description": (r.get("testCase") or {}).get("description"),
                    "vars": r.get("vars"),
                    "prompt": {"raw": r["prompt"]["raw"], "label": r["prompt"].get("label")},
                    "output": (r.get("response") or {}).get("output"),
                    "provider": r["provider"].get("label") or r["provider"].get("id"),
                    "success": r.get("success"),
                    "score": r.get("score"),
                    "error": r.get("error"),
                    "components": [
                        {"type": c["assertion"]["type"] if c.get("assertion") else None,
                         "pass": c.get("pass"), "score": c.get("score")}
                        for c in grading.get("componentResults") or []
                    ],
                })
            rows.sort(key=lambda r: (r["provider"], str(r["output"]), json.dumps(r["vars"], sort_keys=True)))
            record = {"promptfoo": VERSION, "rows": rows}
            # Per prompt and provider: the named (and derived) metrics,
            # recorded when the config declares any.
            prompts = json.loads(out.read_text())["results"].get("prompts") or []
            named = [
                {"label": p.get("label"), "provider": p.get("provider"),
                 "namedScores": (p.get("metrics") or {}).get("namedScores") or {}}
                for p in prompts
            ]
            if any(n["namedScores"] for n in named):
                record["prompts"] = named
            (config_dir / "promptfoo.json").write_text(json.dumps(record, indent=1) + "\n")
            # The request bodies promptfoo sent, for the configs that keep
            # them (`promptfoo-requests.json` present): evalhost's must be
            # the same, in any order.
            kept = config_dir / "promptfoo-requests.json"
            if kept.exists() or anthropic.exists() or responses.exists():
                requests.sort(key=lambda r: json.dumps(r, sort_keys=True))
                kept.write_text(json.dumps(requests, indent=1) + "\n")
            print(f"{config_dir.name}: {len(rows)} rows")


if __name__ == "__main__":
    main()
