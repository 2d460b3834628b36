"""Per-head statistics: a sortable table of what each head looks at."""
import numpy as np

from explorer.common.controls import HEAD_TABLE_COLUMNS, HEAD_TABLE_HEADERS  # noqa: F401  (HEADERS: the rows fit them)
from explorer.figures.common import head_label

# the three "where does it look" shares drawn by the attention overview (explorer.figures.attention)
OVERVIEW_PANELS = (("prev_token", "previous token"), ("self", "itself"), ("first_token", "first token (sink)"))


def head_statistics_table(stats: dict[str, np.ndarray]) -> list[list]:
    """{stat: [L, H]} -> one row per head for a gr.Dataframe with HEAD_TABLE_HEADERS, rounded to 3 decimals."""
    n_layers, n_heads = np.shape(stats["entropy"])
    return [
        [head_label(layer, head)] + [round(float(stats[key][layer, head]), 3) for key, _ in HEAD_TABLE_COLUMNS]
        for layer in range(n_layers) for head in range(n_heads)
    ]
