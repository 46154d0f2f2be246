// Data for the synthetic tokenizer (synthetic.cc): a small English text,
// written for tern, from which the synthetic BPE merges are learnt.
#include "tokenize/synthetic_data.h"

namespace tern::tok {

const char* const kSyntheticCorpus = R"CORPUS(The morning was cold and clear when the small boat left the harbour. The fisherman,
an old man with a grey beard, looked at the water and said nothing for a long time.
"We'll find them near the rocks," he said at last. "They're always there when the
tide is low." His daughter nodded. She had heard it many times before, but she didn't
mind hearing it again.

A language model reads text as a sequence of tokens. Each token is a number, and each
number stands for a piece of text: a word, part of a word, a space, or a single byte.
The tokenizer turns the text into numbers before the model sees it, and turns the
numbers back into text after the model has written them. If the tokenizer makes a
mistake, the model sees the wrong numbers, so the tokenizer has to be exact.

In the first year the village had 1,204 people; ten years later it had 2,731. The
school opened in 1998, closed in 2009, and opened again in 2015 with 42 children and
3 teachers. Prices rose by 12.5% in one year, then fell by 3.2% the next.

The user asked: "What is the capital of France?" The assistant answered: "The capital
of France is Paris." Then the user asked another question, and the assistant had to
think before it answered. It wrote its thoughts first, then the answer, and then it
called a tool to check the weather in the city.

Questions and answers, requests and replies: a conversation is a list of messages.
Each message has a role, such as system, user, assistant or tool, and some content.
The system message sets the rules. The user message asks. The assistant message
answers, and it may call a tool with a name and some arguments. The tool message
returns the result, and the assistant reads it and continues.

It was the best of plans, it was the simplest of plans. First, read the file. Second,
check that every field is there and has the right type. Third, build the tables.
Fourth, test them against a reference that was written by someone else. If they
agree on thousands of random inputs, they probably agree on the rest.

She walked along the river, past the mill and the old stone bridge, until she came to
the place where the water was deep and slow. There she sat down under a tree and
opened her book. The wind moved the leaves above her; a bird sang somewhere; and for
an hour she forgot the time, the town, and everything she was supposed to be doing.

Memory is fast, but not as fast as the processor. A good program keeps the data it
needs close together, reads it in order, and does as much work as it can with each
piece before moving on. A bad program jumps around, waits for memory, and wastes most
of its time doing nothing at all. The difference can be ten times or more.

"Don't worry," he told her. "I've done this before, and I'd do it again." She wasn't
so sure. "You said that last time," she replied, "and we're still paying for it." They
both laughed, because it was true, and because there was nothing else to do.

def add(a, b):
    return a + b

for i in range(10):
    print(i, add(i, i * 2))

{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}

The numbers were simple: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 1000, 2024, 3.14159.
The list was short: apples, bread, cheese, dates, eggs, flour, grapes, honey.
The questions were harder: why, how, when, where, who, which, and what if?

Every day the train left the station at seven o'clock and came back at six. People
read newspapers, talked about the weather, looked out of the windows at the fields
and the farms, and thought about the work they had to do. Nobody noticed the small
changes from one day to the next, but after a year everything was different.
)CORPUS";

}  // namespace tern::tok
