"""The package's shape (issue 58): no import cycles, no module importing another's underscore names,
modules readable at once, functions outside kernel bodies short. Read from the source, nothing run."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "fa_ck"
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 100
MAX_KERNEL_ARGS = 32           # runtime (not constexpr) arguments of a launched kernel
KERNEL_DECORATORS = ("triton.jit", "gluon.jit", "jit")
EXTENSIONS = {"fa_ck._ck"}      # the compiled CK extension (setup.py): a module, imported by backends/ck.py alone


def _modules() -> dict:
    """{dotted name: (path, parsed tree)} of every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = (path, ast.parse(path.read_text(), str(path)))
    return found


MODULES = _modules()


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imports(name: str, path: Path, tree) -> list:
    """(imported module, imported names, line, at module level) of each import of a fa_ck module."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = _package_of(name, path).split(".")
                base = ".".join(pkg[:len(pkg) - node.level + 1] + ([base] if base else []))
            if not base.startswith("fa_ck"):
                continue
            top = node in tree.body or any(node in getattr(n, "body", []) for n in tree.body if isinstance(n, ast.Try))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if sub in MODULES or sub in EXTENSIONS else base
                out.append((target, [] if target == sub else [alias.name], node.lineno, top))
        elif isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno, node in tree.body) for a in node.names if a.name.startswith("fa_ck")]
    return out


def test_no_module_imports_another_modules_underscore_names():
    bad = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {names} from {target}"
           for name, (path, tree) in MODULES.items()
           for target, names, line, _ in _imports(name, path, tree)
           if target != name and any(n.startswith("_") for n in names)]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    """Imports between the package's modules (inside functions too) form no cycle; a module importing
    the package it lies in (its __init__) is not an edge back."""
    graph = {name: set() for name in MODULES}
    for name, (path, tree) in MODULES.items():
        for target, _, _, top in _imports(name, path, tree):
            if target in MODULES and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"
    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_are_readable_at_once(name):
    path, _ = MODULES[name]
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES


def test_functions_outside_kernel_bodies_are_short():
    long = []
    for name, (path, tree) in MODULES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = [ast.unparse(d) for d in node.decorator_list]
                if any(d.endswith(KERNEL_DECORATORS) or ".jit(" in d for d in decorators):
                    continue
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "\n".join(long)


def _is_kernel(node) -> bool:
    decorators = [ast.unparse(d) for d in node.decorator_list]
    return any(d.endswith(KERNEL_DECORATORS) or ".jit(" in d for d in decorators)


def _runtime_params(node) -> list:
    """A kernel's parameters that are not constexprs (annotated `tl.constexpr` / `gl.constexpr`)."""
    args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    return [a.arg for a in args if not (a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr"))]


def test_kernels_take_a_tensors_strides_as_one_argument():
    """Launched kernels (public jit functions) take each tensor's strides as one tuple, not one
    argument per stride, and fit MAX_KERNEL_ARGS runtime arguments."""
    kernels = [(name, node) for name, (_, tree) in MODULES.items() for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and _is_kernel(node) and not node.name.startswith("_")
               and node.name.endswith(("_kernel", "preprocess"))]
    assert len(kernels) >= 8
    wide = [f"{name}.{node.name}: {len(_runtime_params(node))} runtime arguments" for name, node in kernels
            if len(_runtime_params(node)) > MAX_KERNEL_ARGS]
    per_stride = [f"{name}.{node.name}: {p}" for name, node in kernels for p in _runtime_params(node)
                  if p.startswith("stride_") and p not in ("stride_sb",)]
    assert not wide and not per_stride, "\n".join(wide + per_stride)
