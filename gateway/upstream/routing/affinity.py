"""Routing affinity: a turn goes where its prompt cache is, while that place is healthy.

A provider caches a prompt's prefix per account and per model: a chain that hops between
deployments and keys pays for its whole context on every hop. So a chain's turn goes
first to the deployment and key that answered its parent (the parent's recorded route,
read with the chain from the store every instance shares); a conversation's or a
``prompt_cache_key``'s turn to where the last one went (kept in the shared limits under
its name for ``routing.affinity_idle_seconds``). The affinity is soft: a target resting
(a cooldown) or no longer configured is passed over, a failing one is left as routing
leaves any; the turn goes where routing sends it, the move is logged and counted, and the
next turn sticks to the new place. Whatever the affinity, the deployments and keys that
can replay the request's account-bound items (:mod:`.bound_items`) come first.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from session import SessionError
from session.shared import SharedLimits

from ..results import Item
from .cooldowns import Cooldowns
from .routed import Attempt, Candidate

logger = logging.getLogger(__name__)


def target_of(candidate: Candidate) -> str:
    """How a deployment and key is named as an affinity's target."""
    return f"{candidate.route.deployment} {candidate.key_name}"


def route_target(route: Item | None) -> str | None:
    """The target a stored turn's route names: the deployment and key that answered it."""
    if not route or not route.get("answered_by") or not route.get("key"):
        return None
    return f"{route['answered_by']} {route['key']}"


def shared_name(kind: str, project: str, value: str, model: str = "") -> str:
    """The name an affinity is kept under: its kind, and a digest of what it is for."""
    digest = hashlib.sha256(f"{project}\0{model}\0{value}".encode()).hexdigest()[:32]
    return f"{kind}:{digest}"


@dataclass(frozen=True)
class Sticky:
    """Where a turn would rather go, known before routing: its ``target`` (from the
    ``source``: ``chain``, ``conversation`` or ``prompt_cache_key``), the shared names to
    keep its answer under, and the origin of its newest account-bound item."""

    source: str = ""
    target: str | None = None
    names: tuple[str, ...] = ()
    origin: str | None = None


def preferred(
    plans: list[list[Candidate]],
    sticky: Sticky,
    cooldowns: Cooldowns,
    origin_of: Callable[[Candidate], str],
) -> tuple[list[list[Candidate]], str | None]:
    """``plans`` reordered within each model: the target first unless it rests, then the
    candidates that can replay the bound items, then the rest in routing's order; and why
    the target does not lead (``None`` if it does, or there is none)."""
    reason = None
    if sticky.target is not None and not any(
        target_of(c) == sticky.target for plan in plans for c in plan
    ):
        reason = "gone"
    ordered: list[list[Candidate]] = []
    for plan in plans:
        if sticky.origin is not None:
            plan = [c for c in plan if origin_of(c) == sticky.origin] + [
                c for c in plan if origin_of(c) != sticky.origin
            ]
        target = next((c for c in plan if target_of(c) == sticky.target), None)
        if target is not None:
            resting = cooldowns.until(target.route.deployment) or cooldowns.until(target.key_name)
            if resting:
                reason = "cooldown"
            else:
                plan = [target, *(c for c in plan if c is not target)]
        ordered.append(plan)
    return ordered, reason


Observe = Callable[[str, str, str], None]
"""(source, outcome, model): counts an affinity's outcome."""


@dataclass
class TurnAffinity:
    """One turn's affinity: told which candidate answered, it records whether the turn
    stayed, logs and counts a move, and keeps the new target under the shared names."""

    sticky: Sticky
    reason: str | None
    shared: SharedLimits
    idle_seconds: float
    observe: Observe
    outcome: str = field(default="", init=False)
    answered_by: str | None = field(default=None, init=False)
    why: str | None = field(default=None, init=False)

    async def answered(self, candidate: Candidate, attempts: list[Attempt]) -> None:
        if self.answered_by is not None:
            return  # a later model call of the turn (the loop of tools the gateway runs)
        sticky, target = self.sticky, target_of(candidate)
        self.answered_by = target
        if sticky.target is None:
            self.outcome = "new"
        elif sticky.target == target:
            self.outcome = "kept"
        else:
            self.outcome = "moved"
            failed = [a.outcome for a in attempts if f"{a.deployment} {a.key}" == sticky.target]
            self.why = self.reason or (failed[-1] if failed else "routed elsewhere")
            logger.warning(
                "the %s affinity moved from %s to %s: %s", sticky.source, sticky.target, target,
                self.why,
            )  # fmt: skip
        if sticky.source:
            self.observe(sticky.source, self.outcome, candidate.model)
        now = time.time()
        for name in sticky.names:
            try:
                await self.shared.keep_affinity(name, target, now + self.idle_seconds, now)
            except SessionError as error:  # the next turn may then go elsewhere: no failure
                logger.warning("an affinity could not be kept: %s", error.message)

    def item(self) -> Item | None:
        """The affinity as the turn's route records it."""
        if not self.sticky.source:
            return None
        found: Item = {"source": self.sticky.source, "target": self.sticky.target}
        found["outcome"] = self.outcome or None
        if self.why is not None:
            found["reason"] = self.why
        return found
