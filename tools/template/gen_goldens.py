#!/usr/bin/python3
"""Regenerates the chat-template goldens in tests/golden/template/ from an
independent renderer: Python Jinja2 (Debian's python3-jinja2), configured as
Hugging Face transformers' apply_chat_template configures it.

Writes:
  chat_cases.json  real templates x chat scenarios (messages normalised as
                   tern's RenderChat does: see normalize_messages)
  snippets.json    small templates exercising the language (snippets.py)
  fuzz.json        random expression templates (fuzz.py), differential check
  hf_js_cases.json the 45 model templates of @huggingface/jinja's end-to-end
                   test (templates/hf_js, see extract_hfjs_templates.mjs) with
                   their own example context and a set of chat scenarios

Run: /usr/bin/python3 tools/template/gen_goldens.py
Optionally --check-js also renders chat_cases with @huggingface/jinja
(third_party/npm) and reports where the two references disagree.
"""
import copy
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz  # noqa: E402
import scenarios  # noqa: E402
import snippets  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "golden", "template")

# Fixed clock for strftime_now: 2025-03-14 09:26:53 UTC. The C++ test injects
# the same instant and formats it as UTC.
CLOCK_EPOCH = 1741944413
CLOCK = datetime.datetime(2025, 3, 14, 9, 26, 53)


class RaisedError(TemplateError):
    """What raise_exception() throws, told apart from other errors."""


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} tag (its AssistantTracker extension):
    the body renders as a call block; tracking assistant spans is off."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env():
    # transformers.utils.chat_template_utils._compile_jinja_template
    def raise_exception(message):
        raise RaisedError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return CLOCK.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, context):
    """Returns a golden record: {"output": str} or {"error": str, "raised": bool}."""
    try:
        tpl = env.from_string(source)
    except Exception as e:  # noqa: BLE001 - TemplateSyntaxError, or Python's own
        return {"error": "syntax: %s: %s" % (type(e).__name__, e), "raised": False}
    try:
        # A deep copy: some Jinja2 filters change their argument in place
        # (indent on a list appends "\n"), which must not leak across cases.
        return {"output": tpl.render(**copy.deepcopy(context))}
    except RaisedError as e:
        return {"error": e.message, "raised": True}
    except Exception as e:  # noqa: BLE001 - every failure is a golden "error"
        return {"error": "%s: %s" % (type(e).__name__, e), "raised": False}


def normalize_messages(messages, keep_null_content=False):
    """tern's RenderChat normalisation (src/template/chat.h), written again here."""
    out = []
    for m in messages:
        n = dict(m)
        if "content" not in n or n["content"] is None:
            n["content"] = None if keep_null_content else ""
        elif isinstance(n["content"], list):
            parts = n["content"]
            if all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in parts):
                n["content"] = "\n".join(p["text"] for p in parts)
        out.append(n)
    return out


def chat_context(tpl_info, scenario):
    # transformers' apply_chat_template: messages, tools, documents,
    # add_generation_prompt, then special tokens and kwargs.
    ctx = {
        "messages": normalize_messages(scenario["messages"], scenario.get("keep_null_content", False)),
        "tools": scenario.get("tools"),
        "documents": None,
        "add_generation_prompt": scenario.get("add_generation_prompt", True),
        "bos_token": tpl_info["bos_token"],
        "eos_token": tpl_info["eos_token"],
    }
    ctx.update(scenario.get("kwargs", {}))
    return ctx


def write_json(name, data):
    path = os.path.join(OUT, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", os.path.relpath(path, ROOT))


def check_js(cases):
    """Renders each chat case with @huggingface/jinja too; prints disagreements."""
    import subprocess

    script = r"""
const { Template } = require(process.argv[1]);
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = cases.map(c => {
  try {
    // @huggingface/jinja defines raise_exception and strftime_now itself
    // (the latter on the real clock, so date-dependent cases may differ).
    return { output: new Template(c.source).render(c.ctx) };
  } catch (e) { return { error: String(e.message || e) }; }
});
process.stdout.write(JSON.stringify(out));
"""
    mod = os.path.join(ROOT, "third_party", "npm", "node_modules", "@huggingface", "jinja")
    res = subprocess.run(["node", "-e", script, mod], input=json.dumps(cases), capture_output=True, text=True, check=True)
    js = json.loads(res.stdout)
    bad = 0
    for c, j in zip(cases, js):
        py = c["golden"]
        if "output" in py and j.get("output") != py["output"]:
            bad += 1
            print("JS DIFFERS:", c["name"])
        if "error" in py and "output" in j:
            print("JS renders where Jinja2 fails:", c["name"])
    print("check-js: %d of %d chat cases differ" % (bad, len(cases)))


HF_JS_SCENARIOS = ["single_user", "system_prompt", "multi_turn", "reasoning_content", "enable_thinking_false",
                   "tools", "tool_call_object_args", "parallel_tool_results", "final_assistant", "non_ascii"]


def hf_js_cases(env):
    with open(os.path.join(OUT, "templates", "hf_js", "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    by_name = {sc["name"]: sc for sc in scenarios.SCENARIOS}
    cases = []
    for entry in manifest:
        with open(os.path.join(OUT, "templates", entry["file"]), encoding="utf-8") as f:
            source = f.read()
        data = entry["data"]
        cases.append(dict(file=entry["file"], context=data, **render(env, source, data)))
        tokens = {"bos_token": data.get("bos_token") or "<s>", "eos_token": data.get("eos_token") or "</s>"}
        for name in HF_JS_SCENARIOS:
            rec = render(env, source, chat_context(tokens, by_name[name]))
            cases.append(dict(file=entry["file"], scenario=name, **tokens, **rec))
    return {"clock_epoch_utc": CLOCK_EPOCH, "cases": cases}


def main():
    env = make_env()
    results = []
    js_cases = []
    for tname, tinfo in scenarios.TEMPLATES.items():
        with open(os.path.join(OUT, "templates", tinfo["file"]), encoding="utf-8") as f:
            source = f.read()
        for sc in scenarios.SCENARIOS:
            rec = render(env, source, chat_context(tinfo, sc))
            results.append(dict(template=tname, scenario=sc["name"], **rec))
            js_cases.append({"name": "%s/%s" % (tname, sc["name"]), "source": source,
                             "ctx": chat_context(tinfo, sc), "golden": rec})
    write_json("chat_cases.json", {
        "generator": "tools/template/gen_goldens.py (Jinja2 %s)" % jinja2.__version__,
        "clock_epoch_utc": CLOCK_EPOCH,
        "templates": scenarios.TEMPLATES,
        "scenarios": scenarios.SCENARIOS,
        "results": results,
    })
    snip = []
    for name, source, ctx in snippets.SNIPPETS:
        snip.append(dict(name=name, template=source, context=ctx, **render(env, source, ctx)))
    write_json("snippets.json", {"clock_epoch_utc": CLOCK_EPOCH, "cases": snip})
    fz = []
    for i, (source, ctx) in enumerate(fuzz.generate(seed=20250314, count=1500)):
        rec = render(env, source, ctx)
        if fuzz.deterministic(rec):
            fz.append(dict(name="fuzz%d" % i, template=source, context=ctx, **rec))
    write_json("fuzz.json", {"clock_epoch_utc": CLOCK_EPOCH, "cases": fz})
    write_json("hf_js_cases.json", hf_js_cases(env))
    if "--check-js" in sys.argv:
        check_js(js_cases)


if __name__ == "__main__":
    main()
