"""Codex interaction tools: ``update_plan`` and ``request_user_input`` (octos
``crates/octos-agent/src/tools/coding_tools.rs``).

Neither touches files or processes. ``update_plan`` keeps the current plan on the session's
``ToolContext.state`` (key :data:`PLAN_STATE_KEY`) and echoes it once (octos nests the whole
argument object as ``plan.plan``; we do not). ``request_user_input`` asks through
``ToolContext.user_input``; without that callback it returns a typed ``unavailable`` result
saying that no channel is attached, instead of pretending a person answered.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ...config import Config
from ...context import ToolContext
from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs, TypedTool

if TYPE_CHECKING:
    from ...registry import ToolRegistry
    from ...workspace import Workspace

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


class PlanStep(ToolArgs):
    """One step of a plan."""

    step: str = Field(description="What to do.")
    status: Literal["pending", "in_progress", "completed"] = Field(description="Its state.")


class UpdatePlanTool(TypedTool):
    """``update_plan {explanation?, plan: [{step, status}]}`` (Codex ``update_plan``).

    At most one step may be ``in_progress``. The plan replaces the previous one in
    ``ctx.state["plan"]``; the result lists it once, and ``structured_metadata`` carries
    ``{"codex_tool", "explanation", "plan"}``.
    """

    name = "update_plan"
    title = "Update the plan"
    description = "Record the task plan: every step each time, at most one in_progress."
    tags = ("code",)
    concurrency_class = ConcurrencyClass.SAFE

    class Args(ToolArgs):
        explanation: str | None = Field(None, description="Why it changed.")
        plan: list[PlanStep] = Field(description="Every step, in order.")

    async def run(self, args: UpdatePlanTool.Args, ctx: ToolContext | None) -> ToolResult:
        steps: list[dict[str, str]] = []
        for i, item in enumerate(args.plan, 1):
            step = item.step.strip()
            if not step:
                raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"plan step {i} has an empty 'step'")
            steps.append({"step": step, "status": item.status})
        active = [i for i, s in enumerate(steps, 1) if s["status"] == "in_progress"]
        if len(active) > 1:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"only one step may be in_progress; steps {', '.join(map(str, active))} are",
            )
        explanation = args.explanation
        plan: JSONObject = {"explanation": explanation, "plan": steps}
        if ctx is not None:
            ctx.state[PLAN_STATE_KEY] = plan
        done = sum(1 for s in steps if s["status"] == "completed")
        if steps:
            lines = [f"Plan updated ({done}/{len(steps)} completed):"]
        else:
            lines = ["Plan cleared: it has no steps now."]
        if explanation:
            lines.insert(0, explanation)
        lines.extend(f"{_MARK[s['status']]} {s['step']}" for s in steps)
        return ToolResult.ok(
            "\n".join(lines),
            structured_metadata={"codex_tool": self.name, **plan},
        )


class QuestionOption(ToolArgs):
    """One choice offered with a question."""

    label: str = Field(description="The choice.")
    description: str | None = Field(None, description="What it means.")


class Question(ToolArgs):
    """One question of ``request_user_input``."""

    id: str | None = Field(None, description="Answer key.")
    header: str | None = Field(None, description="Short title.")
    question: str = Field(description="The question.")
    options: list[QuestionOption] | None = Field(None, description="Choices offered.")
    multi_select: bool | None = Field(None, description="Several choices allowed.")


class RequestUserInputTool(TypedTool):
    """``request_user_input`` (Codex): ask the person through ``ctx.user_input``.

    Accepts Codex's ``questions`` list (each ``{id?, header?, question, options?}``) or a
    plain ``prompt``. The callback receives the arguments as sent (nulls dropped) and its
    answer is returned as text (JSON when it is not a string). With no callback the result
    is a failure of kind ``unavailable`` whose metadata says
    ``host_response_channel: not_attached``.
    """

    name = "request_user_input"
    title = "Ask the user"
    description = (
        "Ask the user one or more questions and wait for the answer. Use only when you "
        "cannot proceed without their decision."
    )
    tags = ("code",)
    concurrency_class = ConcurrencyClass.SAFE
    blocks_on_human_input = True

    class Args(ToolArgs):
        prompt: str | None = Field(None, description="A single question.")
        questions: list[Question] | None = Field(
            None, min_length=1, description="Questions asked together."
        )

    async def run(self, args: RequestUserInputTool.Args, ctx: ToolContext | None) -> ToolResult:
        prompt = args.prompt
        if not args.questions and not (prompt and prompt.strip()):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "request_user_input needs 'prompt' or 'questions'"
            )
        request: JSONObject = args.model_dump(exclude_none=True)
        callback = ctx.user_input if ctx is not None else None
        if callback is None:
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
        answer: Any = await callback(request)
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
    """Register ``update_plan`` and ``request_user_input``."""
    registry.register(UpdatePlanTool())
    registry.register(RequestUserInputTool())
