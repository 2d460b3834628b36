"""Where text labels go on a chart so that none covers another label or a marker: each label's box is estimated
in pixels from its font, a few places are tried in order and the first free one is taken (a label with no free
place is left off; hover still names its point). Boxes are (left, top, right, bottom) in px, y downward."""
import numpy as np

from explorer.figures.common import CHAR_WIDTH

LINE = 1.3  # a line of text is this many fonts high
GAP = 2  # px between a marker and its label
# Plotly's text positions, in the order they are tried: above the point first, as the charts always drew them
TEXT_POSITIONS = ("top center", "bottom center", "middle right", "middle left")


def text_width(text: str, font: float) -> float:
    """Estimated px of a line of text: symbols such as ⏎ and ␣ take a whole font, letters CHAR_WIDTH of one."""
    return sum(1.0 if ord(ch) >= 0x2000 else CHAR_WIDTH for ch in text) * font


def text_box(x: float, y: float, text: str, font: float) -> np.ndarray:
    """The box of text centred at (x, y) px."""
    half_w, half_h = text_width(text, font) / 2, LINE * font / 2
    return np.array([x - half_w, y - half_h, x + half_w, y + half_h])


def beside(x: float, y: float, text: str, font: float, position: str, radius: float) -> np.ndarray:
    """The box of text drawn at a TEXT_POSITIONS position of a marker of this radius at (x, y) px."""
    w, h = text_width(text, font), LINE * font
    dx = {"center": 0.0, "right": radius + GAP + w / 2, "left": -(radius + GAP + w / 2)}[position.split()[1]]
    dy = {"top": -(radius + GAP + h / 2), "bottom": radius + GAP + h / 2, "middle": 0.0}[position.split()[0]]
    return text_box(x + dx, y + dy, text, font)


class Taken:
    """The boxes already drawn (markers, placed labels) within a plot of width × height px."""

    def __init__(self, width: float, height: float, boxes=()):
        self.width, self.height = width, height
        self.boxes = np.array(list(boxes), dtype=np.float64).reshape(-1, 4)

    def free(self, box: np.ndarray) -> bool:
        """Inside the plot and overlapping no box taken."""
        if box[0] < 0 or box[1] < 0 or box[2] > self.width or box[3] > self.height:
            return False
        b = self.boxes
        return not np.any((b[:, 0] < box[2]) & (box[0] < b[:, 2]) & (b[:, 1] < box[3]) & (box[1] < b[:, 3]))

    def take(self, box: np.ndarray) -> None:
        self.boxes = np.vstack([self.boxes, box])


def marker_boxes(xs, ys, radius: float) -> np.ndarray:
    """[N, 4] the boxes of round markers of this radius centred at (xs, ys) px."""
    xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    return np.stack([xs - radius, ys - radius, xs + radius, ys + radius], axis=1)


def point_label_positions(xs, ys, labels: list[str], font: float, radius: float, width: float,
                          height: float) -> list:
    """Each point's Plotly text position (one of TEXT_POSITIONS), or None where every place would cover another
    label or marker. xs, ys: the points in px of a plot width × height. The most isolated points are labelled
    first: their labels are the easiest to read, and a crowd keeps the labels of its edge."""
    xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    taken = Taken(width, height, marker_boxes(xs, ys, radius))
    places: list = [None] * len(labels)
    for i in isolation_order(xs, ys):
        for position in TEXT_POSITIONS:
            box = beside(xs[i], ys[i], labels[i], font, position, radius)
            if labels[i] and taken.free(box):
                taken.take(box)
                places[i] = position
                break
    return places


def isolation_order(xs: np.ndarray, ys: np.ndarray) -> list[int]:
    """Point indices, the farthest from its nearest neighbour first (ties in the given order)."""
    if len(xs) < 2:
        return list(range(len(xs)))
    d = np.hypot(xs[:, None] - xs[None, :], ys[:, None] - ys[None, :])
    np.fill_diagonal(d, np.inf)
    return [int(i) for i in np.argsort(-d.min(axis=1), kind="stable")]


def x_pixels(values, value_range, width: float) -> np.ndarray:
    """Data values on an x axis spanning value_range over width px -> px from the plot's left edge."""
    low, high = value_range
    return (np.asarray(values, dtype=np.float64) - low) / (high - low) * width


def y_pixels(values, value_range, height: float, reversed_axis: bool = False) -> np.ndarray:
    """Data values on a y axis spanning value_range over height px -> px from the plot's top edge (the axis runs
    upward, or downward when reversed_axis)."""
    share = x_pixels(values, value_range, 1.0)
    return (share if reversed_axis else 1 - share) * height


def padded_range(values, share: float = 0.08) -> list[float]:
    """[low, high] of the values, widened by share of their span (at least 1) each side."""
    values = np.asarray(values, dtype=np.float64)
    low, high = float(values.min()), float(values.max())
    pad = max(high - low, 1e-9) * share if high > low else 1.0
    return [low - pad, high + pad]


def equal_scale_ranges(x_range, y_range, width: float, height: float) -> tuple[list[float], list[float]]:
    """Axis ranges widened about their centres so that one unit spans as many pixels across as up (a plot area of
    width x height px): a distance between two points then reads the same in every direction."""
    per_px = max((x_range[1] - x_range[0]) / width, (y_range[1] - y_range[0]) / height)

    def around(span, px):
        middle = (span[0] + span[1]) / 2
        return [middle - per_px * px / 2, middle + per_px * px / 2]
    return around(x_range, width), around(y_range, height)
