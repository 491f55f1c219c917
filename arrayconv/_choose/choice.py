"""The automatic method choice: a cost model over the registered methods, or measurement."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from .._methods import METHODS, Cost
from .._runtime import config as _config
from .._runtime.backend import Backend
from .._runtime.cache import LRUCache
from .._runtime.config import Settings
from .._runtime.rates import Rates, cache_dir, rates_for
from .._spec.problem import Problem

# With measure=True, candidates estimated slower than this many times the best are not run.
MEASURE_WITHIN = 10.0
# A plain call that keeps its plan (arrayconv._plan.kept) takes the fastest method per later call among
# those whose one call is estimated within this factor of the fastest (bench.sweep judges it).
KEPT_WITHIN = 1.25
# ... or within this many seconds of it and at most twice it: on small problems a first call
# slower by a fraction of a millisecond goes unnoticed, while a loop gains on every call.
KEPT_EXTRA = 2e-4

# What a choice is for: one plain call; a plain call that keeps its plan; a plan's calls.
Calls = Literal["one", "kept", "plan"]


class MemoryLimitWarning(UserWarning):
    """No method fits the memory budget: ``method='auto'`` runs the one with the smallest
    temporaries, over the budget (raise ``memory_limit``, or stream the input with
    :func:`arrayconv.correlate_into`)."""


_measured = LRUCache("measured_methods", maxsize=1024)
_estimated = LRUCache("estimated_choices", maxsize=1024)


@dataclass(frozen=True, slots=True)
class Choice:
    """The method ``method='auto'`` runs, and why.

    Attributes
    ----------
    method : str
        The chosen method.
    estimates : dict of str to Cost
        Estimated time and temporary memory of each method considered.
    rejected : dict of str to str
        Why each other method cannot run.
    reason : str
        One line on why `method` won.
    measured : dict of str to float
        Seconds measured for each candidate, when the choice was measured.
    calls : {'one', 'kept', 'plan'}
        What the choice is for. 'one': a plain call, ranked by its whole time. 'kept': a
        plain call that keeps its plan: of the methods whose one call is estimated within
        :data:`KEPT_WITHIN` times the fastest (or :data:`KEPT_EXTRA` seconds and twice
        it), the fastest per later call. 'plan': a plan's calls, each method's kernel form
        made once, ranked by :func:`per_call` time.
    """

    method: str
    estimates: dict[str, Cost]
    rejected: dict[str, str]
    reason: str
    measured: dict[str, float] = field(default_factory=dict)
    calls: Calls = "one"

    def __repr__(self) -> str:
        kept, plan = self.calls == "kept", self.calls == "plan"
        later = "   later calls" if kept else ""
        lines = [
            f"Choice(method={self.method!r}): {self.reason}",
            f"  method    est. time{later}   temp memory   measured",
        ]
        for name, cost in sorted(self.estimates.items(), key=lambda kv: per_call(kv[1], plan)):
            mark = "*" if name == self.method else " "
            seen = f"{self.measured[name] * 1e3:9.2f} ms" if name in self.measured else ""
            each = f" {per_call(cost, True) * 1e3:10.2f} ms" if kept else ""
            row = f"{mark} {name:<8} {per_call(cost, plan) * 1e3:9.2f} ms{each} {cost.temp_bytes / 2**20:10.1f} MiB {seen}"
            lines.append(row.rstrip())
            lines += [f"      {form:<22} {seconds * 1e3:9.2f} ms" for form, seconds in cost.forms if len(cost.forms) > 1]
        lines += [f"  {name:<8} cannot run: {why}" for name, why in self.rejected.items()]
        return "\n".join(lines)


def per_call(cost: Cost, later: bool) -> float:
    """Seconds of one call: all of `cost`, or for a later call all but the kernel's form."""
    return cost.seconds - cost.prepare_seconds if later else cost.seconds


def choose(
    problem: Problem,
    backend: Backend,
    memory_limit: int,
    excluded: Mapping[str, str] | None = None,
    *,
    calls: Calls = "one",
) -> Choice:
    """Pick the fastest method for `problem` within `memory_limit`; never raises.

    Methods in `excluded` (name -> reason) are not considered. `calls` says what the
    choice is for (:attr:`Choice.calls`): for a plan's calls each method's kernel form is
    made once, so methods rank by their time per call without it; a plain call that keeps
    its plan ranks them so among those whose one call is estimated within
    :data:`KEPT_WITHIN` times the fastest (or :data:`KEPT_EXTRA` seconds and twice it). If
    no method fits the budget, the one with the smallest temporaries is chosen. Choices are
    cached by backend, device, problem, budget, exclusions, rates, workers (the estimates'
    threads) and `calls`.
    """
    rates, settings = rates_for(backend), Settings(_config.workers(), memory_limit)
    key = (backend.name, backend.device, problem, settings, tuple(sorted((excluded or {}).items())), rates, calls)
    return _estimated.get_or_make(key, lambda: _estimate(problem, backend, settings, excluded, rates, calls))


def _estimate(
    problem: Problem,
    backend: Backend,
    settings: Settings,
    excluded: Mapping[str, str] | None,
    rates: Rates,
    calls: Calls,
) -> Choice:
    rejected = dict(excluded or {})
    for name, method in METHODS.items():
        if name not in rejected and (why := method.unsupported(problem, backend, settings.budget)):
            rejected[name] = why
    estimates = {
        name: method.cost(problem, backend, rates, settings)
        for name, method in METHODS.items()
        if name not in (excluded or {})
    }
    fitting = {name: cost for name, cost in estimates.items() if name not in rejected}
    if fitting and calls == "kept":
        fastest = min(cost.seconds for cost in fitting.values())
        extra = min(KEPT_EXTRA, fastest)  # within KEPT_EXTRA and 2x
        near = {name: cost for name, cost in fitting.items() if cost.seconds <= max(KEPT_WITHIN * fastest, fastest + extra)}
        best = min(near, key=lambda name: per_call(near[name], True))
        reason = (
            f"fastest estimate per later call (the plan is kept, with its kernel form) of those within "
            f"{KEPT_WITHIN}x (or {KEPT_EXTRA * 1e3:g} ms and 2x) of the fastest one call, within the memory budget"
        )
    elif fitting:
        best = min(fitting, key=lambda name: per_call(fitting[name], calls == "plan"))
        reason = f"fastest estimate{' per repeated call (the kernel form made once)' if calls == 'plan' else ''} within the memory budget"
    else:
        best = min(estimates, key=lambda name: estimates[name].temp_bytes)
        reason = f"no method fits memory_limit={settings.budget}; smallest temporaries"
    return Choice(best, estimates, rejected, reason, calls=calls)


def measured_choice(
    estimated: Choice,
    problem: Problem,
    backend: Backend,
    time_method: Callable[[str], float],
    *,
    disk: bool = False,
) -> Choice:
    """Time the viable candidates once with ``time_method(name)`` and keep the fastest.

    Viable: within the memory budget and estimated at most :data:`MEASURE_WITHIN` times
    the best estimate (per call, for a plan's choice). The winner is cached by backend,
    device, problem and whether it is a plan's, in memory and, with `disk`, in
    ``measured.json`` of :func:`~arrayconv._runtime.rates.cache_dir`.
    """
    key = f"{backend.name}:{backend.device}:{problem!r}:{sorted(estimated.rejected)}{':plan' if estimated.calls == 'plan' else ''}"
    known = _measured.get(key) or (_read_disk().get(key) if disk else None)
    if known in METHODS and known not in estimated.rejected:
        _measured.put(key, known)
        return replace(estimated, method=known, reason="measured earlier on this machine (cached)")
    fitting = {n: per_call(c, estimated.calls == "plan") for n, c in estimated.estimates.items() if n not in estimated.rejected}
    if len(fitting) < 2:
        return estimated
    best_estimate = min(fitting.values())
    candidates = [n for n, s in fitting.items() if s <= MEASURE_WITHIN * best_estimate]
    seconds = {name: time_method(name) for name in candidates}
    winner = min(seconds, key=seconds.__getitem__)
    _measured.put(key, winner)
    if disk:
        _write_disk(key, winner)
    reason = f"fastest of {len(seconds)} measured candidates"
    return replace(estimated, method=winner, reason=reason, measured=seconds)


def _disk_file():
    return cache_dir() / "measured.json"


def _read_disk() -> dict[str, str]:
    try:
        return json.loads(_disk_file().read_text())
    except (OSError, ValueError):
        return {}


def _write_disk(key: str, method: str) -> None:
    path = _disk_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    known = _read_disk()
    known[key] = method
    tmp = path.with_suffix(f".{id(known)}.tmp")
    tmp.write_text(json.dumps(known, indent=0))
    tmp.replace(path)
