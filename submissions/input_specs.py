"""The dtypes and shapes of a sample's inputs, for the dataset's metadata.

The site never imports torch, nor runs bundle code: it reads them from a run's result where the agent
reported them (`result["inputs"]`: [{"dtype": "float32", "shape": [16, 16]}, ...]), and otherwise from the
reference's source, where `get_inputs()` returns tensors made by torch's factories (`torch.randn(batch,
dim)`, `torch.rand(..., dtype=torch.float16)`, `torch.randint(0, 10, (n,))`) with sizes that are numbers or
module-level constants. Anything else (a loop, a helper, a computed size) gives None: nothing is guessed.
"""
import ast

# Factories whose positional arguments are the sizes, and the dtype each makes when none is given.
SIZE_FACTORIES = {"randn": "float32", "rand": "float32", "zeros": "float32", "ones": "float32", "empty": "float32"}
DTYPE_NAMES = {
    "float": "float32", "float32": "float32", "float16": "float16", "half": "float16", "bfloat16": "bfloat16",
    "float64": "float64", "double": "float64", "int8": "int8", "uint8": "uint8", "int16": "int16", "short": "int16",
    "int32": "int32", "int": "int32", "int64": "int64", "long": "int64", "bool": "bool",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2", "complex64": "complex64",
}


def from_result(result):
    """The inputs an agent reported in a run's result, checked; None when absent or malformed."""
    inputs = (result or {}).get("inputs")
    if not isinstance(inputs, list):
        return None
    specs = []
    for item in inputs:
        if not isinstance(item, dict):
            return None
        dtype, shape = item.get("dtype"), item.get("shape")
        if not isinstance(dtype, str) or not isinstance(shape, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            return None
        specs.append({"dtype": dtype, "shape": list(shape)})
    return specs


class _Unknown(Exception):
    pass


def _constants(tree):
    """Module-level `name = <integer expression>` assignments, in order."""
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = _integer(node.value, values)
            except _Unknown:
                values.pop(node.targets[0].id, None)
    return values


def _integer(node, names):
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.FloorDiv, ast.Pow)):
        left, right = _integer(node.left, names), _integer(node.right, names)
        if isinstance(node.op, ast.Pow) and (right < 0 or right > 64):
            raise _Unknown
        result = {ast.Mult: lambda: left * right, ast.Add: lambda: left + right, ast.Sub: lambda: left - right,
                  ast.FloorDiv: lambda: left // right if right else None, ast.Pow: lambda: left ** right}[type(node.op)]()
        if result is None or result < 0 or result > 2**48:
            raise _Unknown
        return result
    raise _Unknown


def _sizes(args, names):
    """Sizes given as separate numbers (randn(4, 8)) or as one tuple or list (randn((4, 8)))."""
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = args[0].elts
    return [_integer(a, names) for a in args]


def _dtype(call, default):
    for keyword in call.keywords:
        if keyword.arg == "dtype":
            node = keyword.value
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch" \
                    and node.attr in DTYPE_NAMES:
                return DTYPE_NAMES[node.attr]
            raise _Unknown
    return default


def _tensor(node, names):
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"):
        raise _Unknown
    factory = node.func.attr
    if factory in SIZE_FACTORIES:
        return {"dtype": _dtype(node, SIZE_FACTORIES[factory]), "shape": _sizes(node.args, names)}
    if factory == "randint":
        size = next((k.value for k in node.keywords if k.arg == "size"), node.args[-1] if node.args else None)
        if not isinstance(size, (ast.Tuple, ast.List)):
            raise _Unknown
        return {"dtype": _dtype(node, "int64"), "shape": _sizes([size], names)}
    if factory == "full" and node.args and isinstance(node.args[0], (ast.Tuple, ast.List)):
        return {"dtype": _dtype(node, "float32"), "shape": _sizes([node.args[0]], names)}
    raise _Unknown


def from_source(source):
    """The inputs `get_inputs()` of a reference's source returns, or None where they cannot be read
    without running it."""
    try:
        tree = ast.parse(source or "")
    except SyntaxError:
        return None
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    if function is None:
        return None
    names = _constants(tree)
    local = {}
    try:
        for statement in function.body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # a docstring
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                    and isinstance(statement.targets[0], ast.Name):
                target = statement.targets[0].id
                try:
                    names = {**names, target: _integer(statement.value, names)}
                except _Unknown:
                    local[target] = _tensor(statement.value, names)
                continue
            if isinstance(statement, ast.Return) and isinstance(statement.value, (ast.List, ast.Tuple)):
                return [local[e.id] if isinstance(e, ast.Name) and e.id in local else _tensor(e, names)
                        for e in statement.value.elts]
            raise _Unknown
    except _Unknown:
        return None
    return None
