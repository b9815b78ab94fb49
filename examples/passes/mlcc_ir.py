"""A small reader/writer of mlcc's IR text for graph passes written as
programs (no rebuilding of mlcc): the bindings of every dataflow block of
every graph function become Binding objects a script may change, add or
drop; everything else (prim funcs, weights lines, attributes, the return
statements) is kept as it was, line for line.

    import mlcc_ir
    module = mlcc_ir.read("in.ir")
    for block in module.blocks():          # a list of Binding, in order
        for b in block:
            if b.op == "relu": b.op = "gelu"
    module.write("out.ir")                 # mlcc's tools read it back (and verify it)

A Binding is `%name: type = op(args, attr = value, ...)`: `name` and the
`args` are variable names as written (with their quotes, without the `%`),
`attrs` is a list of (name, value text) pairs, `type` the type text. Other
values (constants, call_tir, aliases, tuples) keep their text in `value` and
have op None. The types of bindings a pass creates or changes are the
pass's to get right: mlcc-fuse (any pass, or --verify-each) checks them
when it reads the file, with the line of the mistake. Uses only the Python
standard library.
"""

import re
import sys

_BINDING = re.compile(r'^(\s*)%("(?:[^"\\]|\\.)*"|[A-Za-z0-9_.]+): (.+?) = (.*)$')
_CALL = re.compile(r"^([a-z_][a-z_0-9]*)\((.*)\)$")


def _split_top(text):
    """Splits on commas outside brackets, parentheses and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, c in enumerate(text):
        if quoted:
            if c == '"' and text[i - 1] != "\\":
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


class Binding:
    def __init__(self, name, type, op=None, args=None, attrs=None, value=None, indent="    "):
        self.name, self.type, self.op = name, type, op
        self.args = list(args or [])
        self.attrs = list(attrs or [])
        self.value = value
        self.indent = indent

    @classmethod
    def parse(cls, line):
        m = _BINDING.match(line)
        if not m:
            return None
        indent, name, type_, value = m.groups()
        call = _CALL.match(value)
        if call and call.group(1) not in ("const", "call_tir", "call_extern", "call"):
            args, attrs = [], []
            for part in _split_top(call.group(2)):
                if part.startswith("%"):
                    args.append(part[1:])
                elif " = " in part:
                    k, v = part.split(" = ", 1)
                    attrs.append((k, v))
                else:
                    return cls(name, type_, value=value, indent=indent)
            return cls(name, type_, call.group(1), args, attrs, indent=indent)
        return cls(name, type_, value=value, indent=indent)

    def text(self):
        if self.op is None:
            value = self.value
        else:
            items = ["%" + a for a in self.args] + [f"{k} = {v}" for k, v in self.attrs]
            value = f"{self.op}({', '.join(items)})"
        return f"{self.indent}%{self.name}: {self.type} = {value}"

    def uses(self):
        """The variables this binding reads (for a non-op value, those in its text)."""
        if self.op is not None:
            return list(self.args)
        return re.findall(r'%("(?:[^"\\]|\\.)*"|[A-Za-z0-9_.]+)', self.value)


class Module:
    def __init__(self, lines):
        # Items: a line of text, or a list of Binding (one dataflow block).
        self._items = []
        block = None
        for n, line in enumerate(lines, 1):
            if block is not None:
                if line.strip() == "}":
                    self._items.append(block)
                    block = None
                    self._items.append(line)
                    continue
                b = Binding.parse(line)
                if b is None:
                    raise ValueError(f"line {n}: not a binding: {line.strip()}")
                block.append(b)
                continue
            self._items.append(line)
            if line.strip() == "dataflow {":
                block = []

    def blocks(self):
        """The dataflow blocks, each a list of Binding that may be changed in place."""
        return [x for x in self._items if isinstance(x, list)]

    def text(self):
        out = []
        for x in self._items:
            if isinstance(x, list):
                out.extend(b.text() for b in x)
            else:
                out.append(x)
        return "\n".join(out) + "\n"

    def write(self, path):
        data = self.text()
        if path == "-":
            sys.stdout.write(data)
        else:
            with open(path, "w") as f:
                f.write(data)


def read(path):
    text = sys.stdin.read() if path == "-" else open(path).read()
    return Module(text.splitlines())
