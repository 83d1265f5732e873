"""Codex interaction tools: ``update_plan`` and ``request_user_input`` (octos §1.4).

Neither touches files or processes. ``update_plan`` keeps the current plan on the session's
``ToolContext.state`` (key :data:`PLAN_STATE_KEY`) and echoes it once (octos nests the whole
argument object as ``plan.plan``; we do not). ``request_user_input`` asks through
``ToolContext.user_input``; without that callback it returns a typed ``unavailable`` result
saying that no channel is attached, instead of pretending a person answered.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..context import ToolContext
from ..errors import ErrorKind, ToolError
from ..tool import ConcurrencyClass, JSONObject, Tool, ToolResult

if TYPE_CHECKING:
    from ..registry import ToolRegistry
    from ..workspace import Workspace

__all__ = [
    "PLAN_STATE_KEY",
    "PLAN_STATUSES",
    "RequestUserInputTool",
    "UpdatePlanTool",
    "register",
]

#: Where ``update_plan`` stores ``{"explanation", "plan"}`` in ``ToolContext.state``.
PLAN_STATE_KEY = "plan"
#: Step statuses (Codex ``update_plan``).
PLAN_STATUSES = ("pending", "in_progress", "completed")
_MARK = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


class UpdatePlanTool(Tool):
    """``update_plan {explanation?, plan: [{step, status}]}`` (Codex P0).

    At most one step may be ``in_progress``. The plan replaces the previous one in
    ``ctx.state["plan"]``; the result lists it once, and ``structured_metadata`` carries
    ``{"codex_tool", "explanation", "plan"}``.
    """

    name = "update_plan"
    title = "Update the plan"
    description = (
        "Record the task plan: a list of steps, each pending, in_progress or completed "
        "(at most one in_progress). Send the whole plan each time; it replaces the last one."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "explanation": {"type": "string", "description": "Why the plan changed (optional)."},
            "plan": {
                "type": "array",
                "description": "The steps, in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "string", "description": "What to do."},
                        "status": {"type": "string", "enum": list(PLAN_STATUSES)},
                    },
                    "required": ["step", "status"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["plan"],
        "additionalProperties": False,
    }
    tags = ("code",)
    concurrency_class = ConcurrencyClass.SAFE

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        steps: list[dict[str, str]] = []
        for i, item in enumerate(args["plan"], 1):
            step = str(item["step"]).strip()
            status = str(item["status"])
            if not step:
                raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"plan step {i} has an empty 'step'")
            if status not in PLAN_STATUSES:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"plan step {i}: status must be one of {', '.join(PLAN_STATUSES)}",
                )
            steps.append({"step": step, "status": status})
        active = [i for i, s in enumerate(steps, 1) if s["status"] == "in_progress"]
        if len(active) > 1:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"only one step may be in_progress; steps {', '.join(map(str, active))} are",
            )
        explanation = args.get("explanation")
        plan: JSONObject = {"explanation": explanation, "plan": steps}
        ctx.state[PLAN_STATE_KEY] = plan
        done = sum(1 for s in steps if s["status"] == "completed")
        if steps:
            lines = [f"Plan updated ({done}/{len(steps)} completed):"]
        else:
            lines = ["Plan cleared: it has no steps now."]
        if explanation:
            lines.insert(0, str(explanation))
        lines.extend(f"{_MARK[s['status']]} {s['step']}" for s in steps)
        return ToolResult.ok(
            "\n".join(lines),
            structured_metadata={"codex_tool": self.name, **plan},
        )


class RequestUserInputTool(Tool):
    """``request_user_input`` (Codex P0): ask the person through ``ctx.user_input``.

    Accepts Codex's ``questions`` list (each ``{id?, header?, question, options?}``) or a
    plain ``prompt``. The callback receives the validated arguments and its answer is
    returned as JSON. With no callback the result is a failure of kind ``unavailable`` whose
    metadata says ``host_response_channel: not_attached``.
    """

    name = "request_user_input"
    title = "Ask the user"
    description = (
        "Ask the user one or more questions and wait for the answer. Use only when you "
        "cannot proceed without their decision."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "A single question."},
            "questions": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "header": {"type": "string"},
                        "question": {"type": "string"},
                        "options": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {"type": "string"},
                                    "description": {"type": "string"},
                                },
                                "required": ["label"],
                                "additionalProperties": False,
                            },
                        },
                        "multi_select": {"type": "boolean"},
                    },
                    "required": ["question"],
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    }
    tags = ("code",)
    concurrency_class = ConcurrencyClass.SAFE
    blocks_on_human_input = True

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        prompt = args.get("prompt")
        questions = args.get("questions")
        if not questions and not (isinstance(prompt, str) and prompt.strip()):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "request_user_input needs 'prompt' or 'questions'"
            )
        request: JSONObject = dict(args)
        if ctx.user_input is None:
            return ToolResult.failure(
                ErrorKind.UNAVAILABLE,
                "no user-input channel is attached to this session, so nobody can answer; "
                "continue with your best judgement or state the question in your reply",
                metadata={
                    "codex_tool": self.name,
                    "status": "requested",
                    "request": request,
                    "host_response_channel": "not_attached",
                },
            )
        answer: Any = await ctx.user_input(request)
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return ToolResult.ok(
            text,
            structured_metadata={
                "codex_tool": self.name,
                "status": "answered",
                "request": request,
                "response": answer,
                "host_response_channel": "attached",
            },
        )


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``update_plan`` and ``request_user_input`` (octos §1.1 #5, #6)."""
    registry.register(UpdatePlanTool())
    registry.register(RequestUserInputTool())
