"""Turn the user's prompt into token ids, with readable errors and warnings."""
import gradio as gr

from explorer.common.errors import UserError
from model_core.data.tokenization import UnknownTokenError

MAX_PROMPT_CHARS = 20_000  # far more than any model here reads; stops a pasted book from being tokenised


def encode_prompt(tokenizer, prompt: str, block_size: int, drop_unknown: bool = False) -> list[int]:
    """Token ids of the prompt, cropped to the last block_size tokens (with a warning). A prompt of spaces is an
    emptied box; a line break is a real start (a names model writes a name after one)."""
    if prompt is None or (isinstance(prompt, str) and not prompt.strip(" \t")):
        raise UserError("Type a prompt first (a few words or characters).")
    if not isinstance(prompt, str):
        raise UserError("The prompt must be text.")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise UserError(f"The prompt is {len(prompt):,} characters long; paste at most {MAX_PROMPT_CHARS:,} "
                        f"(the model reads only its last {block_size} tokens anyway).")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:  # an unpaired surrogate: half of an emoji, sent by a script
        raise UserError("The prompt contains broken characters (half of an emoji?); retype it.") from None
    if drop_unknown:
        prompt = tokenizer.strip_unknown(prompt)
    try:
        ids = tokenizer.encode(prompt)
    except UnknownTokenError as err:
        shown = ", ".join(repr(u) for u in sorted(err.unknown)[:20])
        raise UserError(f"The prompt has {len(err.unknown)} characters this model's tokenizer never saw: {shown}. "
                        "Remove them, or tick “Drop unknown characters” to drop them automatically.") from None
    if not ids:
        raise UserError("Nothing is left of the prompt after dropping unknown characters; type something else.")
    if len(ids) > block_size:
        gr.Warning(f"The prompt is {len(ids)} tokens long but this model reads at most {block_size}; "
                   f"only the last {block_size} are used.")
        ids = ids[-block_size:]
    return ids


def token_labels(tokenizer, ids: list[int]) -> list[str]:
    return [tokenizer.token_label(i) for i in ids]
