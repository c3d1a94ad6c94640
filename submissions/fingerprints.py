"""Code fingerprints for abuse detection (pure functions, no database).

- The reference (`torchcode.py`) gets one hash of its normalized syntax tree: formatting,
  comments, docstrings and the names it defines do not change it; attributes (`torch.relu`) and
  constants (shapes) do, since they are the operator.
- The candidate gets a set of hashed token 5-grams with comments dropped and identifiers that are
  not CUDA/C++ keywords replaced by one placeholder, so renaming variables does not hide a copy.
"""
import ast
import hashlib
import re

SHINGLE_SIZE = 5
MAX_SHINGLES = 20000


class _CanonicalNames(ast.NodeTransformer):
    """Renames every name the code binds or reads to v0, v1, … in order of first appearance."""

    def __init__(self):
        self.names = {}

    def canonical(self, name):
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node):
        node.id = self.canonical(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.canonical(node.arg)
        node.annotation = None
        return node

    def _strip_docstring(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]

    def visit_FunctionDef(self, node):
        node.name = self.canonical(node.name)
        node.returns = None
        self._strip_docstring(node)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        node.name = self.canonical(node.name)
        self._strip_docstring(node)
        self.generic_visit(node)
        return node

    def visit_alias(self, node):
        node.asname = self.canonical(node.asname or node.name.split(".")[0])
        return node


def reference_fingerprint(source: str) -> str:
    """sha256 of the normalized tree; of the whitespace-collapsed text when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return hashlib.sha256(" ".join(source.split()).encode()).hexdigest()
    transformer = _CanonicalNames()
    transformer._strip_docstring(tree)
    tree = transformer.visit(tree)
    return hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest()


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/|#[^\n]*", re.S)
_TOKENS = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?[fF]?|<<<|>>>|->|\+\+|--|[-+*/%=<>!&|^]=?|\S")
_KEEP = set("""
__global__ __device__ __host__ __shared__ __syncthreads __restrict__ const float double int long unsigned
char bool void half auto if else for while do return break continue struct template typename sizeof
threadIdx blockIdx blockDim gridDim warpSize atomicAdd __shfl_down_sync __shfl_xor_sync fmaxf fminf
expf logf sqrtf rsqrtf tanhf max min torch Tensor at cuda def class self forward return import from
load_inline cpp_sources cuda_sources functions
""".split())


def code_tokens(source: str):
    text = _COMMENTS.sub(" ", source)
    tokens = []
    for token in _TOKENS.findall(text):
        if token[0].isalpha() or token[0] == "_":
            tokens.append(token if token in _KEEP else "ID")
        elif token[0].isdigit():
            tokens.append("N")
        else:
            tokens.append(token)
    return tokens


def candidate_shingles(source: str):
    """Sorted 32-bit hashes of the candidate's token 5-grams."""
    tokens = code_tokens(source)
    grams = {" ".join(tokens[i:i + SHINGLE_SIZE]) for i in range(max(0, len(tokens) - SHINGLE_SIZE + 1))}
    hashes = {int.from_bytes(hashlib.blake2b(g.encode(), digest_size=4).digest(), "big") for g in grams}
    return sorted(hashes)[:MAX_SHINGLES]


def similarity_percent(a, b) -> float:
    """Jaccard similarity of two shingle sets, in %."""
    a, b = set(a), set(b)
    if not a or not b:
        return 0.0
    return 100.0 * len(a & b) / len(a | b)
