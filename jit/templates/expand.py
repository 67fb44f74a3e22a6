"""A prange loop's kernel from its template in jit/templates/loops.py, whose
docstring says what the templates' capitals, repetitions and choices mean.
jit/jit_loops.c runs this file (built into the module, as it builds in
loops.py's text) at the first launch of a loop, and calls kernel() for each
form the loop is launched in.

The expansion works on trees: the template's nodes are copied with their
placeholders filled in and put at the loop's `for`, so that an error in what
the template adds points there; the body's own nodes keep their places in
the cell. A node is copied field by field, its fields and places only:
copy.deepcopy took twice as long over an unrolled body, and would follow what
other code hangs on nodes (IPython's tracebacks give every node they see a
`parent`, the contexts and operators that all trees share included).
"""
import ast
import operator
import re

TEMPLATES = None  # the text of loops.py, set by jit_loops.c
_defs = None  # template name -> its ast.FunctionDef

_CAPS = re.compile(r"[A-Z][A-Z0-9]*")
_PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*")
_PLACES = ("lineno", "col_offset", "end_lineno", "end_col_offset")
_OWN_STATEMENTS = ("body", "orelse")  # of a for, while or if
_OPS = {"+": "add", "*": "mul", "m": "min", "M": "max"}


def _load():
    global _defs
    tree = ast.parse(TEMPLATES, "offload/jit/templates/loops.py")
    _defs = {d.name: d for d in tree.body if isinstance(d, ast.FunctionDef)}


_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}


def _value(expr, env):
    """The value of an `if`'s test that reads only placeholders (names,
    constants, comparisons, and, or, not), else None: evaluated here, as
    compiling each test cost more than parsing the whole file."""
    if isinstance(expr, ast.Name):
        return env.get(expr.id) if _PLACEHOLDER.fullmatch(expr.id) else None
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        a, b = _value(expr.left, env), _value(expr.comparators[0], env)
        return None if a is None or b is None else _COMPARE[type(expr.ops[0])](a, b)
    if isinstance(expr, ast.BoolOp):
        values = [_value(v, env) for v in expr.values]
        if None in values:
            return None
        return all(values) if isinstance(expr.op, ast.And) else any(values)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        v = _value(expr.operand, env)
        return None if v is None else not v
    return None


def _halves(n):
    out = []
    while n > 1:
        n //= 2
        out.append(n)
    return out


def _statements(fn):
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[1:]  # its docstring
    return body


def _keys(node):
    """The fields and places node has."""
    d = node.__dict__
    return [k for k in node._fields + node._attributes if k in d]


def _renamed(node, to):
    """A copy of node (a tree of the loop's body, or a list of them) with the
    names in to renamed; places kept."""
    if isinstance(node, list):
        return [_renamed(n, to) for n in node]
    if not isinstance(node, ast.AST) or not node._fields:
        return node  # a value, or a context or operator (shared, as ast.parse shares them)
    made = type(node).__new__(type(node))
    made.__dict__ = {k: _renamed(getattr(node, k), to) for k in _keys(node)}
    if isinstance(made, ast.Name) and made.id in to:
        made.id = to[made.id]
    return made


class _Expansion:
    def __init__(self, body, unit_dims, line, col):
        self.body = body
        self.unit_dims = unit_dims  # the names of the steps that are 1
        self.place = {"lineno": line, "end_lineno": line, "col_offset": col, "end_col_offset": col}

    def name(self, name, env):
        """name with its placeholders filled in: a str, or (a whole
        placeholder bound to a number) an int."""
        if name in env:
            return env[name]
        return _CAPS.sub(lambda m: str(env[m.group()]), name) if _CAPS.search(name) else name

    def copy(self, node, env):
        """A template's expression, or a statement without its statements
        (stmt() expands those), filled in and placed."""
        if isinstance(node, list):
            return [self.copy(n, env) for n in node]
        if not isinstance(node, ast.AST) or not node._fields:
            return node
        if isinstance(node, ast.Name):
            v = self.name(node.id, env)
            if isinstance(v, int):
                return ast.Constant(value=v, kind=None, **self.place)
            return ast.Name(id=v, ctx=node.ctx, **self.place)
        own = _OWN_STATEMENTS if isinstance(node, ast.stmt) else ()
        made = type(node).__new__(type(node))
        made.__dict__ = {k: self.place[k] if k in _PLACES else [] if k in own else
                         self.copy(getattr(node, k), env) for k in _keys(node)}
        # a step of 1 is compiled in: x * _ofl_dD is x
        if (isinstance(made, ast.BinOp) and isinstance(made.op, ast.Mult) and
                isinstance(made.right, ast.Name) and made.right.id in self.unit_dims):
            return made.left
        return made

    def stmts(self, stmts, env):
        out = []
        for s in stmts:
            out.extend(self.stmt(s, env))
        return out

    def stmt(self, s, env):
        if isinstance(s, ast.For) and isinstance(s.iter, ast.Name) and s.iter.id in env:
            out = []  # repeated: once per element, the target bound to it
            for value in env[s.iter.id]:
                if isinstance(s.target, ast.Tuple):
                    bound = {t.id: v for t, v in zip(s.target.elts, value)}
                else:
                    bound = {s.target.id: value}
                out.extend(self.stmts(s.body, {**env, **bound}))
            return out
        taken = _value(s.test, env) if isinstance(s, ast.If) else None
        if taken is not None:  # decided here
            return self.stmts(s.body if taken else s.orelse, env)
        call = s.value if isinstance(s, ast.Expr) else None
        if isinstance(call, ast.Name) and call.id == "_ofl_body":
            return list(self.body)  # its nodes, shared by every place it stands
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            if call.func.id == "_ofl_body":  # _ofl_body(RED=pattern): renamed
                (kw,) = call.keywords
                to = {red: self.name(kw.value.id, {**env, kw.arg: red, "OP": op})
                      for red, op in env["REDUCTIONS"]}
                return _renamed(self.body, to)
            if call.func.id in _defs:  # another template, inline
                fn = _defs[call.func.id]
                bound = {p.arg: self.name(a.id, env) for p, a in zip(fn.args.args, call.args)}
                return self.stmts(_statements(fn), {**env, **bound})
        made = self.copy(s, env)
        for field in _OWN_STATEMENTS:
            if field in made.__dict__:
                setattr(made, field, self.stmts(getattr(s, field), env))
        return [made]

    def kernel(self, fn, name, env, runs):
        args = [ast.arg(arg=n, annotation=None, type_comment=None, **self.place)
                for a in fn.args.args for n in runs.get(a.arg, [a.arg])]
        signature = ast.arguments(posonlyargs=[], args=args, vararg=None, kwonlyargs=[],
                                  kw_defaults=[], kwarg=None, defaults=[])
        return ast.FunctionDef(name=name, args=signature, body=self.stmts(_statements(fn), env),
                               decorator_list=[], returns=None, type_comment=None, **self.place)


def kernel(shape, name, params, targets, reductions, ops, unit_steps, lanes, continues,
           unrollable, body, line, col, width, group):
    """The ast.FunctionDef named name of a loop's kernel (jit_loop_kernel in
    jit/jit.h): shape is jit_loop_form's ('map', 'lanes', 'acc',
    'stride'); ops a jit_reduction character per reduction; line and col
    (from 0) the place of the loop's `for`; width and group
    JIT_LOOP_LANES_WIDTH and JIT_LOOP_GROUP."""
    if _defs is None:
        _load()
    nd = len(targets)
    reds = [(r, _OPS[o]) for r, o in zip(reductions, ops)]
    env = {
        "NDIM": nd, "L": nd - 1, "IL": targets[-1], "UNIT_LAST": bool(unit_steps >> (nd - 1) & 1),
        "UNROLLED": unrollable, "WIDTH": width, "LANES": lanes or 1, "REDUCTIONS": reds, "COPIES": range(width),
        "COPY_TREE": [(u, u + h) for h in _halves(width) for u in range(h)],
        "GROUP": group, "GROUP_HALVES": _halves(group),
    }
    env.update({f"I{d}": t for d, t in enumerate(targets)})
    runs = {  # what a placeholder in a signature stands for
        "PARAMS": list(params),
        "STEPS": [f"_ofl_{p}{d}" for d in range(nd) for p in "sd"],
        "TRIPS": [f"_ofl_n{d}" for d in range(nd)],
        "PARTIALS": [f"_ofl_p_{r}" for r, _ in reds],
        "INITIALS": [f"_ofl_i_{r}" for r, op in reds if op in ("min", "max")],
    }
    unit_dims = {f"_ofl_d{d}" for d in range(nd) if unit_steps >> d & 1}
    template = "map_continue" if shape == "map" and continues else shape
    return _Expansion(body, unit_dims, line, col).kernel(_defs[template], name, env, runs)
