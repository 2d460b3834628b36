"""Chat format: a pretrained chat model's template (Jinja, from its tokenizer) around the user's message.

Templates come from model files, which may be someone else's, so they are rendered in a sandbox with a
budget (model_core.data.template_sandbox: no access to Python internals, and bounded steps and characters)
and the result is bounded."""
from typing import Optional

MAX_TEMPLATE_CHARS = 32_000  # a template's own text: Jinja compiles it to Python (seconds for 100 kB)
MAX_CHAT_CHARS = 20_000  # a rendered prompt longer than this is refused (the app's prompts are far shorter)
ANSWER_MARKER = "\x00answer\x00"  # stands for an assistant's answer while chat_end finds what follows one
NO_CHAT = "untick \"chat format\" and write the text the model should continue"


class ChatTemplateError(ValueError):
    """The model has no chat template, or its template cannot be rendered; the message says which."""


def checked_template(template) -> Optional[str]:
    """A chat template as a model file holds it: None, or text of at most MAX_TEMPLATE_CHARS (Jinja compiles a
    template to Python, seconds for 100 kB; real chat templates have a few thousand characters)."""
    if template is not None and (not isinstance(template, str) or len(template) > MAX_TEMPLATE_CHARS):
        raise ChatTemplateError(f"the chat template is not text of at most {MAX_TEMPLATE_CHARS:,} characters: "
                                "delete it to use the model without the chat format.")
    return template or None


def chat_prompt(template: Optional[str], message: str, system: Optional[str] = None) -> str:
    """The text the model reads for one user message, ending where the assistant's answer begins."""
    if not template:
        raise ChatTemplateError(f"this model has no chat template: {NO_CHAT}.")
    checked_template(template)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": message}]
    text = _render(template, messages, add_generation_prompt=True)
    if len(text) > MAX_CHAT_CHARS:
        raise ChatTemplateError(f"the chat-formatted prompt is {len(text):,} characters, more than "
                                f"{MAX_CHAT_CHARS:,}: shorten the message.")
    return text


def chat_end(template: Optional[str]) -> Optional[str]:
    """The text the template puts after an assistant's answer ("<|im_end|>\\n" for ChatML), or None: where a
    chat-format generation stops."""
    if not template or len(template) > MAX_TEMPLATE_CHARS:
        return None
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": ANSWER_MARKER}]
    try:
        text = _render(template, messages, add_generation_prompt=False)
    except ChatTemplateError:
        return None
    after = text.split(ANSWER_MARKER, 1)[1] if ANSWER_MARKER in text else ""
    return after or None


def _render(template: str, messages: list[dict], add_generation_prompt: bool) -> str:
    from jinja2 import TemplateError

    from model_core.data.template_sandbox import TemplateBudgetError, render_within_budget

    try:
        return render_within_budget(template, messages=messages, add_generation_prompt=add_generation_prompt,
                                    bos_token="", eos_token="")
    except TemplateBudgetError as err:
        raise ChatTemplateError(f"the model's chat template was stopped: {err}; {NO_CHAT}.") from None
    except (RecursionError, SyntaxError):  # Python's own limits on the template compiled: nesting, recursion
        raise ChatTemplateError(f"the model's chat template nests or calls itself too deeply; {NO_CHAT}.") from None
    except TemplateError as err:
        raise ChatTemplateError(f"the model's chat template cannot be rendered ({str(err)[:120]}); {NO_CHAT}.") \
            from None
    except Exception as err:  # noqa: BLE001 - 1/0, 'a' - 1, 200 nested brackets (a SyntaxError in Python): the template's fault
        raise ChatTemplateError(f"the model's chat template failed ({type(err).__name__}: {str(err)[:120]}); "
                                f"{NO_CHAT}.") from None


# Questions whose greedy answers a faster generation path must give as float32 does (GPT.pick_generation_path).
# In SmolLM2's chat template each is 37 tokens long, so all ten run as one batch.
CHECK_QUESTIONS = ("What is the capital of France?", "What is 2+2?", "List the days of the week.",
                   "Describe a cat in one sentence.", "Who painted the Mona Lisa?", "What is the opposite of hot?",
                   "What language is spoken in Brazil?", "Name three colours of the rainbow.",
                   "What is the speed of light?", "What is the capital of Japan?")


def check_prompts(template: Optional[str], encode) -> list[list[int]]:
    """The token ids of CHECK_QUESTIONS in the chat template, or as plain text without one (encode: text -> ids)."""
    return [encode(chat_prompt(template, q) if template else q) for q in CHECK_QUESTIONS]


def chat_stop_token(template: Optional[str], encode) -> Optional[int]:
    """The token that ends an answer in the chat template (<|im_end|>), or None."""
    end = chat_end(template)
    ids = encode(end) if end else []
    return ids[0] if ids else None
