"""The package's layering: no import cycle between arrayconv's modules, and modules outside
``arrayconv._methods`` reach the methods only through that package's own names; and the
model's weights kept as data."""

import ast
import pathlib

import arrayconv

ROOT = pathlib.Path(arrayconv.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    parts = ("arrayconv", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in ROOT.rglob("*.py")}


def _imports(name: str) -> set[str]:
    """The arrayconv modules that module `name` imports (a name imported from a package
    counts as the submodule of that name where there is one, else as the package)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([package.rsplit(".", node.level - 1)[0] if node.level > 1 else package, *([base] if base else [])])
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name) for name in MODULES}


def test_the_import_graph_is_read():
    assert "arrayconv._methods.direct" in GRAPH["arrayconv._methods"]
    assert "arrayconv._methods._registry" in GRAPH["arrayconv._methods.fft"]
    assert "arrayconv._methods" in GRAPH["arrayconv._plan.plan"]


def test_no_import_cycle():
    def cycle_from(start: str) -> list[str] | None:
        path, seen = [start], {start}
        stack = [iter(sorted(GRAPH[start]))]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                seen.discard(path.pop())
            elif step == start:
                return [*path, start]
            elif step not in seen and step > start:  # each cycle once, from its smallest module
                path.append(step)
                seen.add(step)
                stack.append(iter(sorted(GRAPH[step])))
        return None

    cycles = [c for c in map(cycle_from, sorted(GRAPH)) if c]
    assert not cycles, " -> ".join(cycles[0])


def test_methods_reached_through_their_package():
    reaching_in = {
        (name, target)
        for name, targets in GRAPH.items()
        if not name.startswith("arrayconv._methods")
        for target in targets
        if target.startswith("arrayconv._methods.")
    }
    assert not reaching_in


# Each layer imports only layers after it here; the public namespaces sit above them all.
LAYERS = ["_api", "_io", "_plan", "_choose", "_methods", "_spec", "_runtime"]


def _layer(name: str) -> int:
    parts = name.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else -1


def test_layers_import_downward():
    upward = sorted((name, target) for name, targets in GRAPH.items() for target in targets if _layer(target) < _layer(name))
    assert not upward, upward
    assert {_layer(name) for name in MODULES} == set(range(-1, len(LAYERS)))


def test_every_fitted_weight_says_where_it_came_from_and_is_read():
    """The model's weights in ``_runtime/fitted.json``: each a value and its source, each
    read by a module (a weight no code reads is dead)."""
    from arrayconv._runtime.fitted import table

    weights = {group: names for group, names in table().items() if group != "about"}
    assert weights
    code = "\n".join(path.read_text() for path in MODULES.values())
    for group, names in weights.items():
        for name, entry in names.items():
            assert set(entry) == {"value", "source"} and len(entry["source"]) > 40, (group, name, entry)
            assert f'fitted("{group}", "{name}")' in code, f"{group}.{name} is read by no module"
