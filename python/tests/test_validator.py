"""The schema validator on small schemas: each keyword accepts and rejects what it should."""

import json
import os
import tempfile
import unittest

import _support  # noqa: F401  (puts the package on the path)
from ptxbench import schema


class ValidatorTest(unittest.TestCase):
    def ok(self, s, doc):
        self.assertEqual(schema.validate(doc, s), [], json.dumps(doc))

    def bad(self, s, doc, needle=""):
        errs = schema.validate(doc, s)
        self.assertTrue(errs, "accepted: %s" % json.dumps(doc))
        if needle:
            self.assertIn(needle, " ".join(errs))

    def test_types(self):
        self.ok({"type": "integer"}, 3)
        self.ok({"type": "integer"}, 3.0)
        self.bad({"type": "integer"}, 3.5)
        self.bad({"type": "integer"}, True, "expected integer")
        self.ok({"type": "number"}, 1e-3)
        self.bad({"type": "number"}, "1")
        self.ok({"type": ["string", "null"]}, None)
        self.bad({"type": ["string", "null"]}, 0)
        self.ok({"type": "boolean"}, False)
        self.bad({"type": "object"}, [])
        self.bad({"type": "array"}, {})

    def test_enum_const(self):
        s = {"enum": ["PASSED", "INFRA_ERROR", 1]}
        self.ok(s, "PASSED")
        self.ok(s, 1.0)
        self.bad(s, "passed", "is not one of")
        self.bad(s, True)
        self.ok({"const": "ptxbench.run/1"}, "ptxbench.run/1")
        self.bad({"const": "ptxbench.run/1"}, "ptxbench.run/2")
        self.ok({"const": {"a": [1, 2]}}, {"a": [1, 2]})
        self.bad({"const": {"a": [1, 2]}}, {"a": [2, 1]})

    def test_objects(self):
        s = {"type": "object", "required": ["a"],
             "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
             "additionalProperties": False}
        self.ok(s, {"a": "x"})
        self.ok(s, {"a": "x", "b": 2})
        self.bad(s, {"b": 2}, "missing required field 'a'")
        self.bad(s, {"a": "x", "c": 1}, "unexpected field 'c'")
        self.bad(s, {"a": 1}, "$.a")
        open_map = {"type": "object", "additionalProperties": {"type": "integer"}}
        self.ok(open_map, {"M": 1, "N": 2})
        self.bad(open_map, {"M": "1"}, "$.M")

    def test_arrays(self):
        s = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}
        self.ok(s, [0, 1])
        self.bad(s, [], "fewer than 1")
        self.bad(s, [1, -1], "$[1]")
        self.ok({"prefixItems": [{"type": "string"}], "items": {"type": "number"}}, ["a", 1, 2])

    def test_anyof_oneof_allof_not(self):
        any_of = {"anyOf": [{"type": "null"}, {"type": "object", "required": ["state"]}]}
        self.ok(any_of, None)
        self.ok(any_of, {"state": "ran"})
        self.bad(any_of, {}, "matches none of anyOf")
        one_of = {"oneOf": [{"type": "number"}, {"type": "integer"}]}
        self.ok(one_of, 1.5)
        self.bad(one_of, 2, "not exactly one")
        self.bad({"allOf": [{"type": "string"}, {"maxLength": 2}]}, "abc", "longer")
        self.bad({"not": {"type": "null"}}, None)
        self.ok({"pattern": "^[0-9a-f]{32}$"}, "0" * 32)
        self.bad({"pattern": "^[0-9a-f]{32}$"}, "0123", "does not match")

    def test_refs(self):
        s = {"$defs": {"status": {"enum": ["PASSED", "INCORRECT"]},
                       "list": {"type": "array", "items": {"$ref": "#/$defs/status"}}},
             "type": "object", "properties": {"s": {"$ref": "#/$defs/list"}}}
        self.ok(s, {"s": ["PASSED"]})
        self.bad(s, {"s": ["PASSED", "FAILED"]}, "$.s[1]")
        with self.assertRaises(ValueError):
            schema.validate(1, {"$ref": "#/$defs/none"})

    def test_ref_to_a_sibling_file(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "a.json"), "w") as f:
                json.dump({"$defs": {"n": {"type": "integer"}}}, f)
            with open(os.path.join(d, "b.json"), "w") as f:
                json.dump({"type": "array", "items": {"$ref": "a.json#/$defs/n"}}, f)
            s = schema.load(os.path.join(d, "b.json"))
            self.assertEqual(schema.validate([1, 2], s), [])
            self.assertTrue(schema.validate([1, "2"], s))

    def test_check_raises_with_every_error(self):
        with self.assertRaises(schema.ValidationError) as e:
            schema.check({"b": 1}, {"required": ["a", "c"]})
        self.assertEqual(len(e.exception.errors), 2)

    def test_repository_schemas_load(self):
        for name in schema.SCHEMAS:
            doc = schema.load(name)
            self.assertIsInstance(doc, dict, name)
        self.assertEqual(schema.load("openapi")["openapi"], "3.1.0")


if __name__ == "__main__":
    unittest.main()
