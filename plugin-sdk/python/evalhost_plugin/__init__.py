"""evalhost grader plugins in Python.

The same shape as the Rust SDK (``evalhost-plugin-sdk``): a grader
describes its assertion types, checks an assertion's config when a suite
loads, and grades one output at a time into checks and a score. The
package version is the WIT version it targets (``evalhost:grader@0.2.0``).

    import evalhost_plugin as ep

    class Mentions(ep.Grader):
        def describe(self):
            return ep.Plugin("mentions", "0.1.0", stateless=True).assertion_type(
                ep.AssertionType("mentions", "Output mentions `value`").schema(
                    {"type": "object", "required": ["value"],
                     "properties": {"value": {"type": "string", "minLength": 1}}}))

        def check_config(self, assertion_type, config):
            config.required_str("value")

        def grade(self, request):
            value = request.config.required_str("value")
            found = value.lower() in request.output.lower()
            return ep.Grade.from_check(ep.Check(found, f"Output mentions {value!r}"))

    Grader = ep.export(Mentions)   # what componentize-py exports

Build it into a component with ``evalhost-plugin-build app -o mentions.wasm``
(or ``python -m evalhost_plugin.build``); test it natively with
``evalhost_plugin.testing.Harness``. Nothing here runs outside the sandbox:
the component gets no files, network, environment or clock unless the
suite grants a capability.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = [
    "API_VERSION",
    "AssertionType",
    "Check",
    "Config",
    "ConfigError",
    "Grade",
    "GradeError",
    "Grader",
    "Message",
    "Plugin",
    "Request",
    "ToolCall",
    "Trace",
    "export",
]

#: The WIT package version this SDK builds against.
API_VERSION = "0.2.0"

#: Capabilities a type may ask for (the WIT's `capability` enum).
CAPABILITIES = ("llm", "exec", "workspace-read")


class ConfigError(ValueError):
    """An assertion's config is wrong; the message says what to fix."""


class Config(dict):
    """An assertion's config (the keys of the assertion besides its type)."""

    def required_str(self, key: str) -> str:
        """The non-empty string at ``key``, else a :class:`ConfigError`."""
        value = self.get(key)
        if not isinstance(value, str) or value == "":
            raise ConfigError(f"`{key}` is required and must be a non-empty string")
        return value

    def optional_str(self, key: str) -> Optional[str]:
        """The string at ``key``, or None; anything else is an error."""
        value = self.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ConfigError(f"`{key}` must be a string")
        return value

    def required_number(self, key: str) -> float:
        """The number at ``key`` (not a boolean), else a :class:`ConfigError`."""
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"`{key}` is required and must be a number")
        return float(value)


@dataclass
class AssertionType:
    """One assertion type the plugin grades."""

    name: str
    description: str
    config_schema: dict = field(default_factory=lambda: {"type": "object"})
    default_threshold: float = 0.8
    capabilities: list = field(default_factory=list)

    def schema(self, schema: dict) -> "AssertionType":
        """Sets the JSON Schema of the config."""
        self.config_schema = schema
        return self

    def threshold(self, threshold: float) -> "AssertionType":
        """Sets the score at or above which the verdict is `pass`."""
        self.default_threshold = threshold
        return self

    def capability(self, name: str) -> "AssertionType":
        """Asks for a capability (`llm`, `exec`, `workspace-read`)."""
        if name not in CAPABILITIES:
            raise ValueError(f"unknown capability {name!r}; one of {', '.join(CAPABILITIES)}")
        self.capabilities.append(name)
        return self


@dataclass
class Plugin:
    """What the plugin says about itself."""

    name: str
    version: str
    types: list = field(default_factory=list)
    stateless: bool = False

    def assertion_type(self, kind: AssertionType) -> "Plugin":
        """Adds an assertion type."""
        self.types.append(kind)
        return self


@dataclass
class Check:
    """One thing that was checked, and whether it held."""

    passed: bool
    text: str
    evidence: Optional[str] = None


@dataclass
class Grade:
    """A score in [0, 1] and the checks behind it."""

    score: float
    checks: list = field(default_factory=list)
    details: Any = None

    @staticmethod
    def from_check(check: Check) -> "Grade":
        """1 when the check passed, else 0."""
        return Grade(1.0 if check.passed else 0.0, [check])

    @staticmethod
    def from_checks(checks: list) -> "Grade":
        """The fraction of checks that passed (1 with none)."""
        if not checks:
            return Grade(1.0, [])
        return Grade(sum(1 for c in checks if c.passed) / len(checks), list(checks))


class GradeError(Exception):
    """The plugin could not grade: ``failed`` (it broke or was misused),
    ``bad-output`` (the output cannot be graded), ``judge`` (the judge
    model failed). Never a pass: the assertion fails with this reason."""

    KINDS = ("failed", "bad-output", "judge")

    def __init__(self, message: str, kind: str = "failed"):
        if kind not in self.KINDS:
            raise ValueError(f"unknown grade error kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class ToolCall:
    """One tool call an agent made."""

    tool: str
    input: Any = None
    output: Any = None
    id: Optional[str] = None
    status: Optional[str] = None
    duration_ms: Optional[int] = None


@dataclass
class Message:
    """One message of the input or the output."""

    role: str
    content: str
    content_json: Any = None
    tool_calls: list = field(default_factory=list)
    name: Optional[str] = None


@dataclass
class Trace:
    """What the target reported about the run."""

    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    cost_usd: Optional[float] = None
    duration_ms: Optional[int] = None
    llm_calls: Optional[int] = None
    file_changes: Optional[str] = None


@dataclass
class Request:
    """One output to grade against one assertion."""

    assertion_type: str
    config: Config
    output: str
    test_id: str = "test"
    input: list = field(default_factory=list)
    output_messages: list = field(default_factory=list)
    expected_output: Optional[str] = None
    expected_messages: list = field(default_factory=list)
    criteria: Optional[str] = None
    metadata: dict = field(default_factory=dict)
    trace: Trace = field(default_factory=Trace)
    workspace_path: Optional[str] = None


class Grader:
    """Subclass it: ``describe``, ``check_config``, ``grade``."""

    def describe(self) -> Plugin:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_config(self, assertion_type: str, config: Config) -> None:
        """Raise :class:`ConfigError` (or ValueError) when the config is
        wrong; the default accepts anything the schema accepts."""

    def grade(self, request: Request) -> Grade:  # pragma: no cover - abstract
        raise NotImplementedError


def _loads(text: Optional[str]) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _message(m: Any) -> Message:
    return Message(
        role=m.role,
        content=m.content,
        content_json=_loads(m.content_json),
        tool_calls=[
            ToolCall(
                tool=c.tool,
                input=_loads(c.input_json),
                output=_loads(c.output_json),
                id=c.id,
                status=c.status,
                duration_ms=c.duration_ms,
            )
            for c in m.tool_calls
        ],
        name=m.name,
    )


def _request(r: Any) -> Request:
    """The SDK's request from the WIT record componentize-py hands over."""
    usage = r.trace.token_usage
    metadata = _loads(r.metadata_json)
    return Request(
        assertion_type=r.assertion_type,
        config=Config(json.loads(r.config_json or "{}")),
        output=r.output,
        test_id=r.test_id,
        input=[_message(m) for m in r.input],
        output_messages=[_message(m) for m in r.output_messages],
        expected_output=r.expected_output,
        expected_messages=[_message(m) for m in r.expected_messages],
        criteria=r.criteria,
        metadata=metadata if isinstance(metadata, dict) else {},
        trace=Trace(
            input_tokens=usage.input if usage else None,
            output_tokens=usage.output if usage else None,
            cost_usd=r.trace.cost_usd,
            duration_ms=r.trace.duration_ms,
            llm_calls=r.trace.llm_calls,
            file_changes=r.trace.file_changes,
        ),
        workspace_path=r.workspace_path,
    )


def export(grader_class: type) -> type:
    """The class componentize-py exports for ``grader_class``: assign it to
    ``Grader`` in the app module. Imported bindings (``wit_world``) exist
    only inside the component build, so this is called there."""
    from componentize_py_types import Err  # type: ignore[import-not-found]
    from wit_world import exports  # type: ignore[import-not-found]
    from wit_world.exports import grader as g  # type: ignore[import-not-found]
    from wit_world.imports import types as t  # type: ignore[import-not-found]

    capability = {
        "llm": t.Capability.LLM,
        "exec": t.Capability.EXEC,
        "workspace-read": t.Capability.WORKSPACE_READ,
    }
    errors = {
        "failed": g.GradeError_Failed,
        "bad-output": g.GradeError_BadOutput,
        "judge": g.GradeError_Judge,
    }
    inner = grader_class()

    class Exported(exports.Grader):
        def describe(self):
            info = inner.describe()
            return t.PluginInfo(
                name=info.name,
                version=info.version,
                types=[
                    t.AssertionType(
                        name=k.name,
                        description=k.description,
                        config_schema=json.dumps(k.config_schema),
                        default_threshold=float(k.default_threshold),
                        capabilities=[capability[c] for c in k.capabilities],
                    )
                    for k in info.types
                ],
                stateless=bool(info.stateless),
            )

        def check_config(self, assertion_type, config_json):
            try:
                inner.check_config(assertion_type, Config(json.loads(config_json or "{}")))
            except ValueError as error:
                raise Err(str(error))

        def grade(self, request):
            try:
                grade = inner.grade(_request(request))
            except GradeError as error:
                raise Err(errors[error.kind](error.message))
            except ValueError as error:
                raise Err(g.GradeError_Failed(str(error)))
            details = None if grade.details is None else json.dumps(grade.details)
            return t.GradeResult(
                score=float(grade.score),
                checks=[t.Check(text=c.text, passed=bool(c.passed), evidence=c.evidence) for c in grade.checks],
                details_json=details,
            )

    Exported.__name__ = "Grader"
    return Exported
