"""Native tests for a Python grader: what evalhost checks, without a build.

    from evalhost_plugin.testing import Harness
    h = Harness(Mentions)
    assert h.score("mentions", "Hello, World", {"value": "world"}) == 1.0
    assert h.check_config("mentions", {}) is not None   # the error message
"""

from __future__ import annotations

import math
from typing import Optional

from . import Config, Grade, GradeError, Request


class Harness:
    """Calls a grader as evalhost does and checks what evalhost checks: the
    type is one it describes, the config passes its check, the score is a
    number in [0, 1]."""

    def __init__(self, grader_class: type):
        self.grader = grader_class()
        self.info = self.grader.describe()

    def _type(self, name: str):
        for kind in self.info.types:
            if kind.name == name:
                return kind
        raise AssertionError(f"the plugin describes no type {name!r}")

    def check_config(self, assertion_type: str, config: dict) -> Optional[str]:
        """None when the config is accepted, else the plugin's message."""
        self._type(assertion_type)
        try:
            self.grader.check_config(assertion_type, Config(config))
        except ValueError as error:
            return str(error)
        return None

    def grade(self, assertion_type: str, output: str, config: dict, **request) -> Grade:
        """The grade of ``output``; a refused config or a grade error raises."""
        problem = self.check_config(assertion_type, config)
        if problem is not None:
            raise AssertionError(f"config refused: {problem}")
        grade = self.grader.grade(Request(assertion_type, Config(config), output, **request))
        if not isinstance(grade.score, (int, float)) or math.isnan(grade.score) or not 0.0 <= grade.score <= 1.0:
            raise AssertionError(f"score {grade.score!r} is not in [0, 1]: evalhost fails it as bad output")
        return grade

    def score(self, assertion_type: str, output: str, config: dict, **request) -> float:
        """The score of ``output``."""
        return float(self.grade(assertion_type, output, config, **request).score)

    def error(self, assertion_type: str, output: str, config: dict, **request) -> GradeError:
        """The grade error ``output`` gets (an AssertionError when it grades)."""
        try:
            self.grade(assertion_type, output, config, **request)
        except GradeError as error:
            return error
        raise AssertionError("it graded")
