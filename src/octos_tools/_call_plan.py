"""Call plans: what the pipeline decides once per tool name and session view, not per call.

For a name that is registered, allowed by the registry's policies, not deferred in the view,
not spawn-only and typed (its arguments validated by pydantic), the policy verdict, the
deferral state, the lookup, the arguments model and the way to run the tool do not change
between two changes of the registry or the view. A :class:`CallPlan` holds them; the view
keeps one per name (``ToolView.plans``, :mod:`octos_tools.view`) and drops them all at every
change of the view (activation, eviction, hiding, and every registry mutation, which
reaches each view through ``ToolView.registry_changed``). Everything a call may change on its
own is still checked per call by the pipeline: the context's permissions, the argument
size, the tool's concurrency class, timeout and output cap, the lock.

A plan also knows whether the tool's coroutine can suspend at all. A coroutine function
whose code has no suspension point (no ``await``, ``async for`` or ``async with``: no
``YIELD_VALUE`` instruction in its own code) finishes in its first step, so there is nothing
a timeout could stop (asyncio cannot interrupt a running step either): the pipeline awaits
it directly, with no timer and no first-step probe. Any other tool runs under its timeout
as before.

A plan holds the tool object and, for an inline tool, its function: a tool whose ``fn`` or
``run`` is replaced in place after its first call (rather than registered again) keeps
running the old one until the next change of the registry or the view.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from functools import lru_cache
from inspect import CO_COROUTINE
from typing import TYPE_CHECKING, Any

from .tool_types import Tool
from .typed import ToolArgs, TypedTool

if TYPE_CHECKING:
    from .view import ToolView

__all__ = ["MAX_PLANS", "CallPlan", "never_suspends", "plan_call"]

MAX_PLANS = 4096
"""At most this many names get a plan per view (a model inventing names cannot grow it)."""


class CallPlan:
    """How the pipeline runs one allowed, visible-or-hidden, typed tool of one view.

    Attributes:
        tool: the registered tool.
        validate_json: validates the raw JSON text: into an ``Args`` instance, or (when
            :attr:`fields_only`) into pydantic's ``(fields, extra, fields_set)`` triple of
            the same model (the model's own field schema and config, without building the
            instance: a function tool only needs the keyword arguments).
        fields_only: see :attr:`validate_json`.
        fn: for a function tool whose coroutine never suspends, the function itself
            (called with the validated fields as keywords); else ``None``.
        run: for a typed tool whose ``run`` never suspends, the bound ``run``; else
            ``None``.
        context_params: the function's parameters that receive the ``ToolContext``.
        inline: :attr:`fn` or :attr:`run` is set: the call runs inline (no timer).
    """

    __slots__ = ("context_params", "fields_only", "fn", "inline", "run", "tool", "validate_json")

    def __init__(
        self,
        tool: Tool,
        validate_json: Callable[[str], Any],
        *,
        fields_only: bool = False,
        fn: Callable[..., Any] | None = None,
        run: Callable[..., Any] | None = None,
        context_params: tuple[str, ...] = (),
    ) -> None:
        self.tool = tool
        self.validate_json = validate_json
        self.fields_only = fields_only
        self.fn = fn
        self.run = run
        self.context_params = context_params
        self.inline = fn is not None or run is not None


@lru_cache(maxsize=1024)
def _code_never_suspends(code: types.CodeType) -> bool:
    import opcode

    # Wordcode: every instruction (and inline cache entry) is two bytes, opcode first.
    return (
        bool(code.co_flags & CO_COROUTINE)
        and opcode.opmap["YIELD_VALUE"] not in (code.co_code[::2])
    )


def never_suspends(fn: object) -> bool:
    """Whether ``fn`` is an ``async def`` function whose coroutine cannot suspend: its own
    code has no ``await``, ``async for`` or ``async with`` (a coroutine suspends only at a
    ``YIELD_VALUE`` of its own frame). Such a coroutine finishes in its first step."""
    return type(fn) is types.FunctionType and _code_never_suspends(fn.__code__)


def _fields_validator(model: type[ToolArgs]) -> Callable[[str], Any] | None:
    """``validate_json`` of the model's field schema alone (same fields, same config), or
    ``None`` when the model does more than validate its fields (a model validator, a
    ``model_post_init``, shared definitions)."""
    from pydantic_core import SchemaValidator

    schema: Any = model.__pydantic_core_schema__
    if not isinstance(schema, dict) or schema.get("type") != "model":
        return None
    if schema.get("post_init") or schema.get("custom_init") or schema.get("root_model"):
        return None
    fields = schema.get("schema")
    if not isinstance(fields, dict) or fields.get("type") != "model-fields":
        return None
    return SchemaValidator(fields, schema.get("config")).validate_json  # type: ignore[arg-type]


def plan_call(view: ToolView, name: str) -> CallPlan | None:
    """The plan for calls of ``name`` in ``view``, stored in the view; ``None`` (also
    stored) when the call goes the general way: unknown, refused by a policy, deferred,
    spawn-only or not typed."""
    from .function_tool import FunctionTool

    registry = view.registry
    plan: CallPlan | None = None
    tool = registry.get(name)
    if (
        tool is not None
        and not registry.is_spawn_only(name)
        and not view.is_deferred(name)
        and registry.evaluate(name).allowed
    ):
        model = registry.args_model(tool)
        if model is not None:
            validate = model.__pydantic_validator__.validate_json  # builds a deferred model
            if (
                isinstance(tool, FunctionTool)
                and type(tool).run is FunctionTool.run
                and never_suspends(tool.fn)
            ):
                fields = _fields_validator(model)
                plan = CallPlan(
                    tool,
                    validate if fields is None else fields,
                    fields_only=fields is not None,
                    fn=tool.fn,
                    context_params=tool.context_params,
                )
            elif isinstance(tool, TypedTool) and never_suspends(type(tool).run):
                plan = CallPlan(tool, validate, run=tool.run)
            else:
                plan = CallPlan(tool, validate)
    plans = view.plans
    if len(plans) < MAX_PLANS:
        plans[name] = plan
    return plan
