"""A small JSON Schema validator, enough for the repository's schemas (schemas/*.json).

Standard library only. It implements the subset of draft 2020-12 those schemas use: type,
enum, const, properties, required, additionalProperties, items, prefixItems, anyOf, oneOf,
allOf, not, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength,
pattern, minItems, maxItems and $ref (a JSON pointer within the document, "#/$defs/x", or a
sibling file, "other.schema.json#/pointer"). Other keywords (title, description, default,
format, ...) are ignored, as annotations are.

    from ptxbench import schema
    errors = schema.validate(record, schema.load("evaluation-record"))
    schema.check(record, "evaluation-record")     # raises ValidationError
"""

import json
import os
import re
from typing import Any, Dict, List, Optional

__all__ = ["ValidationError", "Validator", "validate", "check", "load", "schema_dir", "SCHEMAS"]

# The schemas of the repository, by short name.
SCHEMAS = {
    "evaluation-record": "evaluation-record.schema.json",
    "run": "run.schema.json",
    "trajectory": "trajectory.schema.json",
    "report": "report.schema.json",
    "openapi": "openapi.json",
}


class ValidationError(ValueError):
    """A document does not match its schema; .errors lists every problem found."""

    def __init__(self, errors: List[str]):
        self.errors = list(errors)
        shown = "; ".join(self.errors[:5])
        more = "" if len(self.errors) <= 5 else " (and %d more)" % (len(self.errors) - 5)
        super().__init__(shown + more)


def schema_dir() -> str:
    """The folder of the schemas: $PTXBENCH_SCHEMAS, else schemas/ of the source checkout this
    package is in (python/ptxbench/../../schemas)."""
    env = os.environ.get("PTXBENCH_SCHEMAS")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "schemas"),
                      os.path.join(here, os.pardir, os.pardir, "schemas")):
        if os.path.isfile(os.path.join(candidate, SCHEMAS["run"])):
            return os.path.normpath(candidate)
    raise FileNotFoundError(
        "cannot find the ptxbench schemas: set PTXBENCH_SCHEMAS to the repository's schemas/ folder")


def _path_of(name: str, directory: Optional[str]) -> str:
    if os.path.sep in name or name.endswith(".json"):
        if os.path.isabs(name) or os.path.exists(name):
            return name
        return os.path.join(directory or schema_dir(), name)
    if name not in SCHEMAS:
        raise KeyError("unknown schema %r (known: %s)" % (name, ", ".join(sorted(SCHEMAS))))
    return os.path.join(directory or schema_dir(), SCHEMAS[name])


def load(name: str, directory: Optional[str] = None) -> Dict[str, Any]:
    """A schema by short name (see SCHEMAS) or file name. The module remembers which file the
    returned dict came from, so that its refs to sibling files resolve in Validator."""
    path = _path_of(name, directory)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    _LOADED_FROM[id(doc)] = (doc, os.path.abspath(path))  # the doc is kept: its id stays its own
    return doc


_LOADED_FROM: Dict[int, Any] = {}

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(doc: Any, pointer: str) -> Any:
    if pointer in ("", "/"):
        return doc
    if not pointer.startswith("/"):
        raise ValueError("unsupported $ref fragment %r (only JSON pointers)" % pointer)
    node = doc
    for raw in pointer[1:].split("/"):
        token = _unescape(raw)
        if isinstance(node, list):
            node = node[int(token)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            raise ValueError("$ref points at nothing: #%s" % pointer)
    return node


def _same(a: Any, b: Any) -> bool:
    """JSON equality (1 == 1.0, but True != 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) in (int, float) and type(b) in (int, float):
        return a == b
    return type(a) is type(b) and a == b


class Validator:
    """Validates instances against one schema document (and its sibling files)."""

    def __init__(self, schema: Dict[str, Any], base: Optional[str] = None):
        self.root = schema
        self.base = base or _LOADED_FROM.get(id(schema), (None, None))[1]
        self._files: Dict[str, Any] = {}
        if self.base:
            self._files[os.path.abspath(self.base)] = schema

    def errors(self, instance: Any, schema: Optional[Any] = None) -> List[str]:
        out: List[str] = []
        self._check(instance, self.root if schema is None else schema, "$", self.root,
                    self.base, out)
        return out

    def is_valid(self, instance: Any) -> bool:
        return not self.errors(instance)

    # Each check appends "<where>: <problem>" to out.
    def _resolve(self, ref: str, doc: Any, base: Optional[str]):
        target, _, fragment = ref.partition("#")
        if target:
            if base is None:
                raise ValueError("$ref %r to another file needs the schema's path" % ref)
            path = os.path.abspath(os.path.join(os.path.dirname(base), target))
            if path not in self._files:
                with open(path, encoding="utf-8") as f:
                    self._files[path] = json.load(f)
            doc, base = self._files[path], path
        return _pointer(doc, fragment), doc, base

    def _check(self, v: Any, s: Any, at: str, doc: Any, base: Optional[str], out: List[str]):
        if s is True or s == {}:
            return
        if s is False:
            out.append("%s: not allowed here" % at)
            return
        if not isinstance(s, dict):
            raise ValueError("not a schema at %s: %r" % (at, s))
        if "$ref" in s:
            sub, sub_doc, sub_base = self._resolve(s["$ref"], doc, base)
            self._check(v, sub, at, sub_doc, sub_base, out)
        if "type" in s:
            types = s["type"] if isinstance(s["type"], list) else [s["type"]]
            if not any(_TYPES[t](v) for t in types):
                out.append("%s: expected %s, got %s" % (at, " or ".join(types), _describe(v)))
                return  # the other keywords would only repeat it
        if "enum" in s and not any(_same(v, e) for e in s["enum"]):
            out.append("%s: %s is not one of %s" % (at, _short(v), _short(s["enum"])))
        if "const" in s and not _same(v, s["const"]):
            out.append("%s: %s is not %s" % (at, _short(v), _short(s["const"])))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if "minimum" in s and v < s["minimum"]:
                out.append("%s: %r is less than %r" % (at, v, s["minimum"]))
            if "maximum" in s and v > s["maximum"]:
                out.append("%s: %r is more than %r" % (at, v, s["maximum"]))
            if "exclusiveMinimum" in s and v <= s["exclusiveMinimum"]:
                out.append("%s: %r is not more than %r" % (at, v, s["exclusiveMinimum"]))
            if "exclusiveMaximum" in s and v >= s["exclusiveMaximum"]:
                out.append("%s: %r is not less than %r" % (at, v, s["exclusiveMaximum"]))
        if isinstance(v, str):
            if "minLength" in s and len(v) < s["minLength"]:
                out.append("%s: shorter than %d characters" % (at, s["minLength"]))
            if "maxLength" in s and len(v) > s["maxLength"]:
                out.append("%s: longer than %d characters" % (at, s["maxLength"]))
            if "pattern" in s and not re.search(s["pattern"], v):
                out.append("%s: %s does not match %s" % (at, _short(v), s["pattern"]))
        if isinstance(v, dict):
            for key in s.get("required", []):
                if key not in v:
                    out.append("%s: missing required field %r" % (at, key))
            props = s.get("properties", {})
            for key, value in v.items():
                if key in props:
                    self._check(value, props[key], "%s.%s" % (at, key), doc, base, out)
                elif "additionalProperties" in s:
                    extra = s["additionalProperties"]
                    if extra is False:
                        out.append("%s: unexpected field %r" % (at, key))
                    else:
                        self._check(value, extra, "%s.%s" % (at, key), doc, base, out)
        if isinstance(v, list):
            prefix = s.get("prefixItems", [])
            for i, item in enumerate(v):
                if i < len(prefix):
                    self._check(item, prefix[i], "%s[%d]" % (at, i), doc, base, out)
                elif "items" in s:
                    self._check(item, s["items"], "%s[%d]" % (at, i), doc, base, out)
            if "minItems" in s and len(v) < s["minItems"]:
                out.append("%s: fewer than %d items" % (at, s["minItems"]))
            if "maxItems" in s and len(v) > s["maxItems"]:
                out.append("%s: more than %d items" % (at, s["maxItems"]))
        for sub in s.get("allOf", []):
            self._check(v, sub, at, doc, base, out)
        if "anyOf" in s or "oneOf" in s:
            key = "anyOf" if "anyOf" in s else "oneOf"
            branches = [self._branch(v, sub, at, doc, base) for sub in s[key]]
            passing = sum(1 for b in branches if not b)
            if passing == 0:
                # The branch that came closest tells the most.
                best = min(branches, key=len)
                out.append("%s: matches none of %s (closest: %s)" % (at, key, "; ".join(best[:3])))
            elif key == "oneOf" and passing > 1:
                out.append("%s: matches %d branches of oneOf, not exactly one" % (at, passing))
        if "not" in s and not self._branch(v, s["not"], at, doc, base):
            out.append("%s: matches a schema it must not" % at)

    def _branch(self, v, s, at, doc, base) -> List[str]:
        errs: List[str] = []
        self._check(v, s, at, doc, base, errs)
        return errs


def _describe(v: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](v):
            return name if name in ("null", "array", "object") else "%s %s" % (name, _short(v))
    return type(v).__name__


def _short(v: Any) -> str:
    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(instance: Any, schema: Any, base: Optional[str] = None) -> List[str]:
    """Every problem of `instance` against `schema` (a dict, or a short name such as "run");
    an empty list when it matches."""
    if isinstance(schema, str):
        schema = load(schema)
    return Validator(schema, base).errors(instance)


def check(instance: Any, schema: Any, base: Optional[str] = None) -> None:
    """Raises ValidationError when `instance` does not match `schema`."""
    errs = validate(instance, schema, base)
    if errs:
        raise ValidationError(errs)
