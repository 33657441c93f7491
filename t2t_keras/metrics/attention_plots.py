"""Attention heat maps of decoded sentences, like the paper's Figures 3-5, and a page to browse them.

For each sentence and each (attention kind, layer), one PNG shows every head
as its own heat map: rows are queries, columns keys, each axis labelled with
the subword pieces (EOS as `</s>`). Decoder positions are labelled with the
output piece they produce, so a row of the encoder-decoder map is the source
the model attended to when writing that piece. Files in `plot_dir`:

    sentence_<n>/<kind>_layer_<l>.png   n, l from 1; kind: encoder, decoder, encoder_decoder
    index.html                          sentences, their text, and every image

Figures are rendered by Agg through matplotlib's object API, never pyplot, so
no display is needed and no figure outlives its function.
"""

from __future__ import annotations

import html
import io
import math
import os
from collections.abc import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.image import AxesImage
from matplotlib.text import Text
from matplotlib.textpath import text_to_path

from t2t_keras.data.ids import EOS_ID, PAD_ID, padded_ids
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.models.transformer import Transformer

# kind -> (title, vocabulary side of the queries, of the keys).
KINDS = {
    "encoder": ("encoder self-attention", "inputs", "inputs"),
    "decoder": ("decoder self-attention", "targets", "targets"),
    "encoder_decoder": ("encoder-decoder attention", "targets", "inputs"),
}
_AXIS_NAMES = {"inputs": "source", "targets": "output"}
_MAX_COLUMNS = 4  # Heads per row of the grid: 8 heads make 2 rows of 4.
_CELL_INCHES = 0.16  # One token's row or column, resized for long or short sentences...
_MAX_PANEL_INCHES = 8.0  # ...so that one head's map is at most this wide or high...
_MIN_PANEL_INCHES = 1.2  # ...and at least this, along its longer side.
_MIN_FIGURE_INCHES = 5.5  # Room for the figure's title.
_MIN_CELL_PIXELS = 12  # Resolution rises for small cells, keeping labels legible.


def write_attention_plots(
    model: Transformer,
    vocabs: dict[str, Vocabulary],
    examples: Sequence[tuple[Sequence[int], Sequence[int]]],
    plot_dir: str,
) -> list[str]:
    """Writes every layer's attention maps of each example, and index.html, into plot_dir.

    One teacher-forced pass of `model.attention_weights` on all examples gives
    the weights. Files already in plot_dir are left alone, except those of
    the same names, which are overwritten.

    Args:
      model: a built Transformer (anything with its `attention_weights`).
      vocabs: {"inputs": Vocabulary, "targets": Vocabulary}, to label the axes.
      examples: (input ids, output ids) per sentence, each ending with EOS;
        anything after the first EOS (e.g. PAD) is dropped.
      plot_dir: the directory to write to; created if missing.

    Returns:
      The paths written: sentences x 3 kinds x layers PNGs, then index.html.

    Raises:
      UserError: an example without ids, or plot_dir cannot be created or written.
    """
    pairs = [
        (_trim(source, n, "input"), _trim(output, n, "output"))
        for n, (source, output) in enumerate(examples, 1)
    ]
    _make_dirs(plot_dir, [f"sentence_{n}" for n in range(1, len(pairs) + 1)])
    weights = _weights_by_sentence(model, pairs)
    written, sections = [], []
    for n, ((source, output), sentence_weights) in enumerate(zip(pairs, weights, strict=True), 1):
        labels = {
            "inputs": vocabs["inputs"].pieces(source),
            "targets": vocabs["targets"].pieces(output),
        }
        images = {}
        for kind, layers in sentence_weights.items():
            images[kind] = [f"sentence_{n}/{kind}_layer_{i}.png" for i in range(1, len(layers) + 1)]
            pngs = _render_layers(layers, labels, kind, f"Sentence {n}")
            written += [
                _write(plot_dir, name, png) for name, png in zip(images[kind], pngs, strict=True)
            ]
        texts = (vocabs["inputs"].decode(source), vocabs["targets"].decode(output))
        sections.append(_sentence_section(n, texts, images))
    written.append(_write(plot_dir, "index.html", _index_page(sections).encode("utf-8")))
    return written


def _trim(ids: Sequence[int], number: int, side: str) -> list[int]:
    """The ids up to and including the first EOS (all of them, trailing PAD dropped, if none)."""
    ids = [int(token) for token in np.asarray(ids).reshape(-1)]
    if EOS_ID in ids:
        ids = ids[: ids.index(EOS_ID) + 1]
    while ids and ids[-1] == PAD_ID:
        ids.pop()
    if not ids:
        raise UserError(
            f"example {number} has no {side} ids; each example is a pair (input ids, "
            "output ids), both non-empty and ending with EOS (id 1)."
        )
    return ids


def _weights_by_sentence(
    model: Transformer, pairs: list[tuple[list[int], list[int]]]
) -> list[dict[str, list[np.ndarray]]]:
    """Runs all pairs as one padded batch; per sentence {kind: per layer [H, Q, K]}, unpadded."""
    if not pairs:
        return []

    batch = model.attention_weights(
        padded_ids([s for s, _ in pairs]), padded_ids([o for _, o in pairs])
    )
    batch = {kind: [layer.numpy() for layer in batch[kind]] for kind in KINDS}
    # Padded source keys are masked, and padded targets come after every real one
    # (the decoder is causal): cut off, each sentence's weights are as if run alone.
    sentences = []
    for i, (source, output) in enumerate(pairs):
        length = {"inputs": len(source), "targets": len(output)}
        sentence = {}
        for kind, (_, query_side, key_side) in KINDS.items():
            rows, columns = length[query_side], length[key_side]
            sentence[kind] = [layer[i, :, :rows, :columns] for layer in batch[kind]]
        sentences.append(sentence)
    return sentences


def _render_layers(
    layers: list[np.ndarray], labels: dict[str, list[str]], kind: str, sentence: str
) -> list[bytes]:
    """One PNG per layer of one attention kind: weights [H, Q, K] as a grid of heat maps.

    The layers share their labels, so one figure is drawn and only its images
    and title change between layers: building axes and ticks is much of the cost.

    Args:
      layers: per layer, the weights [H, Q, K] of one sentence.
      labels: {"inputs": source pieces, "targets": output pieces}.
      kind: a key of KINDS.
      sentence: the sentence's name in the titles.

    Returns:
      The PNG files' contents, in layer order.
    """
    figure, images, title, dpi = _heat_map_figure(layers[0].shape, labels, kind)
    pngs = []
    for layer, weights in enumerate(layers, 1):
        for image, head_weights in zip(images, weights, strict=True):
            image.set_data(head_weights)
        title.set_text(f"{sentence}: {KINDS[kind][0]}, layer {layer}")
        buffer = io.BytesIO()
        # Light compression: the default level triples the time for a few kB less.
        figure.savefig(buffer, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
        pngs.append(buffer.getvalue())
    return pngs


def _heat_map_figure(
    shape: tuple[int, int, int], labels: dict[str, list[str]], kind: str
) -> tuple[Figure, list[AxesImage], Text, int]:
    """An empty grid of heat maps for weights of shape [H, Q, K].

    Like a shared-axes grid, only the left column carries query labels and the
    bottom row key labels: text is most of matplotlib's drawing time.

    Returns:
      (figure, one image per head, the title, the resolution in dots per inch).
    """
    heads, queries, keys = shape
    query_side, key_side = KINDS[kind][1:]
    longer = max(queries, keys)
    cell = max(min(_CELL_INCHES, _MAX_PANEL_INCHES / longer), _MIN_PANEL_INCHES / longer)
    font = FontProperties(size=max(3.0, min(7.0, cell * 72 * 0.7)))  # Fit a row's height.
    label_inches = (_text_inches(labels[query_side], font), _text_inches(labels[key_side], font))
    grid = _Grid(heads, (keys * cell, queries * cell), label_inches)
    figure = Figure(figsize=grid.size)
    FigureCanvasAgg(figure)
    images = []
    for head in range(heads):
        panel = figure.add_axes(grid.panel(head))
        blank = np.zeros([queries, keys])
        images.append(panel.imshow(blank, cmap="Blues", vmin=0, vmax=1, interpolation="nearest"))
        panel.set_aspect("auto")  # The grid sized the panel to square cells already.
        panel.set_title(f"head {head + 1}", fontsize=8, pad=3)
        panel.tick_params(length=0, pad=2)
        left_column = head % grid.columns == 0
        bottom_row = head + grid.columns >= heads
        panel.set_yticks(range(queries) if left_column else [])
        panel.set_xticks(range(keys) if bottom_row else [])
        if left_column:
            # Pieces are plain text, even one like "$x$".
            panel.set_yticklabels(labels[query_side], fontproperties=font, parse_math=False)
        if bottom_row:
            panel.set_xticklabels(
                labels[key_side], rotation=90, fontproperties=font, parse_math=False
            )
    figure.colorbar(images[0], cax=figure.add_axes(grid.colorbar()), label="attention weight")
    # Axis names once per figure, placed by the grid (an axis label would be
    # placed by measuring every tick label at each draw).
    x, y = grid.axis_names()
    figure.text(*x, f"{_AXIS_NAMES[key_side]} (keys)", ha="center", va="bottom", fontsize=8)
    figure.text(*y, f"{_AXIS_NAMES[query_side]} (queries)", rotation=90, va="center", fontsize=8)
    title = figure.suptitle("", y=1 - 0.12 / grid.size[1], va="top")
    return figure, images, title, max(100, math.ceil(_MIN_CELL_PIXELS / cell))


def _text_inches(texts: list[str], font: FontProperties) -> float:
    """Width of the widest text in inches."""
    widths = [text_to_path.get_text_width_height_descent(t, font, ismath=False)[0] for t in texts]
    return max(widths) / 72  # Points to inches.


class _Grid:
    """Where each head's panel goes in a figure, in figure fractions.

    Args:
      heads: number of panels, laid out `_MAX_COLUMNS` to a row.
      panel_inches: (width, height) of one panel.
      label_inches: (width of the query labels, height of the rotated key labels).
    """

    _AXIS_LABEL = 0.25  # Room for "source (keys)" and the like, in inches.
    _TITLE = 0.25  # A panel's title.
    _GAP = 0.1
    _TOP = 0.45  # The figure's title.
    _COLORBAR = 0.9  # The color bar, its ticks and label.

    def __init__(
        self, heads: int, panel_inches: tuple[float, float], label_inches: tuple[float, float]
    ) -> None:
        self.columns = min(heads, _MAX_COLUMNS)
        self.rows = math.ceil(heads / self.columns)
        self.panel_size = width, height = panel_inches
        self.left = self._GAP + self._AXIS_LABEL + label_inches[0] + 0.05
        self.bottom = self._GAP + self._AXIS_LABEL + label_inches[1] + 0.05
        panels_width = self.columns * (width + self._GAP) - self._GAP
        figure_width = self.left + panels_width + self._COLORBAR
        # A narrow grid is centered in a figure wide enough for its title.
        self.indent = max(0.0, _MIN_FIGURE_INCHES - figure_width) / 2
        self.left += self.indent
        self.right = self.left + panels_width
        self.size = (
            max(figure_width, _MIN_FIGURE_INCHES),
            self.bottom + self.rows * (height + self._TITLE) + self._TOP,
        )

    def panel(self, head: int) -> tuple[float, float, float, float]:
        """(left, bottom, width, height) of head's panel, rows filled from the top."""
        row, column = divmod(head, self.columns)
        width, height = self.panel_size
        x = self.left + column * (width + self._GAP)
        y = self.bottom + (self.rows - 1 - row) * (height + self._TITLE)
        return self._fractions(x, y, width, height)

    def axis_names(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """Where the keys' name (bottom center) and the queries' name (left middle) go."""
        figure_width, figure_height = self.size
        panels_middle = (self.bottom + figure_height - self._TOP) / 2
        keys = ((self.left + self.right) / 2 / figure_width, self._GAP / figure_height)
        queries = ((self.indent + self._GAP) / figure_width, panels_middle / figure_height)
        return keys, queries

    def colorbar(self) -> tuple[float, float, float, float]:
        """(left, bottom, width, height) of the color bar, right of the top row."""
        height = min(2.5, self.size[1] - self.bottom - self._TOP - self._TITLE)
        y = self.size[1] - self._TOP - self._TITLE - height
        return self._fractions(self.right + 0.15, y, 0.15, height)

    def _fractions(
        self, x: float, y: float, width: float, height: float
    ) -> tuple[float, float, float, float]:
        figure_width, figure_height = self.size
        return (x / figure_width, y / figure_height, width / figure_width, height / figure_height)


def _sentence_section(number: int, texts: tuple[str, str], images: dict[str, list[str]]) -> str:
    """The HTML of one sentence: its source and output text, then its images by kind and layer."""
    source, output = (html.escape(text) for text in texts)
    parts = [
        f'<section id="sentence_{number}">',
        f"<h2>Sentence {number}</h2>",
        f"<p><b>Source:</b> {source}</p>",
        f"<p><b>Output:</b> {output}</p>",
    ]
    for kind, names in images.items():
        parts.append(f"<h3>{html.escape(KINDS[kind][0].capitalize())}</h3>")
        for layer, name in enumerate(names, 1):
            link = html.escape(name, quote=True)
            alt = html.escape(f"sentence {number}, {KINDS[kind][0]}, layer {layer}", quote=True)
            parts.append(
                f'<h4>Layer {layer}</h4><a href="{link}"><img src="{link}" alt="{alt}"></a>'
            )
    parts.append("</section>")
    return "\n".join(parts)


def _index_page(sections: list[str]) -> str:
    contents = " ".join(
        f'<a href="#sentence_{n}">Sentence {n}</a>' for n in range(1, len(sections) + 1)
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8"><title>Attention weights</title>',
            "<style>img { max-width: 100%; }</style></head><body>",
            "<h1>Attention weights</h1>",
            "<p>Each image is one layer; each panel one head. Rows are queries, columns keys; "
            "decoder positions are labelled with the output piece they produce.</p>",
            f"<nav>{contents}</nav>",
            *sections,
            "</body></html>",
            "",
        ]
    )


def _make_dirs(plot_dir: str, subdirectories: list[str]) -> None:
    """Creates plot_dir and its sentence directories, or raises a UserError saying why not."""
    try:
        for subdirectory in subdirectories or [""]:
            os.makedirs(os.path.join(plot_dir, subdirectory), exist_ok=True)
    except OSError as error:
        raise _unwritable(plot_dir, error) from None


def _write(plot_dir: str, name: str, data: bytes) -> str:
    """Writes data to plot_dir/name (name uses "/"); returns the path."""
    path = os.path.join(plot_dir, *name.split("/"))
    try:
        with open(path, "wb") as output:
            output.write(data)
    except OSError as error:
        raise _unwritable(plot_dir, error) from None
    return path


def _unwritable(plot_dir: str, error: OSError) -> UserError:
    return UserError(
        f"cannot write attention plots to {plot_dir}: {error.strerror or error} "
        f"({error.filename or plot_dir}); give a directory that can be created and written "
        "(files there named index.html and sentence_N/*.png are overwritten, others kept)."
    )
