"""Choosing a method: the cost model over the registered methods, and the machine's rates."""
