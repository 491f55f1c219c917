"""The automatic method choice: a cost model over the registered methods."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ._backend import Backend
from ._methods import METHODS, Cost
from ._problem import Problem
from ._rates import CPU_RATES, Rates


@dataclass(frozen=True, slots=True)
class Choice:
    """The method ``method='auto'`` runs, and why.

    Attributes
    ----------
    method : str
        The chosen method.
    estimates : dict of str to Cost
        Estimated cost of each method that can run.
    rejected : dict of str to str
        Why each other method cannot run.
    reason : str
        One line on why `method` won.
    """

    method: str
    estimates: dict[str, Cost]
    rejected: dict[str, str]
    reason: str

    def __repr__(self) -> str:
        lines = [f"Choice(method={self.method!r}): {self.reason}", "  method    est. time   temp memory"]
        for name, cost in sorted(self.estimates.items(), key=lambda kv: kv[1].seconds):
            mark = "*" if name == self.method else " "
            lines.append(
                f"{mark} {name:<8} {cost.seconds * 1e3:9.2f} ms {cost.temp_bytes / 2**20:10.1f} MiB"
            )
        lines += [f"  {name:<8} cannot run: {why}" for name, why in self.rejected.items()]
        return "\n".join(lines)


def rates_for(backend: Backend) -> Rates:
    """Rates of the machine behind `backend`."""
    return CPU_RATES


def choose(
    problem: Problem,
    backend: Backend,
    memory_limit: int,
    excluded: Mapping[str, str] | None = None,
) -> Choice:
    """Pick the fastest method for `problem` within `memory_limit`; never raises.

    Methods in `excluded` (name -> reason) are not considered. If no method fits the
    budget, the one with the smallest temporaries is chosen.
    """
    rejected = dict(excluded or {})
    for name, method in METHODS.items():
        if name not in rejected and (why := method.unsupported(problem, backend, memory_limit)):
            rejected[name] = why
    rates = rates_for(backend)
    estimates = {
        name: method.cost(problem, rates)
        for name, method in METHODS.items()
        if name not in (excluded or {})
    }
    fitting = {name: cost for name, cost in estimates.items() if name not in rejected}
    if fitting:
        best = min(fitting, key=lambda name: fitting[name].seconds)
        reason = "fastest estimate within the memory budget"
    else:
        best = min(estimates, key=lambda name: estimates[name].temp_bytes)
        reason = f"no method fits memory_limit={memory_limit}; smallest temporaries"
    return Choice(best, estimates, rejected, reason)
