"""evalhost's Python runner: promptfoo 0.121's `python` assertions, run by
CPython compiled into a WebAssembly component with componentize-py.

The host builds this file into a component once (cached by the digest of
this file, the WIT package and componentize-py's version) and loads it like
any plugin: no files, network, environment or clock beyond what every
plugin gets. promptfoo's conventions (`src/assertions/python.ts`,
`src/python/wrapper.py`):

- an inline snippet becomes `def main(output, context)`: one line is
  `return <line>`, several lines are the body (indented with the snippet's
  own first indentation);
- `file://check.py[:fn]` runs the file's `fn` (default `get_assert`), its
  source handed over by the host in the config (`__script`);
- the result: a boolean, a number (passes above 0, or at the threshold),
  `"true"`/`"false"`, a `{pass, score, reason}` dict (snake_case keys
  mapped), or a JSON text of one; anything else fails.

`print` output is captured and shown with the result. A module the sandbox
does not provide fails the assertion naming it.
"""

import io
import json
import math
import sys

import wit_world
from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import response, types

TYPE = "promptfoo-python"
# Not an assertion: a function the host calls while it reads a suite
# (promptfoo's `transformVars`, `get_var` files, prompt functions), the
# result in the details (`output`).
CALL = "promptfoo-python-call"
# promptfoo's `transform: file://x.py[:fn]`: the output rewritten by a
# Python function (`get_transform` by default), called with the output and
# `{vars, prompt}`; the result in details.output.
TRANSFORM = "promptfoo-python-transform"


def _camel(key):
    parts = key.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _map_snake(value):
    # promptfoo's mapSnakeCaseToCamelCase, one level (and componentResults).
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        out[_camel(k) if isinstance(k, str) else k] = v
    if isinstance(out.get("componentResults"), list):
        out["componentResults"] = [_map_snake(c) for c in out["componentResults"]]
    return out


def _is_grading_result(r):
    return (
        isinstance(r, dict)
        and isinstance(r.get("pass"), bool)
        and isinstance(r.get("score"), (int, float))
        and not isinstance(r.get("score"), bool)
        and isinstance(r.get("reason"), str)
        and ("namedScores" not in r or isinstance(r["namedScores"], dict))
        and ("componentResults" not in r or isinstance(r["componentResults"], list))
        and ("comment" not in r or isinstance(r["comment"], str))
    )


def _js_number(x):
    # JavaScript's String(number), enough for reasons.
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e21:
        return str(int(x))
    return repr(x)


class ScriptError(Exception):
    pass


def _assertion_result(result, threshold, inverse, suffix):
    """promptfoo's normalizeScriptAssertionResult: (pass, score, reason)."""

    def failure(raw):
        reason = "Python code returned " + ("true" if raw else "false")
        return reason + "\n" + suffix if suffix else reason

    if isinstance(result, bool):
        passed = result != inverse
        return passed, 1.0 if passed else 0.0, "Assertion passed" if passed else failure(result)
    if isinstance(result, (int, float)):
        raw = result > 0 if threshold is None else result >= threshold
        passed = raw != inverse
        return passed, float(result), "Assertion passed" if passed else failure(raw)
    raw = result["pass"]
    passed = raw != inverse
    if passed == raw:
        reason = result["reason"]
    elif passed:
        reason = "Assertion passed"
    else:
        reason = "Python code returned " + ("true" if raw else "false")
    return passed, float(result["score"]), reason


def _object_result(result, threshold, inverse, suffix):
    mapped = _map_snake(result)
    if not _is_grading_result(mapped):
        raise ScriptError(
            "Python assertion must return a boolean, number, or {pass, score, reason} object. Got instead:\n"
            + json.dumps(mapped, indent=2)
        )
    if threshold is not None and mapped["score"] < threshold:
        mapped["pass"] = False
        message = "Python score %s is less than threshold %s" % (
            _js_number(mapped["score"]),
            _js_number(threshold),
        )
        mapped["reason"] = message + ": " + mapped["reason"] if mapped["reason"] else message
    return _assertion_result(mapped, threshold, inverse, suffix)


def normalize(result, threshold, inverse, suffix):
    """promptfoo's normalizeScriptResult, on the value the script returned
    as promptfoo's worker hands it back (through JSON)."""
    lower = result.lower() if isinstance(result, str) else None
    if result is True or lower == "true":
        return _assertion_result(True, threshold, inverse, suffix)
    if result is False or lower == "false":
        return _assertion_result(False, threshold, inverse, suffix)
    if isinstance(result, str) and result.startswith("{"):
        try:
            parsed = json.loads(result)
        except ValueError as e:
            raise ScriptError("Invalid JSON: %s when parsing result: %s" % (e, result))
        if not isinstance(parsed, dict):
            raise ScriptError(
                "Python assertion must return a boolean, number, or {pass, score, reason} object. Got instead: "
                + result
            )
        return _object_result(parsed, threshold, inverse, suffix)
    if isinstance(result, dict):
        return _object_result(result, threshold, inverse, suffix)
    if isinstance(result, list):
        text = ",".join("" if v is None else str(v) for v in result)
    elif result is None:
        text = "null"
    else:
        text = str(result)
    try:
        score = float(text.strip().split()[0]) if text.strip() else math.nan
    except ValueError:
        score = math.nan
    if isinstance(result, (int, float)) and not isinstance(result, bool):
        score = float(result)
    if math.isnan(score):
        raise ScriptError(
            "Python assertion must return a boolean, number, or {pass, score, reason} object. Instead got:\n"
            + text
        )
    return _assertion_result(score, threshold, inverse, suffix)


def build_script(value):
    """promptfoo's buildPythonScript."""
    if "\n" in value:
        indent = "    "
        for line in value.split("\n"):
            stripped = line.lstrip()
            if stripped and len(stripped) < len(line):
                indent = line[: len(line) - len(stripped)]
                break
        body = "\n".join(indent + line for line in value.split("\n"))
    else:
        body = "    return " + value
    return "import json\n\ndef main(output, context):\n" + body + "\n"


def _through_json(value):
    # promptfoo's worker sends the result back as JSON.
    return json.loads(json.dumps(value, default=str))


class Grader(exports.Grader):
    def describe(self):
        schema = json.dumps(
            {
                "type": "object",
                "properties": {
                    "value": {"type": "string"},
                    "threshold": {"type": "number"},
                    "inverse": {"type": "boolean"},
                    "__script": {"type": "object"},
                    "__test": {"type": "object"},
                },
            }
        )
        return types.PluginInfo(
            name="evalhost-python",
            version="0.1.0",
            types=[
                types.AssertionType(
                    name=TYPE,
                    description="promptfoo's python assertion: a snippet or a file's function, run by CPython in the sandbox",
                    config_schema=schema,
                    default_threshold=0.0,
                    capabilities=[],
                ),
                types.AssertionType(
                    name=TRANSFORM,
                    description="promptfoo's Python output transform (`transform: file://x.py`): the new output in details.output",
                    config_schema=json.dumps({"type": "object"}),
                    default_threshold=0.0,
                    capabilities=[],
                ),
                types.AssertionType(
                    name=CALL,
                    description="a suite's Python called while the suite is read (transformVars, var files, prompt functions): the result in details.output",
                    config_schema=json.dumps({"type": "object"}),
                    default_threshold=0.0,
                    capabilities=[],
                ),
            ],
            # Not stateless: a snippet runs in this interpreter and can
            # replace this module's functions, builtins or `json`; every
            # call gets a fresh instance, so no test's code reaches another.
            stateless=False,
        )

    def check_config(self, assertion_type, config_json):
        if assertion_type in (CALL, TRANSFORM):
            return
        if assertion_type != TYPE:
            raise Err("unknown assertion type `%s`" % assertion_type)
        config = json.loads(config_json)
        if "__script" not in config and not isinstance(config.get("value"), str):
            raise Err("python assertion must have a string value")

    def grade(self, request):
        config = json.loads(request.config_json)
        if request.assertion_type == CALL:
            return self.call(config)
        if request.assertion_type == TRANSFORM:
            metadata = json.loads(request.metadata_json or "{}")
            vars_ = metadata.get("vars", {}) if isinstance(metadata, dict) else {}
            prompt = request.input[0].content if request.input else ""
            output_json = response.output_json()
            output = json.loads(output_json) if output_json is not None else request.output
            script = dict(config["__script"])
            script["function"] = script.get("function") or "get_transform"
            return _call_result({"__script": script, "args": [output, {"vars": vars_, "prompt": {"raw": prompt}}]})
        threshold = config.get("threshold")
        inverse = bool(config.get("inverse", False))
        metadata = json.loads(request.metadata_json or "{}")
        vars_ = metadata.get("vars", {}) if isinstance(metadata, dict) else {}
        prompt = request.input[0].content if request.input else ""
        output_json = response.output_json()
        output = json.loads(output_json) if output_json is not None else request.output
        context = {
            "prompt": prompt,
            "vars": vars_,
            "test": config.get("__test", {"vars": vars_}),
            "providerResponse": {"output": output},
        }
        logprobs = response.logprobs()
        if logprobs is not None:
            context["logProbs"] = list(logprobs)
            context["providerResponse"]["logProbs"] = list(logprobs)
        reason_suffix = ""
        result = None
        captured = io.StringIO()
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = captured
        try:
            script = config.get("__script")
            if script is not None:
                source = script["source"]
                function = script.get("function") or "get_assert"
                reason_suffix = script.get("reference", "")
            else:
                source = build_script(config["value"])
                function = "main"
                reason_suffix = config["value"]
            try:
                namespace = {"__name__": "__evalhost_assertion__"}
                exec(compile(source, "<assertion>", "exec"), namespace)
                fn = namespace.get(function)
                if not callable(fn):
                    raise ScriptError("function %r not found in the script" % function)
                result = _through_json(fn(output, context))
                passed, score, reason = normalize(result, threshold, inverse, reason_suffix)
            except ModuleNotFoundError as e:
                passed, score = False, 0.0
                reason = (
                    "Python code execution failed: No module named %r: the evalhost sandbox provides the standard library modules that need no files, network or processes, and no installed packages"
                    % e.name
                )
            except ScriptError as e:
                passed, score = False, 0.0
                reason = "Python code execution failed: %s" % e
            except RecursionError as e:
                passed, score = False, 0.0
                reason = "Python code execution failed: RecursionError: %s" % e
            except MemoryError:
                raise
            except BaseException as e:  # noqa: BLE001 - a snippet's failure is its result
                passed, score = False, 0.0
                reason = "Python code execution failed: %s: %s" % (type(e).__name__, e)
        finally:
            sys.stdout, sys.stderr = saved
        printed = captured.getvalue()
        evidence = ("print:\n" + printed.rstrip()) if printed else None
        details = {"verdict": "pass" if passed else "fail"}
        # A result's nested componentResults, listed under it by the host
        # as promptfoo lists them.
        if isinstance(result, dict) and isinstance(_map_snake(result).get("componentResults"), list):
            details["componentResults"] = _map_snake(result)["componentResults"]
        if printed:
            details["console"] = printed[:65536]
        if math.isfinite(score) and not 0.0 <= score <= 1.0:
            details["raw_score"] = score
        clamped = 0.0 if math.isnan(score) else min(1.0, max(0.0, score))
        return types.GradeResult(
            score=clamped,
            checks=[types.Check(text=reason, passed=passed, evidence=evidence)],
            details_json=json.dumps(details),
        )


def _call(config):
    """The call's result as JSON, the text it printed, and its error."""
    script = config["__script"]
    args = config.get("args", [])
    captured = io.StringIO()
    saved = sys.stdout, sys.stderr, sys.argv
    sys.stdout = sys.stderr = captured
    try:
        if script.get("script"):
            # promptfoo's legacy prompt script: the whole file run with the
            # context as its argument; what it prints is the prompt.
            sys.argv = [script.get("reference", "prompt.py")] + [json.dumps(a) for a in args]
            namespace = {"__name__": "__main__"}
            exec(compile(script["source"], script.get("reference", "<script>"), "exec"), namespace)
            return captured.getvalue().rstrip("\n"), captured.getvalue(), None
        namespace = {"__name__": "__evalhost_call__"}
        exec(compile(script["source"], script.get("reference", "<script>"), "exec"), namespace)
        function = script.get("function")
        fn = namespace.get(function)
        if not callable(fn):
            return None, captured.getvalue(), "function %r not found in %s" % (function, script.get("reference", "the script"))
        return _through_json(fn(*args)), captured.getvalue(), None
    except MemoryError:
        raise
    except ModuleNotFoundError as e:
        return None, captured.getvalue(), "No module named %r: the evalhost sandbox provides the standard library modules that need no files, network or processes, and no installed packages" % e.name
    except SystemExit as e:
        if script.get("script") and not e.code:
            return captured.getvalue().rstrip("\n"), captured.getvalue(), None
        return None, captured.getvalue(), "the script exited (%s)" % (e.code,)
    except BaseException as e:  # noqa: BLE001 - the code's failure is the call's result
        return None, captured.getvalue(), "%s: %s" % (type(e).__name__, e)
    finally:
        sys.stdout, sys.stderr, sys.argv = saved


def _call_result(config):
    output, printed, error = _call(config)
    if error is not None:
        raise Err(types.GradeError_Failed(error))
    details = {"output": output}
    if printed:
        details["console"] = printed[:65536]
    return types.GradeResult(
        score=1.0,
        checks=[types.Check(text="Called", passed=True, evidence=None)],
        details_json=json.dumps(details),
    )


Grader.call = lambda self, config: _call_result(config)
