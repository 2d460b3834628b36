"""Chat templates from model files render within a budget (model_core.data.template_sandbox): each attack ends
with a sentence after bounded work and memory, and real chat templates render exactly as Jinja's own sandbox
renders them."""
import tracemalloc

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from model_core.data import template_sandbox
from model_core.data.chat import MAX_TEMPLATE_CHARS, ChatTemplateError, chat_end, chat_prompt


def repeated(start: str, step: str, times: int = 40) -> str:
    """A template that sets a namespace value to start, then to step (of ns.v) times over, and prints it."""
    return ("{% set ns = namespace(v=" + start + ") %}{% for i in range(" + str(times) + ") %}{% set ns.v = " + step
            + " %}{% endfor %}{{ ns.v }}")


NESTED = "".join("{% set l" + str(k + 1) + " = [" + ", ".join([f"l{k}"] * 10) + "] %}" for k in range(8))
ATTACKS = {  # name -> (template, what the sentence says)
    "nested loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                     "more than 20,000 steps"),
    "nested loops that filter everything out": (
        "{% for i in range(100000) %}{% for j in range(100000) if false %}{% endfor %}{% endfor %}",
        "more than 20,000 steps"),
    "string multiplication": ("{{ 'x' * 8000000000 }}", "8,000,000,000 characters"),
    "list multiplication": ("{{ [0] * 8000000000 }}", "8,000,000,000 characters"),
    "doubling with +": (repeated("'x'", "ns.v + ns.v"), "131,072 characters"),
    "doubling with ~": (repeated("'x'", "ns.v ~ ns.v"), "131,072 characters"),
    "squaring a number": (repeated("10", "ns.v * ns.v"), "-bit number"),
    "a huge power": ("{{ 7 ** 100000000 }}", "bits"),
    "join with a huge separator": ("{{ range(100)|join('x' * 100000) }}", "characters"),
    "join of a long range": ("{{ range(100000)|join(',') }}", "more than 20,000 steps"),
    "map over a long range": ("{{ range(100000)|map('string')|list|length }}", "more than 20,000 steps"),
    "center": ("{{ 'x'|center(1000000000) }}", "1,000,000,000 characters"),
    "indent": ("{{ ('a\n' * 50000)|indent(100) }}", "characters"),
    "replace": ("{{ ('x' * 100000)|replace('x', 'yy' * 50000) }}", "characters"),
    "str.replace": ("{{ ('x' * 100000).replace('x', 'yy' * 50000) }}", "characters"),
    "str.center": ("{{ 'x'.center(1000000000) }}", "unsafe"),
    "str.format width": ("{{ '{:>1000000000}'.format(1) }}", "unsafe"),
    "% formatting": ("{{ '%1000000000d' % 1 }}", "formats text with %"),
    "int.to_bytes": ("{{ (1).to_bytes(1000000000, 'big') }}", "unsafe"),
    "printing shared nested lists": (
        "{% set l0 = [1,1,1,1,1,1,1,1,1,1] %}" + NESTED + "{{ l8 }}", "more than 100,000 characters into text"),
    "tojson of shared nested lists": (
        "{% set l0 = [1,1,1,1,1,1,1,1,1,1] %}" + NESTED + "{{ l8|tojson }}", "more than 100,000 characters"),
    "sum of lists": ("{% set l = range(1000)|list %}{{ [l, l, l]|sum(start=[]) }}", "sum on something other"),
    "macro recursion": ("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", "calls itself too deeply"),
    "macro doubling its argument": ("{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% endif %}{% endmacro %}"
                                    "{{ d('x', 40) }}", "131,072 characters"),
    "macro doubling its output": ("{% macro d(n) %}{% if n %}{{ d(n - 1) }}{{ d(n - 1) }}{% else %}xxxxxxxxxx"
                                  "{% endif %}{% endmacro %}{{ d(30) }}", "more than 20,000 steps"),
    "recursive loop": ("{% set l = [[1]] %}{% for x in l recursive %}{{ loop(l) }}{% endfor %}",
                       "calls itself too deeply"),
    "output collected in a set block": ("{% set s %}{% for i in range(1000) %}{{ 'x' * 99999 }}{% endfor %}"
                                        "{% endset %}{{ s|length }}", "2,000,000 characters in all"),
    "constant text collected in a filter block": (
        "{% filter length %}{% for i in range(1000) %}" + "y" * 5000 + "{% endfor %}{% endfilter %}",
        "2,000,000 characters in all"),
    "slices kept in a list": ("{% set ns = namespace(l=[]) %}{% set s = 'x' * 99999 %}{% for i in range(1000) %}"
                              "{% set ns.l = ns.l + [s[1:]] %}{% endfor %}", "2,000,000 characters in all"),
    "deeply nested brackets": ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "too deeply"),
    "deeply nested blocks": ("{% if 1 %}" * 1400 + "{% endif %}" * 1400, "too deeply"),
    "a filter that is not offered": ("{{ 'a b'|wordwrap(1) }}", "No filter named 'wordwrap'"),
    "lipsum": ("{{ lipsum(100000) }}", "'lipsum' is undefined"),
    "python internals": ("{{ ''.__class__.__mro__ }}", "unsafe"),
    "a template too long to compile": ("x" * (MAX_TEMPLATE_CHARS + 1), "32,000 characters"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ATTACKS))
def test_each_attack_ends_with_a_sentence_in_bounded_memory(name):
    template, said = ATTACKS[name]
    tracemalloc.start()
    try:
        with pytest.raises(ChatTemplateError) as err:
            chat_prompt(template, "hello")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(err.value)
    assert said in message, message
    assert "untick \"chat format\"" in message or "delete it" in message
    assert "Traceback" not in message
    assert peak < 64_000_000, f"{name}: {peak / 1e6:.0f} MB while rendering"


def test_a_stopped_template_does_not_stop_the_next_rendering_or_leave_tracing_on():
    import sys

    with pytest.raises(ChatTemplateError):
        chat_prompt(ATTACKS["nested loops"][0], "hello")
    assert sys.gettrace() is None
    assert chat_prompt("{{ messages[0]['content'] }}", "hello") == "hello"
    assert template_sandbox._current.budget is None


def test_raise_exception_is_the_templates_own_sentence():
    template = "{% if messages[0]['role'] != 'system' %}{{ raise_exception('a system message comes first') }}{% endif %}"
    with pytest.raises(ChatTemplateError, match="a system message comes first"):
        chat_prompt(template, "hello")


REAL = {
    "chatml (SmolLM2)": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                        "{{ '<|im_start|>system\nYou are a helpful AI assistant<|im_end|>\n' }}{% endif %}"
                        "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
                        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
    "llama 3": "{{ bos_token }}{% for message in messages %}{% set content = '<|start_header_id|>' + message['role'] "
               "+ '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
               "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt "
               "%}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
    "gemma": "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) "
             "%}{{ raise_exception('Conversation roles must alternate') }}{% endif %}{% if (message['role'] == "
             "'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
             "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
             "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}",
    "namespace, selectattr, map, join, slices, methods":
        "{%- set ns = namespace(sys='') -%}{%- for m in messages|selectattr('role', 'equalto', 'system') -%}"
        "{%- set ns.sys = ns.sys ~ m.content -%}{%- endfor -%}{{ ns.sys }}{%- for m in messages|rejectattr('role', "
        "'equalto', 'system') -%}<{{ m.role|upper }}>{{ m.content.strip() }}{{ m.get('name', '') }}{%- endfor -%}"
        "{{ messages|map(attribute='role')|join(',') }}{{ messages|length }}{{ messages[-1].content[:3] }}"
        "{{ messages|tojson }}{{ (messages[0].content * 2)|replace('l', 'L')|indent(2) }}",
}


@pytest.mark.parametrize("name", list(REAL))
@pytest.mark.parametrize("generation", [True, False])
def test_real_templates_render_as_jinjas_own_sandbox_renders_them(name, generation):
    plain = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    messages = [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}]
    expected = plain.from_string(REAL[name]).render(messages=messages, add_generation_prompt=generation,
                                                    bos_token="", eos_token="")
    assert template_sandbox.render_within_budget(REAL[name], messages=messages, add_generation_prompt=generation,
                                                 bos_token="", eos_token="") == expected


def test_chat_prompt_and_chat_end_with_a_real_template():
    template = REAL["chatml (SmolLM2)"]
    assert chat_prompt(template, "hi").endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert chat_end(template) == "<|im_end|>\n"
    assert chat_end(ATTACKS["nested loops"][0]) is None  # a template that cannot be rendered gives no stop text
