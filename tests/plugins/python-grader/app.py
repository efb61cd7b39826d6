"""A grader plugin written in Python, built with componentize-py against
evalhost's WIT world (`plugin-sdk/wit/grader.wit`, world `plugin`):

    componentize-py -d ../../../wit -w plugin componentize app -o word_limit.wasm

It provides `max-words`: the output has at most `max` words.
"""
import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.grader import GradeError_Failed
from wit_world.imports.types import AssertionType, Check, GradeResult, PluginInfo


def _max(config_json):
    config = json.loads(config_json)
    value = config.get("max")
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"`max` must be a positive integer, got {value!r}")
    return value


class Grader(exports.Grader):
    def describe(self) -> PluginInfo:
        schema = {
            "type": "object",
            "required": ["max"],
            "properties": {"max": {"type": "integer", "minimum": 1}},
            "additionalProperties": False,
        }
        return PluginInfo(
            name="python-word-limit",
            version="0.1.0",
            types=[AssertionType("max-words", "Output has at most `max` words", json.dumps(schema), 0.8, [])],
            stateless=True,
        )

    def check_config(self, assertion_type: str, config_json: str) -> None:
        try:
            _max(config_json)
        except ValueError as error:
            raise Err(str(error))

    def grade(self, request) -> GradeResult:
        try:
            limit = _max(request.config_json)
        except ValueError as error:
            raise Err(GradeError_Failed(str(error)))
        words = len(request.output.split())
        ok = words <= limit
        check = Check(f"Output has {words} words (max {limit})", ok, None)
        return GradeResult(1.0 if ok else 0.0, [check], json.dumps({"words": words}))
