"""Sampling tab: the filtered next-token distribution, temperature curves, side-by-side comparison, steps."""
import html
import math

import gradio as gr
import torch

from explorer.callbacks import validation
from explorer.callbacks.common import analyse
from explorer.callbacks.prompting import encode_prompt
from explorer.common.controls import COMPARE_HEADERS, DEFAULT_COMPARISON
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.figures.sampling import generation_steps_table, next_token_figure, temperature_curve_figure
from explorer.state.session import Session
from explorer.teaching import captions
from model_core.data.chat import chat_prompt, chat_stop_token
from model_core.data.tokenization import pieces_in_context
from model_core.model.sampling import SamplingSettings, filter_logits, generate
from model_core.training.sampling_workers import compare_in_worker

ROW_DEFAULTS = [1.0, 0, 1.0, 0.0]  # a short row is completed with these (no filtering)
MAX_COMPARED = 6  # columns side by side; each one is a full generation
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 100.0


def settings(temperature, top_k, top_p, min_p) -> SamplingSettings:
    """Checked sampling settings from raw slider, table or API values (empty top-k means off)."""
    t = validation.number(temperature, "Temperature", minimum=0, maximum=MAX_TEMPERATURE)
    if 0 < t < MIN_TEMPERATURE:  # dividing logits by less overflows float32: every probability turns NaN
        raise UserError(f"Temperature must be 0 (always the top token) or at least {MIN_TEMPERATURE:g}, got {t:g}.")
    k = validation.whole_number(top_k, "Top-k", minimum=0, default=0)
    p = validation.number(top_p, "Top-p", minimum=0, maximum=1, default=1.0)
    m = validation.number(min_p, "Min-p", minimum=0, maximum=1, default=0.0)
    return SamplingSettings(t, k or None, p, m).validate()


def distribution_view(session: Session, prompt: str, temperature, top_k, top_p, min_p, drop_unknown=False,
                      chat_format=False):
    """-> next-token figure (before/after filtering), temperature figure, caption."""
    s = settings(temperature, top_k, top_p, min_p)
    a = analyse(session, model_text(session, prompt, chat_format), drop_unknown)
    logits = a.logits[-1]
    before = torch.softmax(logits, -1).numpy()
    after, removed = filter_logits(logits, s.temperature, s.top_k, s.top_p, s.min_p)
    vocab = [session.inspected.tokenizer.token_label(i) for i in range(len(before))]
    temps = sorted({0.5, 1.0, 2.0, s.temperature} - {0.0})
    label = captions.sampling_label(s.temperature, s.top_k, s.top_p, s.min_p)
    return (next_token_figure(before, after.numpy(), removed.numpy(), vocab, after_name=f"after {label}"),
            temperature_curve_figure(logits.numpy(), temps, vocab),
            captions.chart_captions({
                "Next-token distribution": captions.sampling_caption(before, after.numpy(), removed.numpy(), vocab),
                "Temperature": captions.temperature_caption(logits.numpy(), temps, vocab, s.temperature)}))


def parse_table(rows) -> list[SamplingSettings]:
    """Rows of the comparison table (list of lists, {"headers", "data"} or a DataFrame) -> validated settings."""
    rows = table_rows(rows)
    rows = [r for r in rows if any(str(c).strip() not in ("", "None", "nan") for c in r)]
    if not rows:
        raise UserError("Add at least one row of settings to compare (temperature, top_k, top_p, min_p).")
    if len(rows) > MAX_COMPARED:
        raise UserError(f"Compare at most {MAX_COMPARED} settings at once ({len(rows)} given).")
    out = []
    for i, row in enumerate(rows, 1):
        if len(row) > len(COMPARE_HEADERS):
            raise UserError(f"Row {i} has {len(row)} values; each row has {len(COMPARE_HEADERS)}: "
                            f"{', '.join(COMPARE_HEADERS)}.")
        try:
            out.append(settings(*([typed_cell(c) for c in row] + ROW_DEFAULTS[len(row):])))
        except ValueError as err:
            raise UserError(f"Row {i}: {err}") from None
    return out


def typed_cell(cell):
    """A cell as the browser sends it once edited ("0.7", text) -> the number it spells; anything else as it is
    (so "abc" is refused by name)."""
    try:
        return float(cell.strip()) if isinstance(cell, str) else cell
    except ValueError:
        return cell


def table_rows(table) -> list[list]:
    """The table's rows as lists, or a UserError saying what a comparison table looks like."""
    if isinstance(table, dict):
        table = table.get("data")
    elif hasattr(table, "values") and hasattr(table.values, "tolist"):  # a DataFrame
        table = table.values.tolist()
    if table is None:
        return []
    if not isinstance(table, (list, tuple)) or not all(isinstance(r, (list, tuple)) for r in table):
        raise UserError(f"The comparison table must be a list of rows, each row "
                        f"[{', '.join(COMPARE_HEADERS)}], such as {DEFAULT_COMPARISON[0]}.")
    return [list(r) for r in table]


def new_tokens(value) -> int:
    return validation.whole_number(value, "New tokens", minimum=1, maximum=LIMITS.max_new_tokens)


def comparison_view(session: Session, prompt: str, settings, max_new_tokens, seed, drop_unknown=False,
                    chat_format=False) -> str:
    """-> HTML: one column per setting, the generated text, and distinct-2 / repetition / mean log-prob."""
    table, n, seed = parse_table(settings), new_tokens(max_new_tokens), validation.seed(seed)
    tok, cfg = session.inspected.tokenizer, session.inspected.model.cfg
    ids = encode_prompt(tok, model_text(session, prompt, chat_format), cfg.block_size, drop_unknown)
    results = compare_in_worker(session.inspected.model, ids, table, n, seed=seed,
                                stop_token=stop_token(tok, chat_format))
    cells = []
    for r in results:
        s = r.settings
        head = f"T={s.temperature:g} · top-k {s.top_k or 'off'} · top-p {s.top_p:g} · min-p {s.min_p:g}"
        cells.append(
            f"<div class='te-col'><div class='te-col-head'>{html.escape(head)}</div>"
            f"<pre class='te-gen'><b>{html.escape(prompt)}</b>{html.escape(tok.decode(r.tokens))}</pre>"
            f"<div class='te-metrics'>distinct-2 <b>{r.distinct_2:.2f}</b> · repetition <b>{r.repetition_rate:.2f}</b>"
            f" · mean log-prob <b>{r.mean_logprob:.2f}</b></div></div>")
    return f"<div class='te-compare'>{''.join(cells)}</div>"


def end_of_text(tokenizer):
    """The id of an "<EOS>" word token (the StatQuest seed's vocabulary), where generation stops; else None."""
    return getattr(tokenizer, "stoi", {}).get("<EOS>")


def model_text(session: Session, prompt, chat_format) -> str:
    """The text the model reads: the prompt itself, or with chat format the user's message in the model's chat
    template (a model without one: a UserError saying so)."""
    if not chat_format or not isinstance(prompt, str) or not prompt.strip():
        return prompt  # encode_prompt says what is wrong with an empty prompt
    return chat_prompt(getattr(session.inspected.tokenizer, "chat_template", None), prompt)


def chat_format_for_model(session: Session, chat_format):
    """-> chat format unticked when the inspected model has no chat template (it was ticked for another model, in
    another lesson), else no change."""
    if chat_format and not getattr(session.inspected.tokenizer, "chat_template", None):
        return False
    return gr.update()


def stop_token(tokenizer, chat_format):
    """Where generation stops: with chat format the token that ends the model's answer (<|im_end|>), else an
    "<EOS>" word token if the vocabulary has one; None: it runs to the length asked for."""
    if not chat_format:
        return end_of_text(tokenizer)
    return chat_stop_token(getattr(tokenizer, "chat_template", None), tokenizer.encode)


def steps_view(session: Session, prompt: str, temperature, top_k, top_p, min_p, max_new_tokens, seed,
               drop_unknown=False, chat_format=False):
    """-> step rows (token, probability, running log-prob) and the text coloured by probability (HTML)."""
    s, n, seed = settings(temperature, top_k, top_p, min_p), new_tokens(max_new_tokens), validation.seed(seed)
    tok, cfg = session.inspected.tokenizer, session.inspected.model.cfg
    ids = encode_prompt(tok, model_text(session, prompt, chat_format), cfg.block_size, drop_unknown)
    steps = list(generate(session.inspected.model, ids, n, s.temperature, s.top_k, s.top_p, s.min_p, seed=seed,
                          stop_token=stop_token(tok, chat_format), keep_distributions=False))
    # Step.logprob is already a running sum; the table wants each step's own log-prob and sums them itself.
    rows = [dict(token_label=tok.token_label(st.token), prob=st.prob, model_prob=st.model_prob,
                 logprob=math.log(max(st.model_prob, 1e-30))) for st in steps]
    pieces = pieces_in_context(tok, ids, [st.token for st in steps])  # a word model's words keep their spaces
    spans = "".join(f"<span title='p={st.prob:.2f}' style='background:{shade(st.prob)}'>"
                    f"{html.escape(piece)}</span>" for st, piece in zip(steps, pieces))
    text = (f"<p class='te-caption'>{html.escape(captions.generation_caption(rows))}</p>"
            f"<pre class='te-gen'><b>{html.escape(tok.decode(ids))}</b>{spans}</pre>{shading_key()}")
    return generation_steps_table(rows), text


KEY_PROBABILITIES = (0.0, 0.25, 0.5, 0.75, 1.0)  # the shades the key under the generated text shows


def shade(prob: float) -> str:
    """A generated token's background: the likelier its pick, the deeper the blue (never quite white)."""
    return f"rgba(37,99,235,{0.08 + 0.6 * prob:.2f})"


def shading_key() -> str:
    """HTML: what the shades of the generated text mean, with a sample of each in KEY_PROBABILITIES."""
    samples = " ".join(f"<span style='background:{shade(p)};padding:0 0.4em'>{p:.0%}</span>"
                       for p in KEY_PROBABILITIES)
    return (f"<p class='te-caption'>Shading: the probability each new token had when it was picked (after the "
            f"sampling settings), pale for an unlikely pick, deep blue for a sure one: {samples}. Hover a token "
            f"for its value.</p>")
