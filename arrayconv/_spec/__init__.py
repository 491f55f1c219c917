"""Turning arguments into a :class:`~arrayconv._spec.problem.Problem`: shapes, edges, NaN rules."""
