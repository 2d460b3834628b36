"""Chat format: a pretrained chat model's template (Jinja, from its tokenizer) around the user's message.

Templates come from model files, which may be someone else's, so they are rendered in Jinja's immutable
sandbox (no attribute access to Python internals, no mutation) and the result is bounded."""
from typing import Optional

MAX_CHAT_CHARS = 20_000  # a rendered prompt longer than this is refused (the app's prompts are far shorter)
ANSWER_MARKER = "\x00answer\x00"  # stands for an assistant's answer while chat_end finds what follows one


class ChatTemplateError(ValueError):
    """The model has no chat template, or its template cannot be rendered; the message says which."""


def chat_prompt(template: Optional[str], message: str, system: Optional[str] = None) -> str:
    """The text the model reads for one user message, ending where the assistant's answer begins."""
    if not template:
        raise ChatTemplateError("this model has no chat template: untick \"chat format\" and write the text "
                                "the model should continue.")
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": message}]
    text = _render(template, messages, add_generation_prompt=True)
    if len(text) > MAX_CHAT_CHARS:
        raise ChatTemplateError(f"the chat-formatted prompt is {len(text):,} characters, more than "
                                f"{MAX_CHAT_CHARS:,}: shorten the message.")
    return text


def chat_end(template: Optional[str]) -> Optional[str]:
    """The text the template puts after an assistant's answer ("<|im_end|>\\n" for ChatML), or None: where a
    chat-format generation stops."""
    if not template:
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
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    try:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                                bos_token="", eos_token="")
    except TemplateError as err:
        raise ChatTemplateError(f"the model's chat template cannot be rendered ({str(err)[:120]}).") from None


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
