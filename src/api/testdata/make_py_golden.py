#!/usr/bin/python3
"""Writes py_golden.json: Python's own answers for the Python text forms that
tern's api layer reproduces (src/api/py_text.h, py_literal.h, json_stream.h,
ConvertXmlParameter in tool_parser.h). Run with Debian's /usr/bin/python3:

    /usr/bin/python3 src/api/testdata/make_py_golden.py

The reference is CPython itself: repr(), json.dumps(json.loads(...)),
ast.literal_eval, int(), float(). The qwen3_coder conversion below is written
from the behaviour documented in SGLang's Qwen3CoderDetector._convert_param_value
(see tool_parser.h), using those same builtins.
"""
import ast
import json
import math
import os
import random

random.seed(1234)
out = {}

# --- float repr -------------------------------------------------------------
floats = [0.1, 0.5, 1.0, -2.0, 1e16, 1e15, 9999999999999998.0, 0.0001, 0.00001,
          1.5e-7, 123456789.123, 1 / 3, 2.0 ** 53, 1e22, 1.7976931348623157e308,
          5e-324, -0.0, 0.0, 100.0, 1e-4, 9.999999999999999e-05, 12345678901234567.0,
          3.141592653589793, 2.5, 1e300, 6.02214076e23, -1.5e-10]
for _ in range(200):
    floats.append(random.uniform(-1, 1) * 10 ** random.randint(-12, 20))
for _ in range(50):
    floats.append(float(random.randint(-10 ** 6, 10 ** 6)))
out["float_repr"] = [{"hex": x.hex(), "repr": repr(x)} for x in floats]

# --- json.dumps(json.loads(text), ensure_ascii=False) -----------------------
json_texts = [
    '{"location":"Paris, France","unit":"celsius"}',
    '{"a":1,"b":[true,false,null],"c":{"d":1.50,"e":-0,"f":1E5,"g":1e-7}}',
    '{"q": "caf\\u00e9 \\"x\\"\\n\\t\\/ \\ud83d\\ude00"}',
    '[1, 2.0, -3.25, 12345678901234567890, 0.1, 1e400]',
    '{"ctl":"\\u0001\\u001f\\b\\f\\r","bs":"a\\\\b"}',
    '"plain string"',
    '  {"spaced" :  [ 1 , 2 ] , "empty": {}, "arr": [] }  ',
    '{"nested":{"deeper":{"deepest":[{"k":"v"}]}}}',
    '{"unicode":"日本語 ümlaut ✓","emoji":"👍🏽"}',
    '{"dup":1,"dup":2}',
    '-0.0', '0', '-0', '1.0', '100', '2.5e-3',
]
out["json_dumps"] = [{"text": t, "dumps": json.dumps(json.loads(t), ensure_ascii=False)} for t in json_texts]

# --- repr(str) ----------------------------------------------------------------
strs = ["plain", "it's", 'say "hi"', "both ' and \"", "tab\there", "new\nline", "back\\slash",
        "ctl\x01\x7f", "café", ""]
out["str_repr"] = [{"s": s, "repr": repr(s)} for s in strs]

# --- ast.literal_eval -------------------------------------------------------
literal_texts = ["[1, 2, 3]", "{'a': 1, 'b': [True, False, None]}", "(1, 2)", "(1,)", "()", "(5)",
                 "'single'", '"double"', "'a' 'b'", "-5", "+3.5", "0x1F", "0o17", "0b101", "1_000",
                 "1e3", ".5", "5.", "{1: 'x', 2.5: 'y', False: 'z', None: 'w'}", "[1, 2,]",
                 "{'a': {'b': [1, {'c': 'd'}]}}", "'esc\\n\\t\\x41\\u00e9'", "r'raw\\n'",
                 "True", "None", "  [1]", "{1, 2}", "b'bytes'", "1+2j", "foo", "[1, 2", "'unterminated",
                 "{'a' 1}", "[-1, -2.5]", "'''triple'''", "01", "00", "1__0", "_1", "{}", "[]",
                 "[[[[1]]]]", "{'k': (1, 2)}", "[1e999]", "-(1)"]
lit = []
for t in literal_texts:
    try:
        v = ast.literal_eval(t.lstrip(" \t"))
        d = json.dumps(v, ensure_ascii=False)
        if not math.isfinite(sum(x for x in [0.0])):
            pass
        ok = True
    except Exception:
        ok = False
    if ok and ("Infinity" in d or "NaN" in d):
        ok = False  # tern: non-finite floats are not literals it keeps
    lit.append({"text": t, "dumps": d if ok else None})
out["literal_eval"] = lit

# --- int() / float() ----------------------------------------------------------
def try_int(s):
    try:
        return str(int(s))
    except Exception:
        return None

def try_float(s):
    try:
        v = float(s)
        return v.hex() if math.isfinite(v) else repr(v)
    except Exception:
        return None

num_texts = ["42", " 42 ", "-7", "+7", "007", "-0", "1_000", "1__0", "_1", "1_", "3.0", "abc", "",
             "12345678901234567890123", "1e3", "2.50", "-1.5e-3", ".5", "5.", "inf", "-Infinity",
             "nan", "0x10", "1_000.5", "1e", "e5", "1.2.3", "  -3.25  ", "NaN"]
out["int_text"] = [{"s": s, "int": try_int(s)} for s in num_texts]
out["float_text"] = [{"s": s, "float": try_float(s)} for s in num_texts]

# --- qwen3_coder parameter conversion ----------------------------------------
def convert(value, name, config):
    if value.lower() == "null":
        return None
    if name not in config:
        return value
    spec = config[name]
    ptype = str(spec["type"]).strip().lower() if isinstance(spec, dict) and "type" in spec else "string"
    if ptype in ("string", "str", "text", "varchar", "char", "enum"):
        return value
    if ptype.startswith(("int", "uint", "long", "short", "unsigned")):
        try:
            return int(value)
        except Exception:
            return value
    if ptype.startswith(("num", "float")):
        try:
            maybe_int = "." not in value and "e" not in value.lower()
            f = float(value)
            if not math.isfinite(f):
                return value  # tern keeps non-finite numbers as strings
            return int(f) if maybe_int and f.is_integer() else f
        except Exception:
            return value
    if ptype in ("boolean", "bool", "binary"):
        return value.lower() == "true"
    if ptype in ("object", "array", "arr") or ptype.startswith(("dict", "list")):
        try:
            v = json.loads(value)
            json.dumps(v, allow_nan=False)
            return v
        except Exception:
            pass
    try:
        v = ast.literal_eval(value)
        json.dumps(v, allow_nan=False)
        return v
    except Exception:
        return value

config = {
    "location": {"type": "string", "description": "City"},
    "days": {"type": "integer"},
    "count": {"type": "int"},
    "ratio": {"type": "number"},
    "price": {"type": "float"},
    "flag": {"type": "boolean"},
    "opts": {"type": "object"},
    "items": {"type": "array"},
    "anything": {"type": ["string", "null"]},
    "untyped": {"description": "no type"},
    "mode": {"type": "enum"},
}
conv_cases = [
    ("Paris, France", "location"), ("null", "location"), ("NULL", "days"), ("3", "days"),
    (" 12 ", "days"), ("3.0", "days"), ("abc", "days"), ("1_000", "count"), ("2.50", "ratio"),
    ("10", "ratio"), ("1e3", "ratio"), ("-0.5", "price"), ("inf", "ratio"), ("x", "ratio"),
    ("True", "flag"), ("false", "flag"), ("yes", "flag"), ('{"a": [1, 2]}', "opts"),
    ("{'a': True, 'b': None}", "opts"), ("[1, 2,]", "items"), ('["x", "y"]', "items"),
    ("not json", "items"), ("42", "anything"), ("hello", "anything"), ("[1, 'a']", "anything"),
    ("plain", "untyped"), ("7", "unknown_param"), ("café ✓", "location"),
    ('line1\nline2 "quoted"\\', "location"), ("A", "mode"), ("123456789012345678901234567890", "days"),
    ("1e400", "opts"), ("{'k': 1e999}", "opts"),
]
out["xml_convert"] = [
    {"value": v, "name": n, "dumps": json.dumps(convert(v, n, config), ensure_ascii=False)}
    for v, n in conv_cases
]
out["xml_convert_config"] = config

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "py_golden.json")
with open(path, "w", encoding="utf-8") as f:
    json.dump(out, f, ensure_ascii=False, indent=1)
    f.write("\n")
print("wrote", path)
