"""Turn the user's prompt into token ids, with readable errors and warnings."""
import gradio as gr

from model_core.tokenization import UnknownTokenError

from .errors import UserError


def encode_prompt(tokenizer, prompt: str, block_size: int, drop_unknown: bool = False) -> list[int]:
    """Token ids of the prompt, cropped to the last block_size tokens (with a warning)."""
    if prompt is None or not prompt.strip():
        raise UserError("Type a prompt first (a few words or characters).")
    if drop_unknown:
        prompt = tokenizer.strip_unknown(prompt)
    try:
        ids = tokenizer.encode(prompt)
    except UnknownTokenError as err:
        raise UserError(f"{err} Tick “Drop unknown characters” to remove them automatically.") from None
    if not ids:
        raise UserError("Nothing is left of the prompt after dropping unknown characters; type something else.")
    if len(ids) > block_size:
        gr.Warning(f"The prompt is {len(ids)} tokens long but this model reads at most {block_size}; "
                   f"only the last {block_size} are used.")
        ids = ids[-block_size:]
    return ids


def token_labels(tokenizer, ids: list[int]) -> list[str]:
    return [tokenizer.token_label(i) for i in ids]
