#!/usr/bin/python3
"""A parser and evaluator of the part of CEL (github.com/google/cel-spec) that flexcsi's
admission policies use, so that they are checked here without an API server: Debian has no CEL
implementation, and the clusters the suites run (1.10-1.24) predate ValidatingAdmissionPolicy.

Covered: literals (int, string in single or double quotes, true, false, null, lists, maps),
field selection, indexing, `in`, == != < <= > >=, + (ints, strings, lists), ! && || with CEL's
commutative error handling (an error on one side is absorbed when the other side decides),
the ternary operator, the macros has(), all(), exists(), exists_one(), filter() and map() over
lists and map keys, and the functions size(), startsWith(), endsWith(), contains() and join()
(Kubernetes' strings library). Anything else is a parse or evaluation error: a policy that uses
more must extend this module (or be checked on a real 1.30+ cluster).

Values are Python's: dict, list, str, int, bool, None. Not a type checker: field names are
checked only by evaluating against sample objects, which the tests do.
"""

import re

__all__ = ["CelError", "parse", "evaluate", "references"]


class CelError(Exception):
    """A parse error, or an evaluation error (no such key, no such overload, ...)."""


TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<int>\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%<>!?:.,()\[\]{}])
""", re.VERBOSE)

RESERVED = {"true", "false", "null", "in"}
MACROS = {"all", "exists", "exists_one", "filter", "map"}
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


def tokenize(text):
    tokens, pos = [], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise CelError(f"unexpected character {text[pos]!r} at {pos}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        value = m.group()
        if kind == "string":
            value = re.sub(r"\\(.)", lambda e: ESCAPES.get(e.group(1), "\\" + e.group(1)),
                           value[1:-1])
        elif kind == "int":
            value = int(value)
        elif kind == "ident" and value in RESERVED:
            kind = "op" if value == "in" else "lit"
            value = {"true": True, "false": False, "null": None, "in": "in"}[value]
        tokens.append((kind, value))
    tokens.append(("end", None))
    return tokens


class Parser:
    """Recursive descent over CEL's grammar, producing tuples:
    ("lit", v) ("ident", name) ("select", e, field) ("index", e, key) ("list", [e])
    ("map", [(k, v)]) ("call", name, target_or_None, [args]) ("has", e, field)
    ("macro", name, target, var, body) ("cond", c, a, b) ("and", a, b) ("or", a, b)
    ("not", e) ("neg", e) ("binop", op, a, b)."""

    def __init__(self, text):
        self.tokens = tokenize(text)
        self.pos = 0

    def peek(self, value=None):
        kind, v = self.tokens[self.pos]
        if value is None:
            return kind, v
        return kind == "op" and v == value

    def take(self, value=None):
        kind, v = self.tokens[self.pos]
        if value is not None and not (kind == "op" and v == value):
            raise CelError(f"expected {value!r}, found {v!r}")
        self.pos += 1
        return kind, v

    def parse(self):
        e = self.expr()
        if self.peek()[0] != "end":
            raise CelError(f"unexpected {self.peek()[1]!r} after the expression")
        return e

    def expr(self):
        c = self.or_expr()
        if self.peek("?"):
            self.take("?")
            a = self.or_expr()
            self.take(":")
            return ("cond", c, a, self.expr())
        return c

    def or_expr(self):
        e = self.and_expr()
        while self.peek("||"):
            self.take()
            e = ("or", e, self.and_expr())
        return e

    def and_expr(self):
        e = self.relation()
        while self.peek("&&"):
            self.take()
            e = ("and", e, self.relation())
        return e

    def relation(self):
        e = self.addition()
        while any(self.peek(op) for op in ("==", "!=", "<", "<=", ">", ">=", "in")):
            op = self.take()[1]
            e = ("binop", op, e, self.addition())
        return e

    def addition(self):
        e = self.multiplication()
        while self.peek("+") or self.peek("-"):
            op = self.take()[1]
            e = ("binop", op, e, self.multiplication())
        return e

    def multiplication(self):
        e = self.unary()
        while self.peek("*") or self.peek("/") or self.peek("%"):
            op = self.take()[1]
            e = ("binop", op, e, self.unary())
        return e

    def unary(self):
        if self.peek("!"):
            self.take()
            return ("not", self.unary())
        if self.peek("-"):
            self.take()
            return ("neg", self.unary())
        return self.member()

    def args(self, close):
        items = []
        while not self.peek(close):
            items.append(self.expr())
            if not self.peek(close):
                self.take(",")
        self.take(close)
        return items

    def member(self):
        e = self.primary()
        while True:
            if self.peek("."):
                self.take()
                kind, name = self.take()
                if kind != "ident":
                    raise CelError(f"expected a field name after '.', found {name!r}")
                if self.peek("("):
                    self.take()
                    if name in MACROS:
                        kind, var = self.take()
                        if kind != "ident":
                            raise CelError(f"{name}() needs a variable name first")
                        self.take(",")
                        body = self.expr()
                        self.take(")")
                        e = ("macro", name, e, var, body)
                    else:
                        e = ("call", name, e, self.args(")"))
                else:
                    e = ("select", e, name)
            elif self.peek("["):
                self.take()
                key = self.expr()
                self.take("]")
                e = ("index", e, key)
            else:
                return e

    def primary(self):
        kind, v = self.take()
        if kind in ("lit", "string", "int"):
            return ("lit", v)
        if kind == "ident":
            if self.peek("("):
                self.take()
                if v == "has":
                    arg = self.expr()
                    self.take(")")
                    if arg[0] != "select":
                        raise CelError("has() takes a field selection, e.g. has(a.b)")
                    return ("has", arg[1], arg[2])
                return ("call", v, None, self.args(")"))
            return ("ident", v)
        if kind == "op" and v == "(":
            e = self.expr()
            self.take(")")
            return e
        if kind == "op" and v == "[":
            return ("list", self.args("]"))
        if kind == "op" and v == "{":
            entries = []
            while not self.peek("}"):
                k = self.expr()
                self.take(":")
                entries.append((k, self.expr()))
                if not self.peek("}"):
                    self.take(",")
            self.take("}")
            return ("map", entries)
        raise CelError(f"unexpected {v!r}")


def parse(text):
    """The expression's syntax tree; CelError when `text` is not in the subset."""
    return Parser(text).parse()


def references(tree):
    """Every (root identifier, first field) the expression reads, e.g. ("variables", "x"),
    ("object", "metadata"); a macro's own variable is left out."""
    found = set()

    def walk(e, bound):
        if not isinstance(e, tuple):
            return
        if e[0] in ("select", "has") and e[1][0] == "ident":
            if e[1][1] not in bound:
                found.add((e[1][1], e[2]))
            return
        if e[0] == "ident":
            if e[1] not in bound:
                found.add((e[1], None))
            return
        if e[0] == "macro":
            walk(e[2], bound)
            walk(e[4], bound | {e[3]})
            return
        for part in e[1:]:
            if isinstance(part, tuple):
                walk(part, bound)
            elif isinstance(part, list):
                for p in part:
                    if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], tuple):
                        walk(p[0], bound)
                        walk(p[1], bound)
                    else:
                        walk(p, bound)

    walk(tree, frozenset())
    return found


def type_name(v):
    if isinstance(v, bool):
        return "bool"
    return {int: "int", str: "string", list: "list", dict: "map", type(None): "null"}.get(
        type(v), type(v).__name__)


def cel_equal(a, b):
    if type_name(a) != type_name(b):
        return False  # heterogeneous equality is false, as in Kubernetes' CEL
    if isinstance(a, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(cel_equal(a[k], b[k]) for k in a)
    return a == b


class Evaluator:
    def __init__(self, activation):
        self.activation = activation  # name -> value, or a callable (lazy variables)

    def ident(self, name, scope):
        if name in scope:
            return scope[name]
        if name not in self.activation:
            raise CelError(f"undeclared reference to '{name}'")
        v = self.activation[name]
        return v() if callable(v) else v

    def eval(self, e, scope):
        kind = e[0]
        if kind == "lit":
            return e[1]
        if kind == "ident":
            return self.ident(e[1], scope)
        if kind == "select":
            target = self.eval(e[1], scope)
            if isinstance(target, LazyMap):
                return target.get(e[2])
            if not isinstance(target, dict):
                raise CelError(f"no field '{e[2]}' on {type_name(target)}")
            if e[2] not in target:
                raise CelError(f"no such key: {e[2]}")
            return target[e[2]]
        if kind == "has":
            target = self.eval(e[1], scope)
            if isinstance(target, LazyMap):
                return target.has(e[2])
            if not isinstance(target, dict):
                raise CelError(f"has() on {type_name(target)}")
            return e[2] in target and target[e[2]] is not None
        if kind == "index":
            target, key = self.eval(e[1], scope), self.eval(e[2], scope)
            if isinstance(target, list):
                if type_name(key) != "int" or not 0 <= key < len(target):
                    raise CelError(f"index {key!r} out of range")
                return target[key]
            if isinstance(target, dict):
                if key not in target:
                    raise CelError(f"no such key: {key}")
                return target[key]
            raise CelError(f"cannot index {type_name(target)}")
        if kind == "list":
            return [self.eval(x, scope) for x in e[1]]
        if kind == "map":
            return {self.eval(k, scope): self.eval(v, scope) for k, v in e[1]}
        if kind in ("and", "or"):
            decisive = kind == "or"  # true decides ||, false decides &&
            error = None
            for side in (e[1], e[2]):
                try:
                    v = self.eval(side, scope)
                except CelError as err:
                    error = error or err
                    continue
                if type_name(v) != "bool":
                    raise CelError(f"no such overload: {kind} on {type_name(v)}")
                if v == decisive:
                    return decisive
            if error:
                raise error
            return not decisive
        if kind == "not":
            v = self.eval(e[1], scope)
            if type_name(v) != "bool":
                raise CelError(f"no such overload: !{type_name(v)}")
            return not v
        if kind == "neg":
            v = self.eval(e[1], scope)
            if type_name(v) != "int":
                raise CelError(f"no such overload: -{type_name(v)}")
            return -v
        if kind == "cond":
            c = self.eval(e[1], scope)
            if type_name(c) != "bool":
                raise CelError(f"condition is {type_name(c)}, not bool")
            return self.eval(e[2] if c else e[3], scope)
        if kind == "binop":
            return self.binop(e[1], self.eval(e[2], scope), self.eval(e[3], scope))
        if kind == "macro":
            return self.macro(e, scope)
        if kind == "call":
            return self.call(e, scope)
        raise CelError(f"cannot evaluate {kind}")

    @staticmethod
    def binop(op, a, b):
        if op == "==":
            return cel_equal(a, b)
        if op == "!=":
            return not cel_equal(a, b)
        if op == "in":
            if isinstance(b, list):
                return any(cel_equal(a, x) for x in b)
            if isinstance(b, dict):
                return a in b
            raise CelError(f"no such overload: in {type_name(b)}")
        ta, tb = type_name(a), type_name(b)
        if ta != tb:
            raise CelError(f"no such overload: {ta} {op} {tb}")
        if op == "+" and ta in ("int", "string", "list"):
            return a + b
        if op in ("-", "*", "/", "%") and ta == "int":
            if op in ("/", "%") and b == 0:
                raise CelError("division by zero")
            return {"-": a - b, "*": a * b, "/": int(a / b), "%": a - b * int(a / b)}[op]
        if op in ("<", "<=", ">", ">=") and ta in ("int", "string"):
            return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        raise CelError(f"no such overload: {ta} {op} {tb}")

    def macro(self, e, scope):
        name, target, var, body = e[1], self.eval(e[2], scope), e[3], e[4]
        if isinstance(target, dict):
            items = list(target.keys())
        elif isinstance(target, list):
            items = target
        else:
            raise CelError(f"{name}() on {type_name(target)}")

        def run(item):
            return self.eval(body, {**scope, var: item})

        if name == "map":
            return [run(x) for x in items]
        results = []
        for x in items:
            v = run(x)
            if type_name(v) != "bool":
                raise CelError(f"{name}() predicate gave {type_name(v)}")
            results.append((x, v))
        if name == "filter":
            return [x for x, v in results if v]
        if name == "all":
            return all(v for _, v in results)
        if name == "exists":
            return any(v for _, v in results)
        return sum(1 for _, v in results if v) == 1  # exists_one

    def call(self, e, scope):
        name, target_e, args_e = e[1], e[2], e[3]
        args = [self.eval(a, scope) for a in args_e]
        if target_e is None:
            if name == "size" and len(args) == 1:
                return self.size(args[0])
            raise CelError(f"undeclared function {name}()")
        target = self.eval(target_e, scope)
        if name == "size" and not args:
            return self.size(target)
        if name in ("startsWith", "endsWith", "contains") and len(args) == 1:
            if type_name(target) != "string" or type_name(args[0]) != "string":
                raise CelError(f"no such overload: {type_name(target)}.{name}()")
            return {"startsWith": target.startswith, "endsWith": target.endswith,
                    "contains": target.__contains__}[name](args[0])
        if name == "join" and isinstance(target, list) and len(args) <= 1:
            if any(type_name(x) != "string" for x in target):
                raise CelError("join() of a list that is not all strings")
            return (args[0] if args else "").join(target)
        raise CelError(f"undeclared function {type_name(target)}.{name}()")

    @staticmethod
    def size(v):
        if isinstance(v, (str, list, dict)):
            return len(v)
        raise CelError(f"no such overload: size({type_name(v)})")


class LazyMap:
    """`variables`: each computed on first use, as Kubernetes does, so that an unused variable
    that would fail does not fail the expression."""

    def __init__(self, compute):
        self.compute = compute  # name -> value or raises CelError
        self.cache = {}

    def has(self, name):
        return name in self.compute

    def get(self, name):
        if name not in self.compute:
            raise CelError(f"no such variable: {name}")
        if name not in self.cache:
            self.cache[name] = self.compute[name]()
        return self.cache[name]


def evaluate(tree_or_text, activation):
    """Evaluates an expression (text or parse() tree) against `activation`, a dict of root
    names (object, oldObject, request, variables, ...). CelError on an evaluation error."""
    tree = parse(tree_or_text) if isinstance(tree_or_text, str) else tree_or_text
    return Evaluator(activation).eval(tree, {})
