"""Chat scenarios rendered through every real template (see gen_goldens.py).

Each scenario is what a client sends: OpenAI-style messages (before server
normalisation), optional tools, add_generation_prompt and template kwargs.
A template may reject a scenario (raise_exception, or a type error such as
DeepSeek-V3 concatenating object arguments): the golden then records the
error, and tern must fail too (with the same message for raise_exception).
"""

TEMPLATES = {
    "qwen3": {"file": "qwen3.jinja", "bos_token": "", "eos_token": "<|im_end|>"},
    "qwen3_5": {"file": "qwen3_5.jinja", "bos_token": "", "eos_token": "<|im_end|>"},
    "deepseek_v3": {"file": "deepseek_v3.jinja", "bos_token": "<｜begin▁of▁sentence｜>",
                    "eos_token": "<｜end▁of▁sentence｜>"},
    "deepseek_r1": {"file": "deepseek_r1.jinja", "bos_token": "<｜begin▁of▁sentence｜>",
                    "eos_token": "<｜end▁of▁sentence｜>"},
    "llama3_1": {"file": "llama3_1.jinja", "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama3_2_vision": {"file": "llama3_2_vision.jinja", "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "gemma3": {"file": "gemma3.jinja", "bos_token": "<bos>", "eos_token": "<end_of_turn>"},
    "mistral_nemo": {"file": "mistral_nemo.jinja", "bos_token": "<s>", "eos_token": "</s>"},
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a time zone.",
        "parameters": {
            "type": "object",
            "properties": {"tz": {"type": "string"}, "precise": {"type": "boolean", "default": False}},
            "required": ["tz"],
        },
    },
}
TOOLS = [WEATHER_TOOL, TIME_TOOL]


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hello! How are you?"}
A1 = {"role": "assistant", "content": "I'm fine, thanks. How can I help?"}
U2 = {"role": "user", "content": "What's the weather in Paris?"}

SCENARIOS = [
    {"name": "single_user", "messages": [U1]},
    {"name": "single_user_no_generation_prompt", "messages": [U1], "add_generation_prompt": False},
    {"name": "system_prompt", "messages": [SYS, U1]},
    {"name": "multi_turn", "messages": [SYS, U1, A1, U2]},
    {"name": "reasoning_content", "messages": [
        U1,
        {"role": "assistant", "content": "I'm well.", "reasoning_content": "The user greets me.\nI should reply."},
        U2,
    ]},
    {"name": "reasoning_last_assistant", "add_generation_prompt": False, "messages": [
        U1, {"role": "assistant", "content": "I'm well.", "reasoning_content": "Greeting; reply briefly."},
    ]},
    {"name": "inline_think", "messages": [
        U1, {"role": "assistant", "content": "<think>\nShort greeting.\n</think>\n\nHi there!"}, U2,
    ]},
    {"name": "inline_think_last", "add_generation_prompt": False, "messages": [
        U1, {"role": "assistant", "content": "<think>\nShort greeting.\n</think>\n\nHi there!"},
    ]},
    {"name": "enable_thinking_false", "messages": [U1], "kwargs": {"enable_thinking": False}},
    {"name": "enable_thinking_true", "messages": [SYS, U1], "kwargs": {"enable_thinking": True}},
    {"name": "tools", "messages": [SYS, U2], "tools": TOOLS},
    {"name": "tools_no_system", "messages": [U2], "tools": TOOLS},
    {"name": "tool_call_object_args", "tools": TOOLS, "messages": [
        U2,
        {"role": "assistant", "content": None,
         "tool_calls": [call("call0001a", "get_weather", {"city": "Paris", "unit": "celsius"})]},
        {"role": "tool", "tool_call_id": "call0001a", "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
    ]},
    {"name": "tool_call_string_args", "tools": TOOLS, "messages": [
        U2,
        {"role": "assistant", "content": None,
         "tool_calls": [call("call0001a", "get_weather", "{\"city\": \"Paris\", \"unit\": \"celsius\"}")]},
        {"role": "tool", "tool_call_id": "call0001a", "content": "21.5 C, clear"},
    ]},
    {"name": "tool_call_with_text", "tools": TOOLS, "messages": [
        U2,
        {"role": "assistant", "content": "Let me check the weather.",
         "tool_calls": [call("call0001a", "get_weather", {"city": "Paris"})]},
        {"role": "tool", "tool_call_id": "call0001a", "content": "21.5 C"},
    ]},
    {"name": "parallel_tool_results", "tools": TOOLS, "messages": [
        SYS,
        {"role": "user", "content": "Weather in Paris and the time in Tokyo?"},
        {"role": "assistant", "content": "",
         "tool_calls": [call("call0001a", "get_weather", {"city": "Paris", "unit": "celsius"}),
                        call("call0002b", "get_time", {"tz": "Asia/Tokyo", "precise": True})]},
        {"role": "tool", "tool_call_id": "call0001a", "content": "21.5 C"},
        {"role": "tool", "tool_call_id": "call0002b", "content": "18:04"},
        {"role": "assistant", "content": "It is 21.5 C in Paris and 18:04 in Tokyo."},
        {"role": "user", "content": "Thanks!"},
    ]},
    {"name": "tool_results_then_generation", "tools": TOOLS, "messages": [
        U2,
        {"role": "assistant", "content": "",
         "tool_calls": [call("call0001a", "get_weather", {"city": "Paris"}),
                        call("call0002b", "get_weather", {"city": "Lyon"})]},
        {"role": "tool", "tool_call_id": "call0001a", "content": "21 C"},
        {"role": "tool", "tool_call_id": "call0002b", "content": "19 C"},
    ]},
    {"name": "final_assistant", "add_generation_prompt": False, "messages": [SYS, U1, A1]},
    {"name": "non_ascii", "messages": [
        {"role": "system", "content": "Tu es un assistant serviable. 你是一个乐于助人的助手。"},
        {"role": "user", "content": "Ça va ? 天気はどう？ Привет 👋🏽 — «ok»"},
        {"role": "assistant", "content": "Très bien ! 一切都好。 ✅"},
        {"role": "user", "content": "Émoji: 🧑‍💻 and tabs\tand\nnewlines"},
    ]},
    {"name": "non_ascii_tool_args", "tools": TOOLS, "messages": [
        {"role": "user", "content": "Météo à Zürich ?"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("call0001a", "get_weather", {"city": "Zürich — 苏黎世", "unit": "celsius"})]},
        {"role": "tool", "tool_call_id": "call0001a", "content": "☀️ 23 °C"},
    ]},
    {"name": "content_parts", "messages": [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}]},
    ]},
    {"name": "whitespace_content", "messages": [
        {"role": "system", "content": "  padded system  \n"},
        {"role": "user", "content": "\n  question with spaces  \n\n"},
    ]},
    {"name": "long_conversation", "messages": [SYS] + [
        m for i in range(6) for m in (
            {"role": "user", "content": "Question %d?" % i},
            {"role": "assistant", "content": "Answer %d." % i},
        )
    ] + [{"role": "user", "content": "Last question?"}]},
    {"name": "date_string_kwarg", "messages": [SYS, U1], "tools": TOOLS, "kwargs": {"date_string": "01 Jan 2030"}},
    {"name": "tools_in_system", "messages": [SYS, U2], "tools": TOOLS, "kwargs": {"tools_in_user_message": False}},
    {"name": "null_content_kept", "keep_null_content": True, "tools": TOOLS, "messages": [
        U2,
        {"role": "assistant", "content": None,
         "tool_calls": [call("call0001a", "get_weather", "{\"city\": \"Paris\"}")]},
        {"role": "tool", "tool_call_id": "call0001a", "content": "21 C"},
        {"role": "assistant", "content": "21 C in Paris."},
    ]},
    # Templates that validate their input reject these.
    {"name": "error_assistant_first", "messages": [A1, U1]},
    {"name": "error_no_user", "messages": [SYS]},
    {"name": "error_system_not_first", "messages": [U1, SYS]},
    {"name": "error_bad_tool_call_id", "tools": TOOLS, "messages": [
        U2,
        {"role": "assistant", "content": None, "tool_calls": [call("x", "get_weather", {"city": "Paris"})]},
        {"role": "tool", "tool_call_id": "x", "content": "21 C"},
    ]},
]
