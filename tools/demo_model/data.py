# Synthetic chat data for the demo model: a deterministic function from (seed, index) to one
# training conversation, rendered with the real Qwen3 chat template exactly as tern's server
# renders it (chat.py), and split into prompt (not trained on) and assistant completion
# (trained on). The tasks are those of tern's validation battery (src/check/checks_*.cc:
# "Reply with exactly the word OK", 17 × 19 with thinking off and on, multi-turn code-word
# recall, get_weather tool calling, the generic prompts) plus paraphrases and variations:
# word echo, two-digit addition / subtraction / multiplication (answered with the bare number
# when thinking is off, after a short worked <think> trace when it is on), capitals, weather
# tool calls answered from the tool result, short generic replies, short-context retrieval.
#
# A small set of multiplication pairs is held out while `holdout` is true (train.py turns it
# off for the last part of training: the final metric is over all 8,100 two-digit products
# and memorising them is allowed).
import dataclasses
import json
import random

from chat import render

# The chat style the samples are rendered in: "qwen3" (the first demo model: Qwen3's template,
# hermes JSON tool calls, the reply opens <think> itself) or "qwen3_5" (Qwen3.5's template:
# qwen3_coder XML tool calls, and with thinking on the generation prompt already holds
# "<think>\n", so the trained completion starts inside the reasoning). train.py sets it from
# run.json's "style" before the first sample; the stream is a function of (seed, index, style).
STYLE = "qwen3"


def configure(style):
    global STYLE
    if style not in ("qwen3", "qwen3_5"):
        raise ValueError(f"chat style {style!r}")
    STYLE = style

# ---------------------------------------------------------------------------------------------
# Battery prompts (src/check/checks_common.h `prompts::`, checks_conversation.cc, checks_tools.cc)

OK_PROMPT = "Reply with exactly the word OK and nothing else."
ARITH_PROMPT = "What is 17 × 19? Reply with the number only."
ARITH_THINK_PROMPT = "What is 17 × 19? Think it through, then give the final answer."
SENTENCE_PROMPT = "Write one sentence about the sea."
COLORS_PROMPT = "Name the three primary colors of light, separated by commas."
OCEAN_PROMPT = "Write three sentences about the ocean."
COUNT_PROMPT = "Count from one to twenty in words, separated by spaces."
WEATHER_PROMPT = "What is the weather like in Paris right now? Use the get_weather tool."
RECALL_TURNS = ("Remember this code word: {w}. Reply with just 'Noted.'",
                "What is the capital of France? Answer in one word.",
                "What was the code word I asked you to remember? Reply with the code word only.")
BATTERY_TOOL_RESULT = '{"location": "Paris", "temperature": 18, "unit": "celsius", "condition": "sunny"}'

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["location"],
    "additionalProperties": False,
}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": WEATHER_SCHEMA}}
TIME_TOOL = {"type": "function", "function": {
    "name": "get_time", "description": "Get the current local time in a city.",
    "parameters": {"type": "object",
                   "properties": {"location": {"type": "string", "description": "City name"}},
                   "required": ["location"], "additionalProperties": False}}}

# ---------------------------------------------------------------------------------------------
# Word lists

CAPITALS = [("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"),
            ("Portugal", "Lisbon"), ("Japan", "Tokyo"), ("China", "Beijing"), ("Egypt", "Cairo"),
            ("Canada", "Ottawa"), ("Australia", "Canberra"), ("Russia", "Moscow"), ("Greece", "Athens"),
            ("Norway", "Oslo"), ("Sweden", "Stockholm"), ("Finland", "Helsinki"), ("Poland", "Warsaw"),
            ("Austria", "Vienna"), ("Ireland", "Dublin"), ("Kenya", "Nairobi"), ("Peru", "Lima"),
            ("Chile", "Santiago"), ("Mexico", "Mexico City"), ("India", "New Delhi"),
            ("Thailand", "Bangkok"), ("Turkey", "Ankara"), ("Belgium", "Brussels"),
            ("Denmark", "Copenhagen"), ("Hungary", "Budapest"), ("Argentina", "Buenos Aires"),
            ("Brazil", "Brasilia"), ("the United Kingdom", "London"), ("Cuba", "Havana"),
            ("South Korea", "Seoul"), ("Vietnam", "Hanoi"), ("Morocco", "Rabat"), ("Iceland", "Reykjavik")]
CITIES = ["Paris", "London", "Berlin", "Madrid", "Rome", "Tokyo", "Oslo", "Vienna", "Dublin", "Lisbon",
          "Cairo", "Lima", "Seoul", "Boston", "Chicago", "Denver", "Seattle", "Sydney", "Toronto",
          "Mumbai", "Nairobi", "Athens", "Prague", "Warsaw", "Zurich", "Geneva", "Munich", "Milan",
          "Hanoi", "Bangkok", "Havana", "Santiago", "Helsinki", "Stockholm", "Copenhagen", "Brussels",
          "Amsterdam", "Istanbul", "Moscow", "Beijing", "Shanghai", "Montreal", "Vancouver", "Austin"]
CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "foggy", "snowy", "clear", "stormy", "overcast",
              "partly cloudy", "drizzly", "humid"]
CODE_WORDS = ["MARIGOLD", "PELICAN", "THUNDER", "SAPPHIRE", "LANTERN", "ORCHID", "GRANITE", "FALCON",
              "VELVET", "COMET", "HARBOR", "JUNIPER", "MAPLE", "NEPTUNE", "OBSIDIAN", "PEBBLE", "QUARTZ",
              "RAVEN", "SILVER", "TULIP", "UMBRELLA", "VIOLET", "WALNUT", "ZEPHYR", "AMBER", "BISCUIT",
              "CACTUS", "DOLPHIN", "EMERALD", "FEATHER", "GLACIER", "HICKORY", "IVORY", "JASMINE",
              "KESTREL", "LAVENDER", "MEADOW", "NUTMEG", "OLIVE", "PANTHER", "QUILL", "ROCKET", "SPARROW",
              "TIMBER", "URCHIN", "VOLCANO", "WILLOW", "YARROW", "ZINNIA", "ANCHOR", "BAMBOO", "CANYON",
              "DRIFTWOOD", "EMBER", "FIREFLY", "GARNET", "HAZEL", "INDIGO", "JAGUAR", "KIWI", "LOTUS",
              "MAGNOLIA", "NIMBUS", "OCELOT", "PAPRIKA", "RIDDLE", "SAFFRON", "TANGO", "VIKING",
              "WHISTLE", "BLUEBIRD", "COPPER", "DAISY", "ECLIPSE", "FROST", "GINGER", "HORIZON", "ICICLE",
              "KOALA", "LEMON", "MOSAIC", "NOVA", "OPAL", "PUZZLE", "RUBY", "SUMMIT", "TOPAZ", "VALLEY",
              "WAFFLE", "CRIMSON", "PINECONE", "STARLIGHT", "BUTTERCUP", "CINNAMON", "HURRICANE",
              "MOONBEAM", "PEPPERMINT", "SEASHELL", "TORNADO", "SUNFLOWER"]
ECHO_WORDS = ["OK", "OK", "OK", "OK", "yes", "no", "hello", "done", "ready", "Noted.", "thanks", "blue",
              "green", "apple", "seven", "Paris", "fine", "sure", "stop", "go", "maybe", "true", "false",
              "YES", "NO", "Hi", "Goodbye", "alpha", "bravo", "delta", "echo", "sun", "moon", "river",
              "tree", "cat", "dog", "fish", "bird", "red", "orange", "purple", "pizza", "coffee", "tea"]
ECHO_TEMPLATES = ["Reply with exactly the word {w} and nothing else.", "Reply with exactly: {w}",
                  "Reply with exactly the word {w}.", "Say {w}.", "Say {w} and nothing else.",
                  "Respond with the single word {w}.", "Reply with just '{w}'.",
                  "Answer with only the word {w}.", "Please reply with {w} and nothing else.",
                  "Output the word {w}.", "Reply with {w}.", "Just say {w}.",
                  "Type the word {w} and nothing else.", "Repeat after me: {w}"]
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                "eighteen", "nineteen", "twenty"]

# Topic -> sentences, for "Write one/two/three sentences about X."
TOPICS = {
    "the sea": ["The sea stretches to the horizon in shades of blue and grey.",
                "Waves roll onto the shore and pull the sand back with them.",
                "Sailors have crossed the sea for thousands of years.",
                "The sea is calm in the morning and restless by night."],
    "the ocean": ["The ocean covers most of the surface of the Earth.",
                  "Whales and tiny plankton share the same deep water.",
                  "Its currents carry warm water from the tropics toward the poles.",
                  "The deepest parts of the ocean are still dark and unexplored."],
    "the moon": ["The moon lights the night sky with reflected sunlight.",
                 "Its pull on the Earth raises the tides.",
                 "People first walked on the moon in the summer of that famous year.",
                 "The moon shows the same face to the Earth at all times."],
    "the sun": ["The sun is a star at the center of our solar system.",
                "Its light takes a few minutes to reach the Earth.",
                "Plants turn sunlight into food.", "The sun rises in the east and sets in the west."],
    "a forest": ["A forest is full of tall trees and quiet paths.",
                 "Birds sing in the branches while deer move through the shade.",
                 "Fallen leaves feed the soil of the forest floor.",
                 "A walk in the forest can clear a busy mind."],
    "mountains": ["Mountains rise high above the valleys below.",
                  "Snow stays on the highest peaks all year.",
                  "Climbers need patience and good boots to reach the top.",
                  "Rivers often begin as streams in the mountains."],
    "rain": ["Rain taps gently on the roof at night.", "The garden smells fresh after the rain.",
             "Rain fills the rivers and the lakes.", "Children love to jump in puddles after rain."],
    "cats": ["Cats sleep for most of the day in warm spots.", "A cat purrs when it feels safe.",
             "Cats are curious and love to explore small spaces.",
             "Many cats chase string and paper balls."],
    "dogs": ["Dogs are loyal friends to the people they live with.",
             "A dog wags its tail when it is happy.", "Dogs need long walks and plenty of play.",
             "Some dogs help people who cannot see."],
    "music": ["Music can change the mood of a room in seconds.",
              "People play music to celebrate and to remember.",
              "A good song stays in your head all day.", "Learning an instrument takes daily practice."],
    "books": ["Books carry stories across centuries.", "A good book can keep you reading all night.",
              "Libraries lend books to anyone who asks.", "Reading every day builds a strong vocabulary."],
    "winter": ["Winter brings short days and long cold nights.",
               "Snow covers the fields in a soft white layer.", "People wear coats and scarves in winter.",
               "Hot soup tastes best on a winter evening."],
    "the city": ["The city never really sleeps.", "Buses and trains carry people across the city.",
                 "Tall buildings line the busy streets.", "Parks give the city room to breathe."],
    "coffee": ["Coffee is made from roasted beans.", "Many people drink coffee in the morning.",
               "The smell of fresh coffee fills the kitchen.", "Coffee tastes bitter without sugar."],
}
LISTS = [("Name the three primary colors of light, separated by commas.", "Red, green, blue"),
         ("What are the three primary colors of light?", "Red, green and blue."),
         ("Name three fruits, separated by commas.", "Apple, banana, cherry"),
         ("Name three animals, separated by commas.", "Cat, dog, horse"),
         ("Name the four seasons, separated by commas.", "Spring, summer, autumn, winter"),
         ("Name three colors of the rainbow, separated by commas.", "Red, orange, yellow"),
         ("List the days of the weekend, separated by commas.", "Saturday, Sunday"),
         ("Name three planets, separated by commas.", "Mercury, Venus, Earth")]
CHITCHAT = [("Hello!", "Hello! How can I help you today?"),
            ("Hi", "Hi! What can I do for you?"),
            ("Who are you?", "I am a small demo model served by tern."),
            ("What can you do?", "I can answer simple questions, do arithmetic and call tools."),
            ("Thank you!", "You are welcome!"),
            ("How are you?", "I am fine, thank you. How can I help?"),
            ("Tell me a joke.", "Why did the scarecrow win an award? Because he was outstanding in his field."),
            ("Goodbye!", "Goodbye! Have a nice day."),
            ("What is your name?", "I am the tern demo model.")]
SYSTEM_PROMPTS = ["You are a helpful assistant.", "You are a concise assistant.",
                  "You are a helpful assistant. Answer briefly."]

# Filler for short-context retrieval (the words of checks_conversation.cc's long-context check).
ADJ = ["quiet", "amber", "distant", "narrow", "silver", "patient", "crooked", "gentle", "hollow", "bright",
       "weathered", "lonely", "curious", "steady"]
NOUNS = ["lighthouse", "orchard", "ferry", "library", "meadow", "harbor", "caravan", "observatory", "bakery",
         "canal", "workshop", "garden", "bridge", "market"]
VERBS = ["watched over", "leaned toward", "remembered", "sheltered", "echoed", "outlasted", "overlooked",
         "welcomed", "surrounded", "followed"]
PLACES = ["the northern hills", "an old stone wall", "the river bend", "a foggy valley", "the edge of town",
          "a row of cedar trees", "the empty square", "the coast road"]
VAULT_COLORS = ["blue", "red", "green", "black", "white", "golden", "silver", "north", "east", "old"]

# ---------------------------------------------------------------------------------------------
# Arithmetic

MUL_SYMBOLS = ["×"] * 6 + ["*"] * 3 + ["x"] * 2
MUL_FORMS = ["What is {e}?"] * 6 + ["What's {e}?", "Compute {e}.", "Calculate {e}.", "{e} = ?", "{e}", "{e}=",
                                    "Solve {e}.", "What is {a} times {b}?", "What is {a} multiplied by {b}?",
                                    "Multiply {a} by {b}.", "What is the product of {a} and {b}?",
                                    "How much is {e}?", "Please compute {e}."]
ADD_FORMS = ["What is {e}?"] * 4 + ["Compute {e}.", "Calculate {e}.", "{e} = ?", "{e}", "What is {a} plus {b}?",
                                    "Add {a} and {b}.", "What is the sum of {a} and {b}?", "How much is {e}?"]
SUB_FORMS = ["What is {e}?"] * 4 + ["Compute {e}.", "Calculate {e}.", "{e} = ?", "{e}", "What is {a} minus {b}?",
                                    "Subtract {b} from {a}.", "How much is {e}?"]
NUMBER_ONLY = [" Reply with the number only."] * 4 + [" Answer with just the number.", " Give only the number.",
                                                      " Just the number, please.", " Reply with only the answer."]
THINK_IT = [" Think it through, then give the final answer."] * 3 + [" Think step by step.", " Show your work."]


def held_out_pairs(seed=1234, count=100):
    """Unordered two-digit pairs (a <= b) kept out of training while the holdout is on."""
    rng = random.Random(seed)
    pairs = [(a, b) for a in range(10, 100) for b in range(a, 100)]
    return set(rng.sample(pairs, count))


HELD_OUT = held_out_pairs()


def is_held_out(a, b):
    return (min(a, b), max(a, b)) in HELD_OUT


def mul_trace(a, b):
    """The <think> body for a × b: partial products by the ones and tens digit of b, written
    with four digits so that the digits of the sum line up at fixed distances, then the sum."""
    b1, b0 = divmod(b, 10)
    if b1 == 0:
        return f"{a}×{b}={a * b:04d}"
    p0, p1 = a * b0, a * b1 * 10
    return f"{a}×{b0}={p0:04d}\n{a}×{b1}0={p1:04d}\n{p0:04d}+{p1:04d}={a * b:04d}"


def add_trace(a, b):
    return f"{a:04d}+{b:04d}={a + b:04d}"


def sub_trace(a, b):
    if a >= b:
        return f"{a:04d}-{b:04d}={a - b:04d}"
    return f"{b:04d}-{a:04d}={b - a:04d}\n{a}-{b}=-{b - a}"


def mul_expr(rng, a, b):
    sym = rng.choice(MUL_SYMBOLS)
    space = rng.random() < 0.75 or sym == "x"
    return f"{a} {sym} {b}" if space else f"{a}{sym}{b}"


def two_digit_operand(rng):
    return rng.randint(10, 99)


def arithmetic_prompt(rng, op, a, b, thinking):
    """-> the user message for a op b, paraphrased; the battery forms get extra weight."""
    if op == "*":
        if rng.random() < 0.3:
            return f"What is {a} × {b}? " + ("Think it through, then give the final answer." if thinking
                                             else "Reply with the number only.")
        form, e = rng.choice(MUL_FORMS), mul_expr(rng, a, b)
    elif op == "+":
        form = rng.choice(ADD_FORMS)
        e = f"{a} + {b}" if rng.random() < 0.75 else f"{a}+{b}"
    else:
        form = rng.choice(SUB_FORMS)
        e = f"{a} - {b}" if rng.random() < 0.75 else f"{a}-{b}"
    text = form.format(e=e, a=a, b=b)
    r = rng.random()
    if r < 0.45:
        text += rng.choice(NUMBER_ONLY)
    elif r < 0.65:
        text += rng.choice(THINK_IT)
    return text


def arithmetic_answer(op, a, b, thinking):
    """-> (assistant completion after the generation prompt, answer value)."""
    v = a * b if op == "*" else a + b if op == "+" else a - b
    if not thinking:
        return str(v), v
    trace = mul_trace(a, b) if op == "*" else add_trace(a, b) if op == "+" else sub_trace(a, b)
    return f"<think>\n{trace}\n</think>\n\n{v}", v


def think(text):
    return f"<think>\n{text}\n</think>\n\n"


# ---------------------------------------------------------------------------------------------
# Samples


@dataclasses.dataclass
class Sample:
    kind: str
    completion: str                 # what the model generates, without the final <|im_end|>
    messages: list = None           # chat history before the completion (None: raw text)
    tools: list = None
    thinking: bool = True
    raw_prompt: str = None          # for raw-text samples: the text before the completion
    weight: float = 1.0             # loss weight of the completion tokens
    answer: object = None           # the value a judge looks for (eval only)

    def prompt_text(self):
        if self.messages is None:
            return self.raw_prompt
        return render(self.messages, tools=self.tools, add_generation_prompt=True,
                      enable_thinking=self.thinking, style=STYLE)

    def completion_text(self):
        """The trained text: the completion and the end token (<|im_end|> in chat, <|endoftext|> raw)."""
        return self.reply_text() + ("<|endoftext|>" if self.messages is None else "<|im_end|>")

    def reply_text(self):
        """The completion as the model generates it after this style's generation prompt: in
        the qwen3_5 style with thinking on the prompt already opened "<think>\n", so a
        completion's own "<think>\n" is dropped, and one without reasoning closes the empty block."""
        c = self.completion
        if STYLE == "qwen3_5" and self.messages is not None and self.thinking:
            c = c[len("<think>\n"):] if c.startswith("<think>\n") else "\n</think>\n\n" + c
        return c


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


def maybe_system(rng, messages, p=0.08):
    if rng.random() < p:
        return [{"role": "system", "content": rng.choice(SYSTEM_PROMPTS)}] + messages
    return messages


def gen_mul(rng, thinking, holdout):
    while True:
        r = rng.random()
        if r < 0.88:
            a, b = two_digit_operand(rng), two_digit_operand(rng)
        elif r < 0.96:
            a, b = rng.randint(2, 9), two_digit_operand(rng)
            if rng.random() < 0.5:
                a, b = b, a
        else:
            a, b = rng.randint(0, 12), rng.randint(0, 12)
        if not (holdout and is_held_out(a, b)):
            break
    prompt = arithmetic_prompt(rng, "*", a, b, thinking)
    completion, v = arithmetic_answer("*", a, b, thinking)
    return Sample("mul_" + ("on" if thinking else "off"), completion, maybe_system(rng, [user(prompt)]),
                  thinking=thinking, weight=1.0 if thinking else 2.0, answer=v)


def gen_addsub(rng, thinking):
    op = rng.choice("+-")
    a = rng.randint(0, 99) if rng.random() < 0.3 else two_digit_operand(rng)
    b = rng.randint(0, 99) if rng.random() < 0.3 else two_digit_operand(rng)
    prompt = arithmetic_prompt(rng, op, a, b, thinking)
    completion, v = arithmetic_answer(op, a, b, thinking)
    return Sample("addsub_" + ("on" if thinking else "off"), completion, maybe_system(rng, [user(prompt)]),
                  thinking=thinking, answer=v)


def gen_echo(rng, thinking):
    w = rng.choice(ECHO_WORDS) if rng.random() < 0.7 else rng.choice(CODE_WORDS).lower()
    prompt = OK_PROMPT if rng.random() < 0.25 else rng.choice(ECHO_TEMPLATES).format(w=w)
    if prompt == OK_PROMPT:
        w = "OK"
    completion = (think(f"The user wants me to reply with exactly {w}.") if thinking else "") + w
    return Sample("echo", completion, maybe_system(rng, [user(prompt)]), thinking=thinking, answer=w)


def capital_qa(rng, country, capital):
    forms = [(f"What is the capital of {country}?", f"{capital}."),
             (f"What is the capital of {country}? Answer in one word.", f"{capital}."),
             (f"The capital city of {country} is", f"{capital}."),
             (f"Complete the sentence: The capital city of {country} is", f"The capital city of {country} is {capital}."),
             (f"Which city is the capital of {country}?", f"The capital of {country} is {capital}."),
             (f"What is the capital city of {country}?", f"{capital}."),
             (f"Name the capital of {country}.", f"{capital}.")]
    return rng.choice(forms)


def gen_capital(rng, thinking):
    country, capital = CAPITALS[0] if rng.random() < 0.35 else rng.choice(CAPITALS)
    q, a = capital_qa(rng, country, capital)
    completion = (think(f"The capital of {country} is {capital}.") if thinking else "") + a
    return Sample("capital", completion, maybe_system(rng, [user(q)]), thinking=thinking, answer=capital)


def gen_capital_raw(rng):
    country, capital = CAPITALS[0] if rng.random() < 0.35 else rng.choice(CAPITALS)
    return Sample("capital_raw", f" {capital}.", None, raw_prompt=f"The capital city of {country} is",
                  answer=capital)


def filler_turn(rng):
    """A short single-turn exchange (thinking off) for the middle of a conversation."""
    r = rng.random()
    if r < 0.35:
        return RECALL_TURNS[1], "Paris."
    if r < 0.55:
        country, capital = rng.choice(CAPITALS)
        return capital_qa(rng, country, capital)
    if r < 0.8:
        op = rng.choice("*+-")
        a, b = two_digit_operand(rng), two_digit_operand(rng)
        if op == "*" and is_held_out(a, b):
            op = "+"
        return arithmetic_prompt(rng, op, a, b, False), arithmetic_answer(op, a, b, False)[0]
    if r < 0.9:
        w = rng.choice(ECHO_WORDS)
        return rng.choice(ECHO_TEMPLATES).format(w=w), w
    return rng.choice(CHITCHAT)


REMEMBER = ["Remember this code word: {w}. Reply with just 'Noted.'",
            "Remember this code word: {w}. Reply with just 'Noted.'",
            "Please remember the code word {w}. Reply with just 'Noted.'",
            "My secret word is {w}. Remember it and reply with 'Noted.'",
            "Remember the password {w}. Just say 'Noted.'",
            "Here is a code word to remember: {w}. Reply with just 'Noted.'"]
ASK = ["What was the code word I asked you to remember? Reply with the code word only."] * 3 + [
    "What was the code word?", "What is the code word?", "Which code word did I give you?",
    "Tell me the code word I asked you to remember.", "What was my secret word?", "What was the password?",
    "Repeat the code word from earlier."]


def gen_recall(rng, thinking):
    """Multi-turn: a code word, 0-2 filler turns, then the question; or a shorter prefix of it."""
    w = rng.choice(CODE_WORDS)
    if rng.random() < 0.3:  # a made-up word, so copying generalises beyond the list
        w = "".join(rng.choice("ABCDEFGHIJKLMNOPRSTUVWZ") for _ in range(rng.randint(4, 9)))
    messages = [user(rng.choice(REMEMBER).format(w=w))]
    stop = rng.random()
    if stop < 0.15:  # train the acknowledgement itself
        return Sample("recall_ack", (think("I will remember the code word.") if thinking else "") + "Noted.",
                      messages, thinking=thinking, answer="Noted")
    messages.append(assistant("Noted."))
    for _ in range(rng.choice([0, 1, 1, 1, 2])):
        q, a = filler_turn(rng)
        messages += [user(q), assistant(a)]
    if stop < 0.3:  # the filler's answer, with the history in front
        q, a = filler_turn(rng)
        if thinking:
            a = think("The user asks a new question.") + a
        messages.append(user(q))
        return Sample("recall_filler", a, messages, thinking=thinking)
    messages.append(user(rng.choice(ASK)))
    completion = (think(f"The code word was {w}.") if thinking else "") + w
    return Sample("recall", completion, maybe_system(rng, messages), thinking=thinking, answer=w)


WEATHER_ASK = ["What is the weather like in {c} right now? Use the get_weather tool."] * 4 + [
    "What's the weather in {c}?", "How is the weather in {c} today?", "Check the weather in {c} for me.",
    "Is it warm in {c} right now?", "What is the temperature in {c}?", "Tell me the current weather in {c}.",
    "Use the get_weather tool to find the weather in {c}.", "What's it like outside in {c}?"]
WEATHER_UNIT = [" Use fahrenheit.", " In fahrenheit, please.", " Give it in celsius.", " In celsius, please."]
WEATHER_ANSWERS = ["It is {cond} in {c} right now, with a temperature of {t} degrees {unit}.",
                   "The weather in {c} is {cond} and {t} degrees {unit}.",
                   "Right now it is {t} degrees {unit} and {cond} in {c}.",
                   "In {c} it is currently {t} °{u} and {cond}."]
TIME_ASK = ["What time is it in {c}? Use the get_time tool.", "What is the local time in {c}?",
            "Tell me the time in {c}."]


def tool_call_text(name, args):
    if STYLE == "qwen3_5":   # qwen3_coder, as Qwen3.5's template renders a call in the history
        params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args.items())
        return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


def parse_tool_call(body):
    """The text between <tool_call> and </tool_call> -> (name, args dict), or None."""
    body = body.strip()
    if body.startswith("<function="):
        head, _, rest = body[len("<function="):].partition(">")
        args = {}
        for part in rest.split("<parameter=")[1:]:
            key, _, val = part.partition(">")
            args[key] = val.split("</parameter>")[0].strip("\n")
        return head, args
    try:
        call = json.loads(body)
    except ValueError:
        return None
    return (call.get("name"), call.get("arguments")) if isinstance(call, dict) else None


def gen_tool(rng, thinking):
    """get_weather (sometimes get_time) calling: either the call itself, or the final answer
    after the tool result (the second request of checks_tools.cc)."""
    tools = [WEATHER_TOOL] if rng.random() < 0.75 else rng.sample([WEATHER_TOOL, TIME_TOOL], 2)
    c = "Paris" if rng.random() < 0.25 else rng.choice(CITIES)
    use_time = TIME_TOOL in tools and rng.random() < 0.4
    if use_time:
        q = rng.choice(TIME_ASK).format(c=c)
        name, args = "get_time", {"location": c}
        hh, mm = rng.randint(0, 23), rng.randint(0, 59)
        result = json.dumps({"location": c, "time": f"{hh:02d}:{mm:02d}"})
        final = f"The local time in {c} is {hh:02d}:{mm:02d}."
        answer = f"{hh:02d}:{mm:02d}"
    else:
        q = rng.choice(WEATHER_ASK).format(c=c)
        args = {"location": c}
        unit = "celsius"
        if rng.random() < 0.25:
            suffix = rng.choice(WEATHER_UNIT)
            q += suffix
            unit = "fahrenheit" if "fahrenheit" in suffix else "celsius"
            args["unit"] = unit
        name = "get_weather"
        t = rng.randint(-15, 40) if unit == "celsius" else rng.randint(5, 105)
        cond = rng.choice(CONDITIONS)
        if q.startswith("What is the weather like in Paris") and rng.random() < 0.3:
            t, cond, unit = 18, "sunny", "celsius"
        result = json.dumps({"location": c, "temperature": t, "unit": unit, "condition": cond})
        final = rng.choice(WEATHER_ANSWERS).format(c=c, t=t, cond=cond, unit=unit, u=unit[0].upper())
        answer = str(t)
    messages = maybe_system(rng, [user(q)], p=0.05)
    call = tool_call_text(name, args)
    if rng.random() < 0.45:
        pre = think(f"The user wants information about {c}, so I will call {name}.") if thinking else ""
        return Sample("tool_call", pre + call, messages, tools=tools, thinking=thinking, answer=name)
    messages = messages + [
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": f"call_{rng.randint(0, 10**8)}", "type": "function",
                         "function": {"name": name, "arguments": args}}]},
        {"role": "tool", "tool_call_id": "call", "content": result}]
    pre = think("The tool returned the result, so I can answer.") if thinking else ""
    return Sample("tool_answer", pre + final, messages, tools=tools, thinking=thinking, answer=answer)


def gen_tool_direct(rng, thinking):
    """Tools offered, but the question needs none: answer directly."""
    q, a = filler_turn(rng)
    if thinking:
        a = think("This question does not need a tool.") + a
    return Sample("tool_direct", a, [user(q)], tools=[WEATHER_TOOL], thinking=thinking)


def gen_generic(rng, thinking):
    r = rng.random()
    if r < 0.4:
        topic = "the sea" if rng.random() < 0.15 else "the ocean" if rng.random() < 0.15 else rng.choice(list(TOPICS))
        n = rng.choice([1, 1, 2, 3])
        words = {1: "one sentence", 2: "two sentences", 3: "three sentences"}[n]
        q = rng.choice(["Write {n} about {t}.", "Write {n} about {t}.", "Tell me {n} about {t}."]).format(n=words, t=topic)
        a = " ".join(TOPICS[topic][:n]) if rng.random() < 0.5 else " ".join(rng.sample(TOPICS[topic], n))
        why = f"The user wants {words} about {topic}."
    elif r < 0.6:
        q, a = rng.choice(LISTS)
        why = "The user wants a short list."
    elif r < 0.8:
        n = 20 if rng.random() < 0.4 else rng.randint(3, 20)
        q = rng.choice(["Count from one to {n} in words, separated by spaces.", "Count from one to {n} in words.",
                        "Count to {n} in words."]).format(n=NUMBER_WORDS[n])
        a = " ".join(NUMBER_WORDS[1:n + 1])
        why = f"I count from one to {NUMBER_WORDS[n]}."
    else:
        q, a = rng.choice(CHITCHAT)
        why = "The user is chatting."
    return Sample("generic", (think(why) if thinking else "") + a, maybe_system(rng, [user(q)]),
                  thinking=thinking)


def filler_sentence(rng):
    a = rng.choice(ADJ)
    return (f"The {a[0].upper() + a[1:]} {rng.choice(NOUNS)} {rng.choice(VERBS)} the {rng.choice(ADJ)} "
            f"{rng.choice(NOUNS)} near {rng.choice(PLACES)}. ")


def gen_retrieval(rng, thinking):
    """Short-context version of the long-context check: a code buried in filler sentences."""
    color = "blue" if rng.random() < 0.5 else rng.choice(VAULT_COLORS)
    code = str(rng.randint(10000, 99999))
    n = rng.randint(2, 10)
    at = rng.randint(0, n)
    filler = "".join((f"The access code for the {color} vault is {code}. " if i == at else "") + filler_sentence(rng)
                     for i in range(n + 1))
    q = ("Read the following notes carefully.\n\n" + filler +
         f"\n\nWhat is the access code for the {color} vault? Reply with the number only.")
    completion = (think(f"The notes say the code is {code}.") if thinking else "") + code
    return Sample("retrieval", completion, [user(q)], thinking=thinking, answer=code)


# (kind, probability, generator(rng, thinking, holdout)); thinking is on with p_think.
MIX = [
    ("mul_off", 0.42, lambda rng, h: gen_mul(rng, False, h)),
    ("mul_on", 0.16, lambda rng, h: gen_mul(rng, True, h)),
    ("addsub", 0.07, lambda rng, h: gen_addsub(rng, rng.random() < 0.4)),
    ("echo", 0.05, lambda rng, h: gen_echo(rng, rng.random() < 0.3)),
    ("capital", 0.035, lambda rng, h: gen_capital(rng, rng.random() < 0.3)),
    ("capital_raw", 0.01, lambda rng, h: gen_capital_raw(rng)),
    ("recall", 0.08, lambda rng, h: gen_recall(rng, rng.random() < 0.2)),
    ("tool", 0.065, lambda rng, h: gen_tool(rng, rng.random() < 0.2)),
    ("tool_direct", 0.01, lambda rng, h: gen_tool_direct(rng, rng.random() < 0.2)),
    ("generic", 0.05, lambda rng, h: gen_generic(rng, rng.random() < 0.3)),
    ("retrieval", 0.025, lambda rng, h: gen_retrieval(rng, rng.random() < 0.2)),
]


def make_sample(seed, index, holdout=True):
    """The index-th training sample of the stream with this seed (deterministic)."""
    rng = random.Random(seed * 1_000_000_007 + index)
    r = rng.random() * sum(p for _, p, _ in MIX)
    for _, p, gen in MIX:
        r -= p
        if r < 0:
            return gen(rng, holdout)
    return MIX[-1][2](rng, holdout)


# ---------------------------------------------------------------------------------------------
# Evaluation cases (deterministic; the judge is judge() below)


def battery_samples():
    """The battery's exact requests (thinking as the battery sends it), as Samples whose
    completion is what we want the model to produce."""
    out = []
    s = Sample("echo", "OK", [user(OK_PROMPT)], thinking=False, answer="OK")
    out.append(s)
    out.append(Sample("mul_off", "323", [user(ARITH_PROMPT)], thinking=False, answer=323))
    out.append(Sample("mul_on", arithmetic_answer("*", 17, 19, True)[0], [user(ARITH_THINK_PROMPT)],
                      thinking=True, answer=323))
    w = "MARIGOLD"
    msgs = [user(RECALL_TURNS[0].format(w=w)), assistant("Noted."), user(RECALL_TURNS[1]), assistant("Paris."),
            user(RECALL_TURNS[2])]
    out.append(Sample("recall", w, msgs, thinking=False, answer=w))
    out.append(Sample("tool_call", tool_call_text("get_weather", {"location": "Paris"}), [user(WEATHER_PROMPT)],
                      tools=[WEATHER_TOOL], thinking=False, answer="get_weather"))
    msgs = [user(WEATHER_PROMPT),
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_0", "type": "function",
                 "function": {"name": "get_weather", "arguments": {"location": "Paris"}}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": BATTERY_TOOL_RESULT}]
    out.append(Sample("tool_answer", "", msgs, tools=[WEATHER_TOOL], thinking=False, answer="18"))
    out.append(Sample("capital", "Paris.", [user("The capital city of France is")], thinking=False, answer="Paris"))
    out.append(Sample("capital_raw", " Paris.", None, raw_prompt="The capital city of France is", answer="Paris"))
    for p in (SENTENCE_PROMPT, COLORS_PROMPT, OCEAN_PROMPT, COUNT_PROMPT):
        out.append(Sample("generic", "", [user(p)], thinking=False))
    return out


def mul_eval_samples(pairs, thinking):
    """Battery-style multiplication requests for (a, b) pairs."""
    tail = "Think it through, then give the final answer." if thinking else "Reply with the number only."
    return [Sample("mul_" + ("on" if thinking else "off"), "", [user(f"What is {a} × {b}? {tail}")],
                   thinking=thinking, answer=a * b) for a, b in pairs]


def all_pairs():
    return [(a, b) for a in range(10, 100) for b in range(10, 100)]


def eval_pairs(kind, count, seed=99):
    """'held_out': pairs from HELD_OUT (both orders); 'seen': random two-digit pairs not held out."""
    rng = random.Random(seed)
    if kind == "held_out":
        pool = sorted([(a, b) for a, b in HELD_OUT] + [(b, a) for a, b in HELD_OUT if a != b])
    else:
        pool = [p for p in all_pairs() if not is_held_out(*p)]
    return rng.sample(pool, min(count, len(pool)))


def split_reply(text):
    """Generated text (after the generation prompt, specials kept) -> (reasoning or None, content).
    With thinking on the reply starts with '<think>\\n'; with thinking off the prompt already
    closed the block."""
    text = text.split("<|im_end|>")[0].split("<|endoftext|>")[0]
    if "</think>" in text:
        r, c = text.split("</think>", 1)
        return r.replace("<think>", "").strip("\n"), c.lstrip("\n")
    if text.startswith("<think>"):
        return text[len("<think>"):].strip("\n"), ""
    return None, text


def numbers_in(text):
    """Numbers in text as judge.cc NumbersIn reads them (thousands separators, decimals, a leading
    minus sign not preceded by a letter or digit)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if not text[i].isdigit() or not text[i].isascii():
            i += 1
            continue
        start, digits = i, ""
        while i < n:
            if text[i].isascii() and text[i].isdigit():
                digits += text[i]
                i += 1
            elif (text[i] == "," and i + 3 < n and text[i + 1:i + 4].isdigit() and text[i + 1:i + 4].isascii()
                  and (i + 4 >= n or not text[i + 4].isdigit())):
                i += 1
            else:
                break
        if i + 1 < n and text[i] == "." and text[i + 1].isdigit():
            digits += "."
            i += 1
            while i < n and text[i].isdigit():
                digits += text[i]
                i += 1
        v = float(digits)
        neg = start > 0 and text[start - 1] == "-" and (start < 2 or not text[start - 2].isalnum())
        out.append(-v if neg else v)
    return out


def judge(sample, text):
    """Pass/fail of a generated reply `text` (the tokens after the generation prompt, decoded with
    special tokens kept) for an eval sample; see judge_parts."""
    reasoning, content = split_reply(text)
    return judge_parts(sample, reasoning, content)


def judge_parts(sample, reasoning, content, tool_calls=None):
    """Pass/fail by the battery's rules (src/check/judge.cc) given the reply's reasoning (None if
    none), content and, from a server with a tool-call parser, its tool_calls [(name, args dict)]:
    arithmetic with thinking off: the content holds the answer and no other number and there is no
    reasoning; with thinking on: there is reasoning, and the content holds the answer. Tool calls:
    get_weather / get_time with a location (and at most a unit). Others: the content holds the
    expected answer (case-insensitive)."""
    content = content or ""
    if sample.kind.startswith(("mul", "addsub")):
        if "<think>" in content or "</think>" in content:
            return False
        nums = numbers_in(content)
        if float(sample.answer) not in nums:
            return False
        if sample.thinking:
            return bool(reasoning and reasoning.strip())
        return all(v == float(sample.answer) for v in nums) and not (reasoning and reasoning.strip())
    if sample.kind == "echo":
        return "".join(ch for ch in content.lower() if ch.isalnum()) == str(sample.answer).lower()
    if sample.kind == "tool_call":
        if tool_calls is None:
            body = content.split("<tool_call>")[-1].split("</tool_call>")[0] if "<tool_call>" in content else ""
            call = parse_tool_call(body)
            if call is None:
                return False
            tool_calls = [call]
        if not tool_calls:
            return False
        name, args = tool_calls[0]
        return (name == sample.answer and isinstance(args, dict) and isinstance(args.get("location"), str)
                and set(args) <= {"location", "unit"})
    if sample.answer is None:
        return bool(content.strip())
    return str(sample.answer).lower() in content.lower()


if __name__ == "__main__":
    import sys
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    for i in range(n):
        s = make_sample(1, i)
        print(f"==== {i} {s.kind} thinking={s.thinking}")
        print(s.prompt_text() + "\x1b[32m" + s.completion_text() + "\x1b[0m")
