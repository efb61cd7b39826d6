#!/usr/bin/env python3
"""Runs promptfoo's own published examples through promptfoo 0.121.20 and
through evalhost, offline, and compares them.

Each directory of `tests/data/promptfoo-examples/` holds one example config
from the promptfoo repository (`promptfooconfig.yaml` and every file it
references; `SOURCES.md` says where each came from). Both tools talk to one
deterministic loopback server that speaks OpenAI chat completions,
`/v1/responses`, `/v1/embeddings` and Anthropic Messages, answers grader
prompts (llm-rubric, model-graded-closedqa, factuality, g-eval,
select-best, custom rubric prompts) with verdicts derived from a hash of
what is graded, and logs every request body.

For each example:

* promptfoo runs it (`eval -c promptfooconfig.yaml --no-cache -o out.json`,
  telemetry and update checks off); its rows are written beside the config
  as `promptfoo.json` (the format `tests/integration/dialects.rs` reads for
  `tests/data/promptfoo-conformance/`) and the request bodies it sent as
  `promptfoo-requests.jsonl`;
* evalhost runs it (`run promptfooconfig.yaml -o out --no-cache
  --no-judge-cache`) against the same server; its results, output and
  requests are kept under the scratch directory (default /tmp/pfx/runs);
* rows are compared as the Rust conformance test compares them (pass, score,
  each assertion's score) and requests as multisets of (path, body).

    scripts/conformance-examples.py [--record-only|--compare-only] [NAME...]

Environment: PROMPTFOO (the promptfoo executable, default
/tmp/pf/node_modules/.bin/promptfoo), EVALHOST (default target/debug/evalhost),
EVALHOST_COMPONENTIZE_PY (for `python` assertions), PFX_SCRATCH (default
/tmp/pfx/runs).
"""

import hashlib
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "tests" / "data" / "promptfoo-examples"
VERSION = "0.121.20"
PROMPTFOO = os.environ.get("PROMPTFOO", "/tmp/pf/node_modules/.bin/promptfoo")
EVALHOST = os.environ.get("EVALHOST", str(pathlib.Path(__file__).resolve().parent.parent / "target" / "debug" / "evalhost"))
SCRATCH = pathlib.Path(os.environ.get("PFX_SCRATCH", "/tmp/pfx/runs"))
# See scripts/conformance-promptfoo.py: stock promptfoo cannot load natural's
# exports for `meteor`; the hook changes nothing else.
NATURAL_HOOK = ROOT / "plugins" / "promptfoo" / "src" / "testdata" / "natural-named-exports.mjs"
TIMEOUT = 600


# ---------------------------------------------------------------- the server

def h(*parts):
    """A stable integer from strings."""
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:12], 16)


# What the fake model says, picked by the hash of the last user message:
# texts that make typical assertions (contains, icontains, is-json,
# starts-with, javascript length checks, refusals) come out either way.
PALETTE = [
    "Echo! An echo speaks without a mouth. Bonjour le monde, mon ami.",
    "Ahoy, world! Arrr, here be the grub, matey. Yarr.",
    "I'm sorry, but as an AI language model I cannot help with that.",
    '{"color": "yellow", "countries": ["Ecuador", "Brazil", "India"], "answer": 42}',
    "Darkness: the more of it there is, the less you see. Also a keyboard, a stamp, a ton, a coffin, a joke, a piano, breath and a cloud.",
    "Sure! Here is a short overview: the algorithm tracks quantum temperature data, and the session router needs sticky affinity.",
    "Dónde está la biblioteca? La biblioteca está cerca. J'ai faim, donnez-moi du pain.",
    "The answer is 34/105, and the radius is 2 cm. Therefore, the answer is B.",
]


def text_of(content):
    """A message's text: a string, or the text parts of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict):
                out.append(str(part.get("text") or part.get("input_text") or ""))
            elif isinstance(part, str):
                out.append(part)
        return "\n".join(out)
    if content is None:
        return ""
    return json.dumps(content, sort_keys=True)


def city_of(text):
    m = re.search(r"\bin ([A-Z][\w .,']*?)(?:\?|\.| in the| right now|$)", text)
    city = m.group(1).strip() if m else "Springfield"
    return {"Boston": "Boston, MA", "New York": "New York, NY", "Paris": "Paris, France",
            "San Francisco": "San Francisco, CA"}.get(city, city)


def from_schema(schema, name, seed, prompt, depth=0):
    """A value that fits a JSON schema (enough of it for the examples)."""
    if not isinstance(schema, dict) or depth > 6:
        return f"{name} {seed % 97}"
    if "enum" in schema and schema["enum"]:
        return schema["enum"][seed % len(schema["enum"])]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: from_schema(v, k, h(str(seed), k), prompt, depth + 1) for k, v in props.items()}
    if kind == "array":
        return [from_schema(schema.get("items") or {}, name, seed, prompt, depth + 1)]
    if kind == "integer":
        return seed % 100
    if kind == "number":
        return (seed % 1000) / 10
    if kind == "boolean":
        return seed % 2 == 0
    lname = name.lower()
    if "location" in lname or "city" in lname:
        return city_of(prompt)
    if "email" in lname:
        return "sarah.johnson@techcorp.com"
    if "name" in lname:
        return "Sarah Johnson" if seed % 2 else f"{name} {seed % 97}"
    return f"{name}: {PALETTE[seed % len(PALETTE)][:60]}"


def words(text):
    return max(1, len(str(text).split()))


def grader_reply(messages):
    """The reply to a grading prompt, or None when the request is no grader's.
    Verdicts hang on what is graded (the output, the rubric), never on the
    wording of the grading prompt, so both tools get the same verdict."""
    texts = [text_of(m.get("content")) for m in messages if isinstance(m, dict)]
    whole = "\n".join(texts)
    last = texts[-1] if texts else ""
    m = re.search(r"<Output>\n(.*)\n</Output>\n<Rubric>\n(.*)\n</Rubric>", last, re.S)
    if m:
        output, rubric = m.group(1), m.group(2)
        k = h("rubric", output, rubric)
        passed = k % 4 != 0
        score = round(0.7 + (k % 7) * 0.05, 2) if passed else round((k % 5) * 0.1, 2)
        return json.dumps({"reason": f"Deterministic verdict {k % 1000}.", "pass": passed, "score": score})
    if "[BEGIN DATA]" in whole:
        m = re.search(r"\[Submission\]: (.*?)\n\*\*\*\n\[Criterion\]: (.*?)\n\*\*\*", whole, re.S)
        k = h("closedqa", *(m.groups() if m else (whole,)))
        return "The submission was checked step by step.\n" + ("Y" if k % 3 else "N")
    if "<expert_answer>" in whole or "[Expert answer]:" in whole:
        m = (re.search(r"<expert_answer>\s*(.*?)\s*</expert_answer>.*?<submitted_answer>\s*(.*?)\s*</submitted_answer>", whole, re.S)
             or re.search(r"\[Expert answer\]: (.*?)\n\[Submission\]: (.*?)\n\nChoose", whole, re.S))
        k = h("factuality", *(g.strip() for g in (m.groups() if m else (whole,))))
        return json.dumps({"category": "ABCDE"[k % 5], "reason": f"Deterministic category {k % 1000}."})
    if "**Evaluation Steps**" in whole or "Steps to follow:" in whole:
        crit = (re.search(r"\*\*Evaluation Criteria\*\*\n(.*?)\n\n\*\*Evaluation Steps", whole, re.S)
                or re.search(r"Criterion:\n(.*?)\n\nSteps to follow", whole, re.S))
        reply = (re.search(r"\*\*Reply\*\*\n(.*?)\n\n\*\*OUTPUT FORMAT", whole, re.S)
                 or re.search(r"Reply:\n(.*?)\n\nGive an integer", whole, re.S))
        k = h("geval", crit.group(1).strip() if crit else whole, reply.group(1).strip() if reply else "")
        return json.dumps({"score": k % 11, "reason": f"Deterministic rating {k % 1000}."}, separators=(",", ":"))
    if '"steps"' in whole and ("EVALUATION CRITERIA" in whole or "Criteria:" in whole):
        return '{"steps":["Read the text.","Check it against the criteria.","Note what is missing."]}'
    if '<Text index="' in whole:
        texts = re.findall(r'<Text index="\d+">\n(.*?)\n</Text>', whole, re.S)
        return str(h("select", *texts) % max(1, len(texts)))
    if "Grade the output" in whole:
        k = h("custom", whole)
        return json.dumps({"pass": True, "score": k % 4, "reason": f"Deterministic points {k % 1000}."})
    return None


def last_user_text(messages):
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            return text_of(m.get("content"))
    return text_of(messages[-1].get("content")) if messages and isinstance(messages[-1], dict) else ""


class BadRequest(Exception):
    """A request OpenAI would refuse with 400; the message is OpenAI's."""


def chat_completion(body):
    messages = body.get("messages") or []
    # What OpenAI checks before answering, so that a malformed request fails
    # here as it would there.
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise BadRequest(f"Invalid type for 'messages': expected an array of objects, but got {type(messages).__name__} instead.")
    for i, t in enumerate(body.get("tools") or []):
        if isinstance(t, dict) and t.get("type", "function") == "function" and "function" not in t:
            raise BadRequest(f"Missing required parameter: 'tools[{i}].function'.")
    model = body.get("model")
    prompt_tokens = sum(words(text_of(m.get("content"))) for m in messages if isinstance(m, dict))
    graded = grader_reply(messages)
    key = last_user_text(messages)
    message = {"role": "assistant"}
    finish = "stop"
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    functions = body.get("functions") or []
    if graded is not None:
        message["content"] = graded
    elif tools and body.get("tool_choice") != "none":
        fn = tools[h("tool", key) % len(tools)].get("function") or {}
        args = from_schema(fn.get("parameters") or fn.get("input_schema") or {}, "arg", h("args", key), key)
        message["content"] = None
        message["tool_calls"] = [{"id": f"call_{h('id', key) % 10**8}", "type": "function",
                                  "function": {"name": fn.get("name", "tool"), "arguments": json.dumps(args)}}]
        finish = "tool_calls"
    elif functions and body.get("function_call") != "none":
        fn = functions[0]
        args = from_schema(fn.get("parameters") or {}, "arg", h("args", key), key)
        message["content"] = None
        message["function_call"] = {"name": fn.get("name", "fn"), "arguments": json.dumps(args)}
        finish = "function_call"
    else:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}
            message["content"] = json.dumps(from_schema(schema, "root", h("json", key), key))
        elif fmt.get("type") == "json_object":
            message["content"] = json.dumps({"answer": PALETTE[h("t", key) % len(PALETTE)]})
        else:
            message["content"] = PALETTE[h("t", key) % len(PALETTE)]
    out_tokens = words(message.get("content") or json.dumps(message.get("tool_calls") or message.get("function_call")))
    return {"id": f"chatcmpl-{h('c', key) % 10**10}", "object": "chat.completion", "created": 1700000000,
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": out_tokens,
                      "total_tokens": prompt_tokens + out_tokens}}


def responses_api(body):
    inp = body.get("input")
    if isinstance(inp, str):
        messages = [{"role": "user", "content": inp}]
    else:
        messages = [m for m in (inp or []) if isinstance(m, dict)]
    if body.get("instructions"):
        messages = [{"role": "system", "content": body["instructions"]}] + messages
    key = last_user_text(messages)
    graded = grader_reply(messages)
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
    fmt = ((body.get("text") or {}).get("format") or {})
    if graded is not None:
        item = {"type": "message", "text": graded}
    elif tools and body.get("tool_choice") != "none":
        fn = tools[h("tool", key) % len(tools)]
        args = from_schema(fn.get("parameters") or {}, "arg", h("args", key), key)
        item = {"type": "function_call", "id": f"fc_{h('fc', key) % 10**8}", "call_id": f"call_{h('id', key) % 10**8}",
                "name": fn.get("name"), "arguments": json.dumps(args), "status": "completed"}
    elif fmt.get("type") == "json_schema":
        item = {"type": "message", "text": json.dumps(from_schema(fmt.get("schema") or {}, "root", h("json", key), key))}
    elif fmt.get("type") == "json_object":
        item = {"type": "message", "text": json.dumps({"answer": PALETTE[h("t", key) % len(PALETTE)]})}
    else:
        item = {"type": "message", "text": PALETTE[h("t", key) % len(PALETTE)]}
    if item["type"] == "message":
        text = item["text"]
        item = {"type": "message", "id": f"msg_{h('m', key) % 10**8}", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        out_tokens = words(text)
    else:
        out_tokens = words(item["arguments"])
    in_tokens = sum(words(text_of(m.get("content"))) for m in messages)
    return {"id": f"resp_{h('r', key) % 10**10}", "object": "response", "created_at": 1700000000,
            "status": "completed", "model": body.get("model"), "output": [item],
            "usage": {"input_tokens": in_tokens, "output_tokens": out_tokens, "total_tokens": in_tokens + out_tokens}}


def embedding(text):
    """A 64-dimensional unit vector from the text's character trigrams, so
    that similar texts are near each other."""
    vec = [0.0] * 64
    t = f"  {str(text).lower()}  "
    for i in range(len(t) - 2):
        vec[h("e", t[i:i + 3]) % 64] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [round(v / norm, 6) for v in vec]


def embeddings_api(body):
    inp = body.get("input")
    items = inp if isinstance(inp, list) else [inp]
    return {"object": "list", "model": body.get("model"),
            "data": [{"object": "embedding", "index": i, "embedding": embedding(x)} for i, x in enumerate(items)],
            "usage": {"prompt_tokens": sum(words(x) for x in items), "total_tokens": sum(words(x) for x in items)}}


def anthropic_messages(body):
    messages = body.get("messages") or []
    system = body.get("system")
    all_msgs = ([{"role": "system", "content": system}] if system else []) + messages
    key = last_user_text(messages)
    graded = grader_reply(all_msgs)
    content = []
    stop = "end_turn"
    thinking = body.get("thinking") or {}
    if thinking.get("type") in ("enabled", "adaptive"):
        content.append({"type": "thinking", "thinking": f"Let me think about this ({h('th', key) % 1000}).",
                        "signature": "loopback-signature"})
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and "input_schema" in t]
    choice = body.get("tool_choice") or {}
    fmt = body.get("output_format") or {}
    if graded is not None:
        content.append({"type": "text", "text": graded})
    elif tools and choice.get("type") in ("any", "tool") and choice.get("type") != "none":
        tool = tools[h("tool", key) % len(tools)]
        content.append({"type": "tool_use", "id": f"toolu_{h('tu', key) % 10**8}", "name": tool["name"],
                        "input": from_schema(tool["input_schema"], "arg", h("args", key), key)})
        stop = "tool_use"
    elif fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        content.append({"type": "text", "text": json.dumps(from_schema(fmt["schema"], "root", h("json", key), key))})
    else:
        content.append({"type": "text", "text": PALETTE[h("t", key) % len(PALETTE)]})
    in_tokens = sum(words(text_of(m.get("content"))) for m in all_msgs if isinstance(m, dict))
    out_tokens = sum(words(c.get("text") or c.get("thinking") or json.dumps(c.get("input"))) for c in content)
    return {"id": f"msg_{h('am', key) % 10**10}", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": in_tokens, "output_tokens": out_tokens}}


class Loopback:
    """The server, with the log of what it was asked."""

    def __init__(self):
        self.log = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path = self.path.split("?")[0]
                with outer.lock:
                    outer.log.append({"path": path, "body": body})
                try:
                    if path.endswith("/chat/completions"):
                        status, payload = 200, chat_completion(body)
                    elif path.endswith("/responses"):
                        status, payload = 200, responses_api(body)
                    elif path.endswith("/embeddings"):
                        status, payload = 200, embeddings_api(body)
                    elif path.endswith("/messages"):
                        status, payload = 200, anthropic_messages(body)
                    else:
                        status, payload = 404, {"error": {"message": f"no such endpoint {path}", "type": "not_found"}}
                except BadRequest as e:
                    status, payload = 400, {"error": {"message": str(e), "type": "invalid_request_error"}}
                except Exception as e:  # a reply the server cannot make is a 500, logged
                    status, payload = 500, {"error": {"message": f"loopback server: {e!r}", "type": "server_error"}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                data = b'{"object": "list", "data": []}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]

    def take(self):
        with self.lock:
            log, self.log = self.log, []
        return log

    def env(self):
        return {"OPENAI_BASE_URL": f"http://127.0.0.1:{self.port}/v1", "OPENAI_API_KEY": "sk-loopback",
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.port}", "ANTHROPIC_API_KEY": "sk-ant-loopback"}


# ------------------------------------------------------------------ the runs

def copy_example(src, dest):
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("promptfoo.json", "promptfoo-requests.jsonl"))


def integral(v):
    """JSON numbers as values: `1.0` and `1` are the same number on the wire."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: integral(x) for k, x in v.items()}
    if isinstance(v, list):
        return [integral(x) for x in v]
    return v


def canonical(req):
    return json.dumps([req["path"], integral(req["body"])], sort_keys=True, ensure_ascii=False)


def run_promptfoo(example, server, work_root):
    work = work_root / "pf"
    copy_example(example, work)
    env = dict(os.environ, PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
               PROMPTFOO_CONFIG_DIR=str(work_root / "pf-home"), PROMPTFOO_DISABLE_SHARING="1",
               NODE_OPTIONS=f"--import {NATURAL_HOOK.as_uri()}", **server.env())
    out = work_root / "pf-out.json"
    server.take()
    try:
        proc = subprocess.run([PROMPTFOO, "eval", "-c", "promptfooconfig.yaml", "-o", str(out), "--no-cache",
                               "--no-table", "--no-progress-bar"],
                              cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=TIMEOUT)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        code, stdout, stderr = "timeout", str(e.stdout or ""), str(e.stderr or "")
    requests = server.take()
    if not out.exists():
        return {"ran": False, "code": code, "stdout": stdout[-4000:], "stderr": stderr[-4000:], "requests": requests}
    doc = json.loads(out.read_text())
    rows = []
    for r in doc["results"]["results"]:
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
    rows.sort(key=lambda r: (r["provider"], str(r["output"]), json.dumps(r["vars"], sort_keys=True),
                             r["prompt"]["raw"], str(r["description"])))
    record = {"promptfoo": VERSION, "rows": rows}
    named = [{"label": p.get("label"), "provider": p.get("provider"),
              "namedScores": (p.get("metrics") or {}).get("namedScores") or {}}
             for p in doc["results"].get("prompts") or []]
    if any(n["namedScores"] for n in named):
        record["prompts"] = named
    return {"ran": True, "code": code, "record": record, "stdout": stdout[-4000:], "stderr": stderr[-4000:],
            "requests": requests}


def run_evalhost(example, server, work_root):
    work = work_root / "eh"
    copy_example(example, work)
    env = dict(os.environ, **server.env())
    # `python` assertions: the componentize-py the integration tests install
    # (target/tmp/componentize-py), unless one is named.
    default_cpy = ROOT / "target" / "tmp" / "componentize-py"
    if "EVALHOST_COMPONENTIZE_PY" not in env and default_cpy.exists():
        env["EVALHOST_COMPONENTIZE_PY"] = str(default_cpy)
    server.take()
    try:
        proc = subprocess.run([EVALHOST, "run", "promptfooconfig.yaml", "-o", "out", "--no-cache", "--no-judge-cache"],
                              cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=TIMEOUT)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        code, stdout, stderr = "timeout", str(e.stdout or ""), str(e.stderr or "")
    requests = server.take()
    results = work / "out" / "results.jsonl"
    rows = [json.loads(l) for l in results.read_text().splitlines() if l.strip()] if results.exists() else []
    summary = work / "out" / "summary.json"
    return {"ran": bool(rows), "code": code, "rows": rows, "stdout": stdout, "stderr": stderr, "requests": requests,
            "summary": json.loads(summary.read_text()) if summary.exists() else None}


def first_error(stdout, stderr):
    lines = [l.strip() for l in (stderr + "\n" + stdout).splitlines() if l.strip()]
    for l in lines:
        if re.search(r"\berror\b", l, re.I) and "evalhost 0." not in l:
            return l
    return lines[-1] if lines else "(no output)"


# ---------------------------------------------------------------- comparison

def normal_vars(v):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if isinstance(x, str):
                try:
                    j = json.loads(x)
                    if isinstance(j, (dict, list)):
                        x = j
                except ValueError:
                    pass
            out[k] = x
        return out
    return v


def flat_scores(scores, out):
    for s in scores or []:
        out.append(s.get("score"))
        # An assert-set's members, a grader's nested componentResults.
        flat_scores(s.get("scores"), out)
    return out


def provider_key(name):
    return re.sub(r"^openai:(chat|responses):", "openai:", str(name))


def close(a, b):
    try:
        return abs(float(a) - float(b)) < 1e-9
    except (TypeError, ValueError):
        return a == b


def compare_rows(record, ours):
    """Each promptfoo row against evalhost's: the same checks as
    tests/integration/dialects.rs, each difference named."""
    equal, diffs = 0, []
    used = set()
    for want in record["rows"]:
        want_out = want["output"]
        if not (isinstance(want_out, str) or want_out is None):
            want_out = json.dumps(want_out, separators=(",", ":"), ensure_ascii=False)
        def same(g, name_of):
            return (name_of(g.get("target")) == name_of(want["provider"])
                    and normal_vars((g.get("metadata") or {}).get("vars")) == normal_vars(want["vars"])
                    and (want["description"] is None
                         or (g.get("metadata") or {}).get("description") == want["description"]))
        cands = [i for i, g in enumerate(ours) if i not in used and same(g, lambda x: x)]
        renamed = False
        if not cands:
            # promptfoo names `openai:chat:m` `openai:m` in its rows; the
            # Rust test would find no row, but the scores are still compared.
            cands = [i for i, g in enumerate(ours) if i not in used and same(g, provider_key)]
            renamed = bool(cands)
        exact = [i for i in cands if ours[i].get("output") == want_out or want_out is None]
        pick = (exact or cands or [None])[0]
        if pick is None:
            diffs.append({"kind": "no-row", "provider": want["provider"], "vars": want["vars"],
                          "description": want["description"]})
            continue
        used.add(pick)
        got = ours[pick]
        problems = []
        if renamed:
            problems.append(("target-name", want["provider"], got.get("target")))
        if not exact:
            problems.append(("output", want["output"], got.get("output")))
        passed = got.get("status") == "passed"
        if passed != bool(want["success"]):
            problems.append(("pass", want["success"], got.get("status")))
        if not close(got.get("score"), want["score"]):
            problems.append(("score", want["score"], got.get("score")))
        if want["components"] == [] and isinstance(want["error"], str):
            if got.get("status") != "error":
                problems.append(("error-row", want["error"], got.get("status")))
        else:
            flat = flat_scores(got.get("scores"), [])
            theirs = [c["score"] for c in want["components"]]
            if len(flat) != len(theirs) or not all(close(a, b) for a, b in zip(flat, theirs)):
                problems.append(("assertions", [(c["type"], c["pass"], c["score"]) for c in want["components"]],
                                 [(s.get("type"), s.get("verdict"), s.get("score")) for s in got.get("scores") or []]))
        if problems:
            diffs.append({"kind": "row", "test_id": got.get("test_id"), "provider": want["provider"],
                          "problems": problems, "promptfoo_error": want["error"],
                          "evalhost_error": got.get("error") or got.get("execution_error")})
        else:
            equal += 1
    return equal, diffs


def compare_metrics(record, summary):
    """Named and derived metrics per prompt and provider, as the Rust test
    compares them: (equal, total, differences)."""
    equal, total, diffs = 0, 0, []
    for want in record.get("prompts") or []:
        metrics = (summary or {}).get("metrics") or []
        got = next((m for m in metrics if m.get("target") == want["provider"] and m.get("prompt") == want["label"]), None)
        if got is None:
            got = next((m for m in metrics if provider_key(m.get("target")) == provider_key(want["provider"])), None)
            if got is not None:
                diffs.append({"kind": "metrics-name", "want": [want["provider"], want["label"]],
                              "got": [got.get("target"), got.get("prompt")]})
        ours = {}
        for pair in ((got or {}).get("named") or []) + ((got or {}).get("derived") or []):
            ours[pair[0]] = pair[1]
        for metric, value in want["namedScores"].items():
            total += 1
            if metric in ours and close(ours[metric], value):
                equal += 1
            else:
                diffs.append({"kind": "metric", "prompt": want["label"], "provider": want["provider"],
                              "metric": metric, "promptfoo": value, "evalhost": ours.get(metric)})
    return equal, total, diffs


def compare_requests(pf, eh):
    """Multisets of (path, body); embeddings as sets (promptfoo embeds a
    text once per comparison, evalhost once per assertion: the same
    vectors, fewer calls)."""
    from collections import Counter
    a, b = Counter(canonical(r) for r in pf), Counter(canonical(r) for r in eh)
    for k in set(a) & set(b):
        if '"/v1/embeddings"' in k:
            a[k] = b[k] = max(a[k], b[k])
    equal = sum((a & b).values())
    only_pf = list((a - b).elements())
    only_eh = list((b - a).elements())
    return equal, only_pf, only_eh


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    names = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and (p / "promptfooconfig.yaml").exists())
    if args:
        names = [n for n in names if n in set(args)]
    SCRATCH.mkdir(parents=True, exist_ok=True)
    server = Loopback()
    table = []
    for name in names:
        example = EXAMPLES / name
        keep = SCRATCH / name
        if keep.exists():
            shutil.rmtree(keep)
        keep.mkdir(parents=True)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            if "--compare-only" not in flags:
                pf = run_promptfoo(example, server, tmp)
                with open(example / "promptfoo-requests.jsonl", "w") as f:
                    # In a stable order: promptfoo sends them concurrently.
                    for r in sorted(pf["requests"], key=canonical):
                        f.write(json.dumps(r, ensure_ascii=False) + "\n")
                if pf["ran"]:
                    (example / "promptfoo.json").write_text(json.dumps(pf["record"], indent=1, ensure_ascii=False) + "\n")
                elif (example / "promptfoo.json").exists():
                    (example / "promptfoo.json").unlink()
                (keep / "promptfoo.log").write_text(f"exit {pf['code']}\n--- stdout\n{pf['stdout']}\n--- stderr\n{pf['stderr']}\n")
            pf_record = json.loads((example / "promptfoo.json").read_text()) if (example / "promptfoo.json").exists() else None
            pf_requests = [json.loads(l) for l in (example / "promptfoo-requests.jsonl").read_text().splitlines()
                           if l.strip()] if (example / "promptfoo-requests.jsonl").exists() else []
            if "--record-only" in flags:
                print(f"{name}: promptfoo {'ran' if pf_record else 'FAILED'}", flush=True)
                continue
            eh = run_evalhost(example, server, tmp)
            (keep / "evalhost.log").write_text(f"exit {eh['code']}\n--- stdout\n{eh['stdout']}\n--- stderr\n{eh['stderr']}\n")
            with open(keep / "evalhost-requests.jsonl", "w") as f:
                for r in sorted(eh["requests"], key=canonical):
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
            with open(keep / "evalhost-results.jsonl", "w") as f:
                for r in eh["rows"]:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
            if eh["summary"] is not None:
                (keep / "evalhost-summary.json").write_text(json.dumps(eh["summary"], indent=1))
        entry = {"name": name, "promptfoo_ran": pf_record is not None,
                 "promptfoo_rows": len(pf_record["rows"]) if pf_record else 0,
                 "evalhost_ran": eh["ran"], "evalhost_code": eh["code"], "evalhost_rows": len(eh["rows"]),
                 "evalhost_error": None if eh["ran"] else first_error(eh["stdout"], eh["stderr"]),
                 "promptfoo_requests": len(pf_requests), "evalhost_requests": len(eh["requests"])}
        if pf_record:
            eq, diffs = compare_rows(pf_record, eh["rows"])
            entry["rows_equal"], entry["row_diffs"] = eq, diffs
            m_eq, m_total, m_diffs = compare_metrics(pf_record, eh["summary"])
            entry["metrics_equal"], entry["metrics_total"], entry["metric_diffs"] = m_eq, m_total, m_diffs
            entry["rows_equal_but_target_name"] = sum(
                1 for d in diffs if d["kind"] == "row" and [p[0] for p in d["problems"]] == ["target-name"])
        req_eq, only_pf, only_eh = compare_requests(pf_requests, eh["requests"])
        entry["requests_equal"] = req_eq
        (keep / "requests-only-promptfoo.jsonl").write_text("".join(x + "\n" for x in only_pf))
        (keep / "requests-only-evalhost.jsonl").write_text("".join(x + "\n" for x in only_eh))
        (keep / "compare.json").write_text(json.dumps(entry, indent=1, ensure_ascii=False, default=str))
        table.append(entry)
        print(f"{name}: promptfoo {'ran' if pf_record else 'FAILED'} ({entry['promptfoo_rows']} rows), "
              f"evalhost {'ran' if eh['ran'] else 'REFUSED'} ({entry['evalhost_rows']} rows), "
              f"rows equal {entry.get('rows_equal', '-')}, requests equal {req_eq}/{len(pf_requests)}", flush=True)
    if not table:
        return
    (SCRATCH / "table.json").write_text(json.dumps(table, indent=1, ensure_ascii=False, default=str))
    print()
    print("| config | promptfoo runs? | evalhost runs? | rows equal / total | requests equal / total |")
    print("|---|---|---|---|---|")
    for e in table:
        eh = "yes" if e["evalhost_ran"] else f"no: {e['evalhost_error'][:140]}"
        pf = f"yes ({e['promptfoo_rows']} rows)" if e["promptfoo_ran"] else "no"
        rows = f"{e.get('rows_equal', 0)} / {e['promptfoo_rows']}" if e["promptfoo_ran"] else "-"
        print(f"| {e['name']} | {pf} | {eh} | {rows} | {e['requests_equal']} / {e['promptfoo_requests']} "
              f"(evalhost sent {e['evalhost_requests']}) |")
    ran = [e for e in table if e["promptfoo_ran"]]
    print()
    print(f"configs promptfoo runs: {len(ran)} of {len(table)}; evalhost runs: "
          f"{sum(e['evalhost_ran'] for e in ran)} of those; rows equal: {sum(e.get('rows_equal', 0) for e in ran)} of "
          f"{sum(e['promptfoo_rows'] for e in ran)}; requests equal: {sum(e['requests_equal'] for e in ran)} of "
          f"{sum(e['promptfoo_requests'] for e in ran)}")


if __name__ == "__main__":
    main()
