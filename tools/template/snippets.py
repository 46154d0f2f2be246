"""Small templates that exercise the Jinja language as chat templates use it.

(name, template source, context). gen_goldens.py renders each with Jinja2;
tern must produce the same output, or fail where Jinja2 fails.
"""

D = {"a": 1, "b": [1, 2, 3], "s": "Hello World", "u": "héllo wörld 你好", "n": None, "t": True, "f": 1.5,
     "d": {"z": 1, "a": 2, "m": {"k": "v"}}, "msgs": [{"role": "user", "content": "hi"},
                                                       {"role": "assistant", "content": "yo", "x": 0}]}

S = []


def snip(name, src, ctx=None):
    S.append((name, src, D if ctx is None else ctx))


# --- whitespace control, trim_blocks, lstrip_blocks, comments, raw
snip("ws_trim_blocks", "{% if t %}\nyes\n{% endif %}\nend")
snip("ws_lstrip_blocks", "a\n    {% if t %}\n    x\n    {% endif %}\nb")
snip("ws_minus", "a  \n  {%- if t -%}  \n  x  \n  {%- endif -%}  \n  b")
snip("ws_var_minus", "a \n {{- s -}} \n b")
snip("ws_plus", "a\n    {%+ if t %}x{% endif +%}\nb")
snip("ws_comment", "a\n  {# comment #}\nb {#- c -#} c\n{# x\ny #}\nd")
snip("ws_raw", "{% raw %}{{ not evaluated }}{% endraw %}|{%- raw -%}  {% x %}  {%- endraw %}|")
snip("ws_trailing_newline", "line\n")
snip("ws_crlf", "a\r\nb\r{% if t %}\r\nc{% endif %}\r\n")
snip("ws_var_no_trim", "{{ a }}\nx")
snip("ws_lstrip_var_not", "  {{ a }}\n  {% if t %}y{% endif %}")
snip("ws_nested", "{% for i in b %}\n  {% if i > 1 %}\n    {{ i }}\n  {% endif %}\n{% endfor %}\n")
snip("ws_tabs", "\t{% if t %}\n\tx\n\t{% endif %}")
snip("ws_minus_newlines", "a\n\n\n{{- 'b' -}}\n\n\nc")

# --- literals and printing
snip("lit_numbers", "{{ 1 }} {{ -3 }} {{ 1.0 }} {{ 2.50 }} {{ 1e3 }} {{ 1_000 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ .5 if false else 3.25 }}")
snip("lit_floats", "{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 1.5e-5 }} {{ 0.0001 }} {{ 100.0 }} {{ 1/3 }} {{ 2**0.5 }} {{ -0.0 }}")
snip("lit_strings", "{{ 'a\\'b' }} {{ \"c\\\"d\" }} {{ 'tab\\there' }} {{ 'nl\\nx' }} {{ '\\u00e9\\x41' }} {{ 'back\\\\slash' }} {{ 'unk\\d' }} {{ 'a' 'b' }}")
snip("lit_containers", "{{ [1, 'a', none, true, 1.5] }} {{ (1,) }} {{ (1, 2) }} {{ () }} {{ {'k': 'v', 'n': [1]} }} {{ [] }} {{ {} }}")
snip("lit_repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n', 'é'] }}")
snip("lit_bools", "{{ true }} {{ True }} {{ false }} {{ none }} {{ None }} {{ n }} {{ t }}")
snip("print_dict_nested", "{{ d }} {{ msgs }}")
snip("print_undefined", "[{{ missing }}][{{ d.missing }}][{{ msgs[5] }}]")
snip("print_tuple_expr", "{{ 1, 2 }}")

# --- arithmetic
snip("arith_int", "{{ 7 + 3 }} {{ 7 - 10 }} {{ 7 * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}")
snip("arith_float", "{{ 7.0 // 2 }} {{ -7.5 % 2 }} {{ 1.5 * 2 }} {{ 3 - 1.5 }} {{ 10 / 4 }} {{ 4 / 2 }}")
snip("arith_precedence", "{{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }} {{ 1 + 2 ~ 3 }} {{ 'a' ~ 1 + 2 }}")
snip("arith_bool", "{{ true + 1 }} {{ true * 3 }} {{ false - 1 }}")
snip("arith_strings", "{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ [1] + [2, 3] }} {{ [0] * 3 }} {{ 'x' * 0 }} {{ 'x' * -1 }}")
snip("arith_concat_tilde", "{{ 1 ~ 2 }} {{ 'a' ~ none ~ true ~ 1.0 }} {{ missing ~ 'x' }} {{ [1] ~ {'a': 1} }}")
snip("err_div_zero", "{{ 1 / 0 }}")
snip("err_floordiv_zero", "{{ 1 // 0 }}")
snip("err_str_plus_int", "{{ 'a' + 1 }}")
snip("err_int_plus_str", "{{ 1 + 'a' }}")
snip("err_undefined_plus", "{{ missing + 1 }}")
snip("err_none_plus", "{{ n + 1 }}")
snip("err_neg_str", "{{ -s }}")

# --- comparisons and logic
snip("cmp_basic", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 1 == 1.0 }} {{ 1 != '1' }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}")
snip("cmp_eq_containers", "{{ [1, 2] == [1, 2] }} {{ (1, 2) == [1, 2] }} {{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }} {{ none == none }} {{ missing == none }} {{ true == 1 }}")
snip("cmp_in", "{{ 'ell' in s }} {{ 'x' not in s }} {{ 2 in b }} {{ 'z' in d }} {{ 'k' in d.m }} {{ 1 in [1.0] }} {{ 'a' in missing }}")
snip("err_in_int", "{{ 1 in 'abc' }}")
snip("err_cmp_types", "{{ 1 < 'a' }}")
snip("err_cmp_undefined", "{{ missing < 1 }}")
snip("logic", "{{ true and 'x' }} {{ 0 and 'x' }} {{ '' or 'dflt' }} {{ 'v' or 'dflt' }} {{ not 0 }} {{ not not 'a' }} {{ none or [] }} {{ missing or 'm' }}")
snip("logic_precedence", "{{ not true or true }} {{ not (true or true) }} {{ true or false and false }} {{ 1 if 0 or 2 else 3 }}")
snip("cond_expr", "{{ 'y' if t else 'n' }} {{ 'y' if n else 'n' }} [{{ 'y' if n }}] {{ 1 if false else 2 if false else 3 }}")
snip("truthiness", "{% for v in [0, 1, 0.0, '', 'a', [], [0], {}, {'a': 1}, none] %}{{ 'T' if v else 'F' }}{% endfor %}")

# --- indexing, slicing, attributes
snip("index", "{{ b[0] }} {{ b[-1] }} {{ s[0] }} {{ s[-1] }} {{ u[1] }} {{ u[-1] }} {{ d['z'] }} {{ d.m.k }} {{ d['m']['k'] }} {{ msgs[1].role }} {{ b.0 }}")
snip("slice", "{{ b[1:] }} {{ b[:-1] }} {{ b[::-1] }} {{ b[::2] }} {{ s[2:5] }} {{ s[::-1] }} {{ u[1:4] }} {{ u[::-1] }} {{ s[-3:] }} {{ s[:100] }} {{ b[5:] }} {{ s[3:1] }} {{ s[::-2] }} {{ b[-100:2] }}")
snip("slice_none", "{{ b[none:2] }} {{ s[1:none] }}")
snip("err_slice_int", "{{ a[1:] }}")
snip("err_slice_none", "{{ n[1:] }}")
snip("err_slice_dict", "{{ d[1:] }}")
snip("err_slice_undefined", "{{ missing[1:] }}")
snip("falsy_select_map", "{{ false|select|list }} {{ 0|map('string')|list }} {{ none|selectattr('x')|list }} {{ ''|reject|list }}")
snip("attr_vs_item", "{{ msgs[1]['x'] }} {{ msgs[1].x }} [{{ msgs[0].x }}] {{ d.items()|list }} {{ d.keys()|list }} {{ d.values()|list }}")
snip("err_attr_of_undefined", "{{ missing.x }}")
snip("err_item_of_undefined", "{{ d.missing['x'] }}")
snip("none_attr", "[{{ n.x }}][{{ n['x'] }}][{{ a.x }}]")
snip("err_call_undefined", "{{ missing() }}")
snip("err_call_string", "{{ s() }}")
snip("dict_get", "{{ d.get('z') }} {{ d.get('q') }} {{ d.get('q', 'dflt') }} {{ msgs[0].get('content') }}")

# --- tests
snip("tests_types", "{% for v in [1, 1.5, 'a', none, true, [1], {'a': 1}, (1,)] %}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is string }}{{ v is none }}{{ v is boolean }}{{ v is mapping }}{{ v is iterable }}{{ v is sequence }}|{% endfor %}")
snip("tests_defined", "{{ a is defined }} {{ missing is defined }} {{ missing is undefined }} {{ d.z is defined }} {{ d.q is defined }} {{ n is defined }} {{ n is none }} {{ missing is none }}")
snip("tests_undefined_iter", "{{ missing is iterable }} {{ missing is sequence }} {{ missing is mapping }} {{ missing is string }}")
snip("tests_bool", "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }} {{ t is boolean }}")
snip("tests_num", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }} {{ 2 is eq 2 }} {{ 2 is equalto 3 }} {{ 'a' is in 'abc' }} {{ 2 is in b }} {{ 3 is gt 2 }} {{ 3 is lessthan 2 }} {{ 3 is ge 3 }} {{ 3 is ne 3 }}")
snip("tests_case", "{{ 'abc' is lower }} {{ 'aBc' is lower }} {{ 'ABC' is upper }} {{ '12' is upper }} {{ 'É' is upper }}")
snip("tests_not", "{{ a is not defined }} {{ n is not none }} {{ not a is defined }} {{ s is not string }}")
snip("tests_callable", "{{ range is callable }} {{ s is callable }} {{ s.upper is callable }} {{ d.get is callable }}")
snip("tests_sameas", "{{ none is sameas none }} {{ true is sameas true }} {{ 1 is sameas 1 }}")

# --- filters: strings
snip("f_case", "{{ s|upper }} {{ s|lower }} {{ 'hello wORLD'|title }} {{ 'hello wORLD'|capitalize }} {{ u|upper }} {{ 'ß'|upper }} {{ \"they're bill's-friends (x[y]z)\"|title }} {{ none|upper }} [{{ missing|upper }}]")
snip("f_trim", "[{{ '  x y  '|trim }}] [{{ 'xxhixx'|trim('x') }}] [{{ '\\n\\t a \\u00a0'|trim }}] [{{ none|trim }}]")
snip("f_replace", "{{ s|replace('o', '0') }} {{ s|replace('o', '0', 1) }} {{ 'aaa'|replace('a', 'bb') }} {{ 'abc'|replace('', '-') }}")
snip("f_length", "{{ s|length }} {{ u|length }} {{ b|length }} {{ d|length }} {{ missing|length }} {{ ''|length }} {{ s|count }}")
snip("err_length_none", "{{ n|length }}")
snip("err_length_int", "{{ 5|length }}")
snip("f_string", "{{ 1|string }} {{ 1.0|string }} {{ none|string }} {{ [1, 'a']|string }} {{ d|string }} [{{ missing|string }}] {{ true|string }}")
snip("f_int_float", "{{ '42'|int }} {{ ' -7 '|int }} {{ '3.9'|int }} {{ 'abc'|int }} {{ 'abc'|int(5) }} {{ 3.99|int }} {{ -3.99|int }} {{ '0x1A'|int(0, 16) }} {{ '1_000'|int }} {{ none|int }} {{ true|int }} {{ '3.5'|float }} {{ 'x'|float }} {{ 2|float }} {{ '1e3'|float }} {{ ' inf '|float }} {{ none|float(-1) }}")
snip("err_int_undefined", "{{ missing|int }}")
snip("f_abs_round", "{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 3|round }} {{ 1.2345|round(2) }} {{ 1.5|round(0, 'floor') }} {{ 1.2|round(0, 'ceil') }} {{ 1234.5|round(-2) }} {{ 0.125|round(2) }} {{ -0.5|round }}")
snip("f_default", "{{ missing|default('d') }} {{ missing|d('d2') }} {{ n|default('x') }} {{ ''|default('x') }} {{ ''|default('x', true) }} {{ 0|default('x', boolean=true) }} [{{ missing|default }}] {{ a|default(5) }}")
snip("f_first_last", "{{ b|first }} {{ b|last }} {{ s|first }} {{ s|last }} {{ d|first }} {{ d|last }} [{{ []|first }}] [{{ missing|first }}]")
snip("f_join", "{{ b|join }} {{ b|join(', ') }} {{ msgs|join('|', attribute='role') }} {{ s|join('.') }} {{ [1, none, 'x', 2.0]|join('-') }} [{{ missing|join(',') }}]")
snip("f_list", "{{ s|list }} {{ d|list }} {{ b|list }} {{ (1, 2)|list }} {{ missing|list }}")
snip("err_list_none", "{{ n|list }}")
snip("f_indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'x\\ny'|indent('--') }}|{{ ''|indent }}|{{ 'a\\n'|indent(first=true) }}")
snip("f_center_truncate_wordcount", "[{{ 'ab'|center(7) }}] {{ 'the quick brown fox jumps over the lazy dog'|truncate(20) }} {{ 'the quick brown fox jumps'|truncate(10, true) }} {{ 'short'|truncate(10) }} {{ 'one two, three'|wordcount }}")
snip("f_escape_safe", "{{ '<a href=\"x\">&\\'</a>'|escape }} {{ '<b>'|e }} {{ '<b>'|safe }} {{ 5|safe }}")
snip("f_format", "{{ '%s is %d years (%.2f) %5s|%-5s|%05d %x %o %e %g %%'|format('Bob', 42, 3.14159, 'r', 'l', 42, 255, 8, 12345.678, 0.0001) }} {{ '%(a)s-%(b)s'|format(a=1, b=2) }}")
snip("percent_op", "{{ '%s-%s' % ('a', 'b') }} {{ '%d%%' % 50 }} {{ '%r' % 'x' }} {{ '%s' % [1, 2] }} {{ '%c' % 65 }} {{ '%+d % d' % (5, 5) }} {{ '%.1s' % 'abc' }}")
snip("err_percent_args", "{{ '%s %s' % ('a',) }}")
snip("str_format_method", "{{ '{} and {}'.format('a', 'b') }} {{ '{1}{0}'.format('a', 'b') }} {{ '{name}!'.format(name='x') }} {{ '{:>6}|{:<4}|{:^5}|{:*^7}'.format('r', 'l', 'c', 'm') }} {{ '{:.2f} {:5d} {:05d} {:,} {:x} {:+d} {:.1%}'.format(3.14159, 42, 7, 1234567, 255, 3, 0.256) }} {{ '{!r} {{}}'.format('q') }} {{ '{0[k]} {0[1]}'.format({'k': 'v', '1': 'one'}) }} {{ '{:} {}'.format(1.0, none) }}")

# --- filters: sequences and mappings
snip("f_map", "{{ msgs|map(attribute='role')|list }} {{ ['a', 'b']|map('upper')|list }} {{ msgs|map(attribute='x', default='dx')|list }} {{ [1.6, 2.4]|map('round')|list }} {{ ['a', 'b']|map('replace', 'a', 'z')|join }} {{ msgs|map(attribute='missing')|list }}")
snip("f_select", "{{ [0, 1, 2, 3, none, '']|select|list }} {{ b|select('odd')|list }} {{ b|reject('odd')|list }} {{ b|select('gt', 1)|list }} {{ ['a', 1, 'b']|select('string')|list }} {{ b|select('in', [1, 3])|list }} {{ b|select('equalto', 2)|list }}")
snip("f_selectattr", "{{ msgs|selectattr('role', 'equalto', 'user')|list }} {{ msgs|rejectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ msgs|selectattr('x', 'defined')|list|length }} {{ msgs|selectattr('x', 'undefined')|list|length }} {{ msgs|selectattr('content')|list|length }} {{ [{'a': {'b': 1}}, {'a': {'b': 0}}]|selectattr('a.b')|list }}")
snip("f_items_dictsort", "{{ d|items|list }} {{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ {'b': 2, 'A': 3, 'a': 1}|dictsort }} {{ {'b': 2, 'A': 3, 'a': 1}|dictsort(true) }} {{ {'x': 3, 'y': 1}|dictsort(by='value') }} {{ missing|items|list }}")
snip("err_items_list", "{{ b|items|list }}")
snip("f_sort", "{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'a', 'C']|sort }} {{ ['b', 'A', 'a', 'C']|sort(case_sensitive=true) }} {{ msgs|sort(attribute='role')|map(attribute='role')|list }} {{ [[2, 'b'], [1, 'z'], [2, 'a']]|sort }} {{ [1.5, 1, true, 0]|sort }}")
snip("f_sort_stable_reverse", "{{ [{'k': 1, 'v': 'a'}, {'k': 0, 'v': 'b'}, {'k': 1, 'v': 'c'}]|sort(attribute='k', reverse=true)|map(attribute='v')|join }}")
snip("err_sort_mixed", "{{ [1, 'a']|sort }}")
snip("f_unique_reverse", "{{ [1, 2, 1, 3, 2]|unique|list }} {{ ['a', 'A', 'b']|unique|list }} {{ ['a', 'A', 'b']|unique(true)|list }} {{ b|reverse|list }} {{ s|reverse }} {{ u|reverse }} {{ d|reverse|list }}")
snip("f_sum_min_max", "{{ b|sum }} {{ [1.5, 2]|sum }} {{ msgs|sum(attribute='x', start=10) if false else 0 }} {{ [{'v': 1}, {'v': 2}]|sum(attribute='v') }} {{ b|sum(start=10) }} {{ b|min }} {{ b|max }} {{ ['b', 'A', 'c']|min }} {{ ['b', 'A', 'c']|max }} {{ ['b', 'A', 'c']|max(case_sensitive=true) }} [{{ []|max }}] {{ [{'v': 3}, {'v': 7}]|max(attribute='v') }}")
snip("f_batch_slice", "{{ b|batch(2)|list }} {{ b|batch(2, 'x')|list }} {{ [1, 2, 3, 4, 5]|slice(2)|list }} {{ [1, 2, 3, 4, 5]|slice(3, 0)|list }}")
snip("f_tojson", "{{ d|tojson }} {{ msgs|tojson }} {{ u|tojson }} {{ 'q\"\\\\\\n\\t\\u0001\\u007f'|tojson }} {{ [1.0, 2.5, 1e20, none, true]|tojson }} {{ (1, 2)|tojson }} {{ {}|tojson }} {{ []|tojson }}")
snip("f_tojson_indent", "{{ d|tojson(indent=2) }}\n{{ msgs|tojson(indent=4) }}\n{{ {'e': [], 'f': {}}|tojson(indent=2) }}\n{{ [1]|tojson(indent=0) }}\n{{ d|tojson(indent='\\t') }}")
snip("f_tojson_options", "{{ d|tojson(sort_keys=true) }} {{ u|tojson(ensure_ascii=true) }} {{ '😀'|tojson(true) }} {{ d|tojson(separators=(',', ':')) }}")
snip("err_tojson_undefined", "{{ missing|tojson }}")
snip("f_attr", "[{{ msgs[0]|attr('role') }}] [{{ d|attr('z') }}]")
snip("f_filter_chain", "{{ ' A,b , c '|trim|lower|replace(' ', '')|list|join('+') }} {{ s|length - 1 }} {{ -3|abs }} {{ b|length * 2 }}")
snip("err_unknown_filter", "{{ s|nosuchfilter }}")
snip("err_unknown_test", "{{ s is nosuchtest }}")

# --- string methods
snip("m_case", "{{ s.upper() }} {{ s.lower() }} {{ 'hello wORLD'.title() }} {{ 'hELLO'.capitalize() }} {{ \"they're\".title() }} {{ u.title() }} {{ 'ab'.swapcase() }}")
snip("m_strip", "[{{ '  x  '.strip() }}] [{{ '  x  '.lstrip() }}] [{{ '  x  '.rstrip() }}] [{{ '\\n\\nx\\n'.strip('\\n') }}] [{{ 'xyhixy'.strip('xy') }}] [{{ 'abc'.lstrip('ba') }}] [{{ 'ééaéé'.strip('é') }}]")
snip("m_startswith", "{{ s.startswith('Hell') }} {{ s.endswith('World') }} {{ s.startswith(('x', 'H')) }} {{ s.startswith('World', 6) }} {{ s.endswith('Hello', 0, 5) }} {{ ''.startswith('') }}")
snip("m_split", "{{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  a  b  c  '.split(none, 1) }} {{ '  a  b  c  '.rsplit(none, 1) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'x</think>y</think>z'.split('</think>')[-1] }} {{ ''.split(',') }} {{ ''.split() }}")
snip("m_find", "{{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('zz') }} {{ u.find('wö') }} {{ s.count('l') }} {{ s.index('W') }} {{ s.find('o', 5) }} {{ 'aaa'.count('') }}")
snip("m_replace_join", "{{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 2) }} {{ ', '.join(['a', 'b']) }} {{ '-'.join('abc') }} {{ s.removeprefix('Hello ') }} {{ s.removesuffix('World') }}")
snip("m_is", "{{ 'abc'.isalpha() }} {{ '123'.isdigit() }} {{ 'a1'.isalnum() }} {{ '  '.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ ''.isalpha() }}")
snip("m_partition_pad", "{{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'x'.partition('=') }} [{{ 'ab'.ljust(5, '.') }}] [{{ 'ab'.rjust(5) }}] [{{ 'ab'.center(6, '*') }}] {{ '42'.zfill(5) }} {{ '-42'.zfill(5) }}")
snip("err_join_non_str", "{{ ','.join([1, 2]) }}")
snip("m_list_dict", "{{ b.index(2) }} {{ b.count(1) }} {{ d.items()|list|length }} {{ d.copy() }}")
snip("err_list_append", "{% set l = [] %}{{ l.append(1) }}")
snip("err_dict_update", "{% set x = {} %}{{ x.update({'a': 1}) }}")

# --- for loops
snip("for_loop_vars", "{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}[{{ loop.previtem }}|{{ loop.nextitem }}]{{ loop.depth }};{% endfor %}")
snip("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in missing %}x{% else %}undef{% endfor %}|{% for x in [1] %}{{ x }}{% else %}no{% endfor %}")
snip("for_filter", "{% for x in b if x > 1 %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% else %}none{% endfor %}|{% for m in msgs if m.role == 'nobody' %}x{% else %}filtered all{% endfor %}")
snip("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}{% for (a, b) in [[5, 6]] %}{{ a }}{{ b }}{% endfor %}")
snip("err_for_unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}")
snip("for_dict_string", "{% for k in d %}{{ k }}{% endfor %}|{% for c in u %}{{ c }}.{% endfor %}")
snip("for_break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}")
snip("for_nested_loop", "{% for i in [1, 2] %}{% set outer = loop %}{% for j in ['a', 'b'] %}{{ outer.index }}{{ loop.index }}{{ j }} {% endfor %}{% endfor %}")
snip("for_cycle_changed", "{% for i in [1, 1, 2, 3, 3] %}{{ loop.cycle('o', 'e') }}{% if loop.changed(i) %}*{% endif %}{% endfor %}")
snip("for_scope", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}")
snip("for_scope_if", "{% for i in [1, 2, 3] %}{% if loop.first %}{% set a = 'first' %}{% endif %}[{{ a }}]{% endfor %}")
snip("for_recursive", "{% for item in [{'n': 'a', 'c': [{'n': 'b', 'c': []}, {'n': 'c', 'c': [{'n': 'd', 'c': []}]}]}] recursive %}{{ item.n }}{{ loop.depth }}({{ loop(item.c) }}){% endfor %}")
snip("for_none_error", "{% for x in n %}{% endfor %}")
snip("for_reverse_slice", "{% for m in msgs[::-1] %}{{ loop.index0 }}{{ m.role }} {% endfor %}")
snip("range", "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }} {% for i in range(2) %}{{ i }}{% endfor %}")
snip("err_range_big", "{{ range(1000000)|length }}")

# --- set, namespace, with
snip("set_basic", "{% set x = 5 %}{% set y, z = 1, 2 %}{% set s2 = s ~ '!' %}{{ x }}{{ y }}{{ z }}{{ s2 }}")
snip("set_block", "{% set blk %}a{{ a }}b{% endset %}[{{ blk }}]{% set up | upper %}xyz{% endset %}{{ up }}{% set t2 | trim | replace('a', 'A') %}  banana  {% endset %}{{ t2 }}")
snip("namespace", "{% set ns = namespace(count=0, items=[], flag=false) %}{% for i in b %}{% set ns.count = ns.count + i %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.count }} {{ ns.items }} {{ ns.flag }} [{{ ns.missing }}] {{ ns }}")
snip("namespace_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}")
snip("err_set_attr_non_ns", "{% set x = {} %}{% set x.a = 1 %}")
snip("with_block", "{% set v = 1 %}{% with v = 2, w = v %}{{ v }}{{ w }}{% endwith %}{{ v }}")
snip("set_shadow_context", "{% set a = a + 10 %}{{ a }}{% set msgs = msgs[1:] %}{{ msgs|length }}")

# --- macros, call, filter blocks
snip("macro_basic", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(name='C') }} {{ greet(punct='.', name='D') }}")
snip("macro_defaults_ref", "{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, 5) }}")
snip("macro_missing_arg", "{% macro m(a, b) %}[{{ a }}][{{ b }}][{{ b is defined }}]{% endmacro %}{{ m(1) }}")
snip("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}")
snip("err_macro_too_many", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}")
snip("err_macro_bad_kwarg", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}")
snip("macro_scope", "{% set g = 'global' %}{% macro m() %}{{ g }}/{{ i }}{% endmacro %}{% for i in [1] %}{{ m() }}{% endfor %}")
snip("macro_recursive", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(10) }}")
snip("macro_ns_side_effect", "{% set ns = namespace(v=0) %}{% macro bump() %}{% set ns.v = ns.v + 1 %}{% endmacro %}{{ bump() }}{{ bump() }}{{ ns.v }}")
snip("macro_returns_str", "{% macro m() %} x {% endmacro %}[{{ m()|trim }}][{{ m()|length }}][{{ m() is string }}]")
snip("macro_in_loop_closure", "{% for i in [1, 2] %}{% macro show() %}{{ i }}{% endmacro %}{{ show() }}{% endfor %}")
snip("macro_attrs", "{% macro m(a, b) %}{% endmacro %}{{ m.name }} {{ m.arguments }}")
snip("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% set x = 'in' %}{% call wrap('b') %}body {{ x }}{% endcall %}")
snip("call_block_args", "{% macro each(items) %}{% for i in items %}{{ caller(i, loop.index) }}{% endfor %}{% endmacro %}{% call(item, n) each(['a', 'b']) %}[{{ n }}:{{ item }}]{% endcall %}")
snip("filter_block", "{% filter upper %}hello {{ s }}{% endfilter %}|{% filter replace('a', 'o')|trim %}  banana  {% endfilter %}")
snip("macro_with_loop_in_body", "{% macro render(ms) %}{% for m in ms %}{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}{% endmacro %}{{ render(msgs) }}")

# --- globals
snip("raise_exception", "{% if a == 1 %}{{ raise_exception('Bad input: a is ' ~ a) }}{% endif %}")
snip("raise_exception_in_macro", "{% macro check(x) %}{% if x is not string %}{{ raise_exception('Expected string, got ' ~ x) }}{% endif %}{% endmacro %}{{ check('ok') }}{{ check(3) }}")
snip("strftime_now", "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S') }}|{{ strftime_now('%A %B %j') }}|{{ strftime_now('') }}")
snip("dict_global", "{{ dict(a=1, b='x') }} {{ dict([('k', 'v')]) }} {{ dict(d, extra=1)|length }}")
snip("cycler_joiner", "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set j = joiner('; ') %}{% for x in b %}{{ j() }}{{ x }}{% endfor %}")
snip("is_iterable_tools", "{% set tools = [{'a': 1}] %}{{ tools and tools is iterable and tools is not mapping }}")

# --- syntax errors (only "fails" is checked; messages differ)
snip("syntax_unclosed_if", "{% if a %}x")
snip("syntax_bad_expr", "{{ 1 + }}")
snip("syntax_unknown_tag", "{% frobnicate %}")
snip("syntax_unclosed_var", "{{ a ")
snip("syntax_unclosed_string", "{{ 'abc }}")
snip("syntax_endfor_mismatch", "{% for x in b %}{% endif %}")
snip("syntax_break_outside", "{% break %}")
snip("syntax_unbalanced", "{{ (1 + 2 }}")
snip("syntax_extends", "{% extends 'base.html' %}")
snip("syntax_do_not_enabled", "{% do b.append(1) %}")

SNIPPETS = S
