#!/usr/bin/python3
"""Writes the seed corpus fuzz/corpus/<target>/ (small, real-shaped inputs).

Run from the repository root after building tern_tokenize_dump_synthetic:
  build/src/tokenize/tern_tokenize_dump_synthetic 300 /tmp/synth
  /usr/bin/python3 fuzz/make_corpus.py /tmp/synth
The synthetic tokenizer (src/tokenize/synthetic.cc, 300 tokens) stands in
for the real tokenizer files, which are megabytes. Crash reproducers are not
written here: they live in fuzz/corpus/<target>/regress-* (fixed, replayed by
CI) and fuzz/findings/<target>/ (outside fuzz's areas, not yet fixed).
"""
import copy
import json
import os
import shutil
import struct
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    assert len(data) <= 16384, (target, name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def clean():
    for t in os.listdir(OUT) if os.path.isdir(OUT) else []:
        for n in os.listdir(os.path.join(OUT, t)):
            if not n.startswith("regress-"):
                os.remove(os.path.join(OUT, t, n))


# --- safetensors
def safetensors(tensors, metadata=None, pad=True, raw_header=None):
    header, data, off = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, nbytes in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + nbytes]}
        data += bytes((i * 7 + 3) & 0xFF for i in range(nbytes))
        off += nbytes
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    t = "safetensors_header"
    put(t, "bf16_f32", safetensors([("model.embed_tokens.weight", "BF16", [4, 2], 16),
                                    ("model.norm.weight", "F32", [2], 8)], {"format": "pt"}))
    put(t, "nvfp4_linear", safetensors([("model.layers.0.mlp.down_proj.weight", "U8", [2, 8], 16),
                                        ("model.layers.0.mlp.down_proj.weight_scale", "F8_E4M3", [2, 1], 2),
                                        ("model.layers.0.mlp.down_proj.weight_scale_2", "F32", [], 4),
                                        ("model.layers.0.mlp.down_proj.input_scale", "F32", [], 4)]))
    put(t, "fp8_block", safetensors([("q_proj.weight", "F8_E4M3", [4, 4], 16),
                                     ("q_proj.weight_scale_inv", "F32", [1, 1], 4)]))
    put(t, "ints_bools", safetensors([("a", "I64", [2], 16), ("b", "I32", [1, 1], 4), ("c", "BOOL", [3], 3),
                                      ("d", "F16", [0, 5], 0), ("e", "I8", [2], 2), ("f", "F64", [1], 8)]))
    put(t, "empty", safetensors([]))
    put(t, "metadata_only", safetensors([], {"format": "pt", "total_size": "0"}))
    put(t, "unpadded", safetensors([("x", "F32", [1], 4)], pad=False))
    put(t, "overlap", safetensors([], raw_header=b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                                  b'"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}') + bytes(12))
    put(t, "bad_dtype", safetensors([], raw_header=b'{"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}}') + bytes(2))
    put(t, "short", struct.pack("<Q", 1 << 40) + b"{}")

    t = "safetensors_index"
    shard = "model-00001-of-00001.safetensors"
    put(t, "valid", json.dumps({"metadata": {"total_size": 16},
                                "weight_map": {"model.embed_tokens.weight": shard, "lm_head.weight": shard}}, indent=2))
    put(t, "missing_shard", json.dumps({"weight_map": {"a": "model-00002-of-00002.safetensors", "b": shard}}))
    put(t, "bad_name", json.dumps({"weight_map": {"a": "../etc/passwd"}}))
    put(t, "not_string", json.dumps({"weight_map": {"a": 1}}))
    put(t, "no_map", json.dumps({"metadata": {}}))


# --- config.json (+ NUL + hf_quant_config.json)
def config_seeds():
    t = "model_config"
    with open(os.path.join(ROOT, "models", "demo", "config.json")) as f:
        demo = json.load(f)
    with open(os.path.join(ROOT, "models", "demo", "hf_quant_config.json")) as f:
        hfq = f.read()
    put(t, "demo_qwen3_moe_nvfp4", json.dumps(demo))
    put(t, "demo_with_hf_quant", json.dumps(demo) + "\0" + hfq)
    dense = {k: v for k, v in demo.items() if k not in ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
                                                       "decoder_sparse_step", "mlp_only_layers", "quantization_config")}
    dense.update(model_type="qwen3", architectures=["Qwen3ForCausalLM"], tie_word_embeddings=True)
    put(t, "qwen3_dense", json.dumps(dense))
    fp8 = dict(dense, quantization_config={"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                           "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]})
    put(t, "qwen3_fp8_block", json.dumps(fp8))
    hybrid = dict(dense, model_type="qwen3_5_moe", num_hidden_layers=4, num_experts=8, num_experts_per_tok=2,
                  moe_intermediate_size=64, shared_expert_intermediate_size=64,
                  layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
                  linear_conv_kernel_dim=4, linear_key_head_dim=32, linear_num_key_heads=2,
                  linear_num_value_heads=4, linear_value_head_dim=32, partial_rotary_factor=0.25,
                  attn_output_gate=True, mtp_num_hidden_layers=1,
                  rope_parameters={"rope_type": "default", "rope_theta": 10000000, "mrope_section": [11, 11, 10]})
    put(t, "qwen3_5_moe_hybrid", json.dumps({"model_type": "qwen3_5_moe", "text_config": hybrid}))
    put(t, "qwen3_next_interval", json.dumps(dict(hybrid, model_type="qwen3_next", full_attention_interval=4,
                                                  layer_types=None, num_nextn_predict_layers=1)))
    mixed = {"producer": {"name": "modelopt", "version": "0.29"},
             "quantization": {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8",
                              "quantized_layers": {"model.layers.0.mlp.down_proj": {"quant_algo": "NVFP4", "group_size": 16},
                                                   "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}},
                              "exclude_modules": ["lm_head", "model.layers.*.mlp.gate"]}}
    put(t, "mixed_precision", json.dumps(dense) + "\0" + json.dumps(mixed))
    put(t, "minimal_invalid", '{"model_type": "qwen3", "hidden_size": -1}')


# --- tokenizer.json and tokenizer_config.json
def tokenizer_seeds(synth_dir):
    t = "tokenizer_json"
    with open(os.path.join(synth_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    put(t, "synthetic_300", json.dumps(tok, ensure_ascii=False))
    v = copy.deepcopy(tok)
    v["model"]["merges"] = [" ".join(m) for m in v["model"]["merges"]]
    put(t, "merges_as_strings", json.dumps(v, ensure_ascii=False))
    v = copy.deepcopy(tok)
    v["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "NFD"}]}
    v["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]}
    v["post_processor"] = {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [257],
                                                               "tokens": ["<|im_start|>"]}}}
    v["decoder"] = {"type": "Sequence", "decoders": [{"type": "ByteLevel", "add_prefix_space": True,
                                                      "trim_offsets": True, "use_regex": True}]}
    put(t, "variants", json.dumps(v, ensure_ascii=False))
    v = copy.deepcopy(tok)
    v["normalizer"] = None
    v["model"]["byte_fallback"] = True
    v["model"]["ignore_merges"] = True
    for a in v["added_tokens"]:
        a["lstrip"] = a["rstrip"] = True
        a["single_word"] = True
        a["normalized"] = not a["special"]
    v["pre_tokenizer"] = {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False}
    put(t, "flags_split_string", json.dumps(v, ensure_ascii=False))
    tiny = {"version": "1.0", "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
            "post_processor": None, "decoder": {"type": "ByteLevel"},
            "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3}, "merges": [["a", "b"]]}}
    put(t, "tiny", json.dumps(tiny))

    t = "tokenizer_config"
    with open(os.path.join(synth_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    put(t, "synthetic_qwen3", json.dumps(cfg, ensure_ascii=False))
    c = dict(cfg)
    tpl = c.pop("chat_template")
    put(t, "with_chat_template_file", json.dumps(c) + "\0" + tpl)
    c = dict(cfg, chat_template=[{"name": "default", "template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"},
                                 {"name": "tool_use", "template": "{{ tools|tojson }}"}],
             bos_token={"content": "<s>", "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                        "__type": "AddedToken"}, add_bos_token=True, model_max_length=1e30)
    put(t, "list_form_addedtoken", json.dumps(c))
    put(t, "minimal", '{"eos_token": "</s>", "model_max_length": 2048}')


# --- chat templates
def jinja_seeds():
    t = "jinja"
    tdir = os.path.join(ROOT, "tests", "golden", "template", "templates")
    for n in sorted(os.listdir(tdir)):
        p = os.path.join(tdir, n)
        if n.endswith(".jinja") and os.path.getsize(p) <= 8192:
            shutil.copy(p, os.path.join(OUT, t, "tpl_" + n[:-6]))
    with open(os.path.join(ROOT, "tests", "golden", "template", "snippets.json"), encoding="utf-8") as f:
        for c in json.load(f)["cases"]:
            put(t, "snip_" + c["name"], c["template"])


# --- request bodies
def request_seeds():
    t = "request_body"
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                               "parameters": {"type": "object", "properties": {
                                                   "city": {"type": "string"}, "days": {"type": "integer"}},
                                                   "required": ["city"]}}}]
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    bodies = {
        "chat_min": {"model": "default", "messages": [{"role": "user", "content": "Hi"}]},
        "chat_tools": {"model": "default", "messages": msgs, "tools": tools, "tool_choice": "auto", "max_tokens": 64,
                       "temperature": 0.7, "top_p": 0.9, "stream": True, "stream_options": {"include_usage": True}},
        "chat_named_tool": {"messages": msgs[:2], "tools": tools,
                            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "n": 2,
                            "logit_bias": {"15": -100}, "seed": 1, "stop": ["\n\n", "END"], "logprobs": True,
                            "top_logprobs": 3},
        "chat_parts": {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                  {"type": "image_url", "image_url": {"url": "x"}}]}],
                       "chat_template_kwargs": {"enable_thinking": False}, "reasoning_effort": "low",
                       "separate_reasoning": True, "max_completion_tokens": 10, "min_tokens": 2},
        "chat_continue": {"messages": [{"role": "user", "content": "Count"}, {"role": "assistant", "content": "1, 2"}],
                          "continue_final_message": True, "add_generation_prompt": False,
                          "response_format": {"type": "json_object"}, "presence_penalty": 0.5,
                          "frequency_penalty": 0.1, "repetition_penalty": 1.1, "top_k": 20, "min_p": 0.05},
        "chat_input_ids": {"messages": [], "input_ids": [1, 2, 3], "rid": "r1", "user": "u",
                           "return_prompt_token_ids": True},
        "completion_text": {"model": "default", "prompt": "Once upon", "max_tokens": 16, "echo": True,
                            "logprobs": 2, "suffix": None, "best_of": 1},
        "completion_batch": {"prompt": ["a", "b"], "n": 2, "stop": "x", "stream": True},
        "completion_ids": {"prompt": [[1, 2], [3]], "max_tokens": 1, "ignore_eos": True, "skip_special_tokens": False},
        "generate_text": {"text": "Hello", "sampling_params": {"max_new_tokens": 8, "temperature": 0,
                                                               "stop": ["."], "stop_token_ids": [2]},
                          "return_logprob": True, "logprob_start_len": 0, "top_logprobs_num": 2},
        "generate_batch_ids": {"input_ids": [[1, 2, 3], [4]], "sampling_params": [{"n": 1}, {"max_new_tokens": 2}],
                               "stream": True, "rid": ["a", "b"]},
    }
    for name, b in bodies.items():
        put(t, name, json.dumps(b, ensure_ascii=False))
    put(t, "not_object", "[1, 2]")
    put(t, "invalid_json", '{"messages": [')


# --- structured-output constraints (fuzz/grammar.cc: a mode byte, then the text)
def grammar_seeds():
    t = "grammar"
    schemas = {
        "object": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                                    "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                                    "tags": {"type": "array", "items": {"type": "string"},
                                                             "maxItems": 3}},
                   "required": ["name"]},
        "refs": {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "number"},
                                                                       "next": {"anyOf": [{"$ref": "#/$defs/node"},
                                                                                          {"type": "null"}]}}}},
                 "$ref": "#/$defs/node"},
        "enum_const": {"oneOf": [{"enum": ["a", 1, None, True, {"k": [1]}]}, {"const": "x\u00e9"}]},
        "numbers": {"type": "array", "prefixItems": [{"type": "number", "exclusiveMinimum": -1.5,
                                                      "multipleOf": 0.25}, {"type": "integer", "minimum": -100}],
                    "minItems": 1},
        "formats": {"type": "object", "properties": {"d": {"type": "string", "format": "date-time"},
                                                     "u": {"type": "string", "format": "uuid"},
                                                     "p": {"type": "string", "pattern": "^[a-z]{2,4}\\d?$"}},
                    "additionalProperties": {"type": "boolean"}, "minProperties": 1},
        "any": {},
    }
    for name, schema in schemas.items():
        put(t, "schema_" + name, b"\x00" + json.dumps(schema, ensure_ascii=False).encode("utf-8"))
    put(t, "schema_spaced_loose", b"\x14" + json.dumps(schemas["object"]).encode("utf-8"))
    regexes = {
        "phone": r"^(\d{3})-[a-f\d]{2,}(x|y)?\.?$",
        "escapes": r"\u0041\x42\u{1F600}[\]\-]{2}\{1\}",
        "nested": r"((ab|c)*d){1,3}[^xyz]+?",
        "classes": r"[\w\s]{0,5}\S\W(?:e|é|€)",
    }
    for name, rx in regexes.items():
        put(t, "regex_" + name, b"\x01" + rx.encode("utf-8"))
    grammars = {
        "pairs": 'root ::= "{" pair ("," pair)* "}"   # comment\npair ::= [a-z]+ ":" (num | "null")\n'
                 'num ::= "-"? [0-9]{1,3} ("." [0-9]+)?\n',
        "recursive": 'root ::= "(" root ")" | [^()]\nx ::= "unused"\n',
        "unicode": 'root ::= ("é" | [\\u4e00-\\u9fff] | "\\x41")+ end\nend ::= "." | "!"\n',
    }
    for name, g in grammars.items():
        put(t, "ebnf_" + name, b"\x02" + g.encode("utf-8"))


# --- model replies as the chat endpoint parses them (fuzz/chat_output.cc: a mode byte, then the reply)
def chat_output_seeds():
    t = "chat_output"
    replies = {
        "think_answer": (0, "<think>\n17 x 19: 17 x 20 = 340, minus 17.\n</think>\n\n323"),
        "forced_think": (4, "The user wants the time.\n</think>\n\nIt is noon."),
        "hermes_call": (1, '<think>\nneed a tool\n</think>\n\n<tool_call>\n{"name": "get_time", '
                           '"arguments": {"timezone": "UTC", "days": 2}}\n</tool_call>'),
        "qwen25_two": (0, 'Sure.\n<tool_call>\n{"name": "get_time", "arguments": {"opts": {"a": [1, 2.5e3]}}}\n'
                          '</tool_call>\n<tool_call>\n{"name": "noop", "arguments": {}}\n</tool_call>'),
        "coder_xml": (2, "<tool_call>\n<function=get_time>\n<parameter=timezone>\nEurope/Paris\n</parameter>\n"
                         "<parameter=days>\n3\n</parameter>\n<parameter=ok>\nTrue\n</parameter>\n"
                         "<parameter=tags>\n['a', \"b\"]\n</parameter>\n</function>\n</tool_call>"),
        "coder_unknown": (2, "<tool_call>\n<function=missing>\n<parameter=x>\n1\n</parameter>\n</function>\n"
                             "</tool_call> trailing"),
        "plain": (3, "Hello \u00e9\u6771 \\u00e9 {\"json\": true}"),
        "unterminated": (9, '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "U'),
        "held_reasoning": (16, "<think>a</think>b<think>c"),
    }
    for name, (mode, text) in replies.items():
        put(t, name, bytes([mode]) + text.encode("utf-8"))


def main():
    synth = sys.argv[1] if len(sys.argv) > 1 else "/tmp/synth"
    clean()
    os.makedirs(os.path.join(OUT, "jinja"), exist_ok=True)
    safetensors_seeds()
    config_seeds()
    tokenizer_seeds(synth)
    jinja_seeds()
    request_seeds()
    grammar_seeds()
    chat_output_seeds()
    for t in sorted(os.listdir(OUT)):
        files = os.listdir(os.path.join(OUT, t))
        size = sum(os.path.getsize(os.path.join(OUT, t, n)) for n in files)
        print("%-20s %4d files %7d bytes" % (t, len(files), size))


if __name__ == "__main__":
    main()
