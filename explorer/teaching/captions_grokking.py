"""Captions of the grokking lab, computed from its data."""
from typing import Optional

import numpy as np

from explorer.figures.grokking import strongest_rows
from explorer.teaching.captions_progress import first_step


def phases(steps, train_acc, test_acc) -> list[tuple[int, int, str]]:
    """[(start, end, name)]: memorise (until train accuracy reaches 100 %), build the circuit (until test
    accuracy reaches 99 %), clean up (after); only the phases the run reached."""
    if not steps:
        return []
    memorised = first_step(steps, train_acc, 0.999)
    general = first_step(steps, test_acc, 0.99)
    out = [(steps[0], memorised if memorised is not None else steps[-1], "memorise")]
    if memorised is not None:
        out.append((memorised, general if general is not None else steps[-1], "build the circuit"))
        if general is not None and general < steps[-1]:
            out.append((general, steps[-1], "clean up"))
    return out


def lab_caption(lab, neuron: Optional[int], phase_list: list, p: int, labels: Optional[list] = None,
                shown: int = 0) -> str:
    """labels: the Fourier basis rows' names; shown: how many of them the logits chart draws."""
    energy = np.asarray(lab.embedding_norms[1:], dtype=np.float64) ** 2
    keys = lab.key_frequencies
    share = energy[[k - 1 for k in keys]].sum() / max(energy.sum(), 1e-30)
    parts = [f"**{len(keys)} frequenc{'y' if len(keys) == 1 else 'ies'}** ({', '.join(map(str, keys))}) "
             f"carr{'ies' if len(keys) == 1 else 'y'} "
             f"{share:.0%} of the number embedding's squared Fourier norm (of {p // 2} frequencies): the model "
             f"writes each number as cosines and sines of these. Test accuracy on the pairs it never saw: "
             f"**{lab.test_accuracy:.1%}**."]
    parts.append(f"With only those frequencies' cos/sin(2πk(a + b)/p) parts of the logits the loss is "
                 f"{lab.final.restricted:.3g} (restricted); with them removed, on the training pairs, "
                 f"{lab.final.excluded:.3g} (excluded): " + (
                     "the answer is carried by these frequencies." if lab.final.restricted < lab.final.excluded / 2
                     else "these frequencies do not carry the answer on their own (yet)."))
    if labels:
        parts.append(logit_sentence(lab.logit_fourier, labels, shown))
    if neuron is not None:
        parts.append(f"Neuron {neuron} follows frequency {int(lab.neuron_frequency[neuron])}: its stripes over "
                     "(a, b) repeat with that period.")
    if len(phase_list) > 1:
        parts.append(phase_sentence(phase_list))
    return " ".join(parts)


def logit_sentence(norms, labels: list, shown: int) -> str:
    """The largest component of the logits' 2-D Fourier transform, leaving out constant × constant."""
    norms = np.where(np.isfinite(norms), np.asarray(norms, dtype=np.float64), 0.0)
    norms[0, 0] = 0.0
    i, j = np.unravel_index(int(np.argmax(norms)), norms.shape)
    drawn = strongest_rows(norms, shown) if shown else []
    where = f", outside the {len(drawn)} rows the chart draws" if drawn and not {i, j} <= set(drawn) else ""
    return (f"The logits' largest Fourier component besides the constant is a: {labels[i]} × b: {labels[j]} "
            f"(norm {norms[i, j]:.3g}{where}).")


def phase_sentence(phase_list: list) -> str:
    """The phases and the accuracy steps that end them (train 100 % ends memorising, test 99 % the circuit)."""
    ends = [f"train accuracy reached 100 % at step {phase_list[1][0]:,}"]
    if len(phase_list) > 2:
        ends.append(f"test accuracy 99 % at step {phase_list[2][0]:,}")
    return ("Phases: " + "; ".join(f"{name} steps {a:,}–{b:,}" for a, b, name in phase_list)
            + f" ({', '.join(ends)}).")
