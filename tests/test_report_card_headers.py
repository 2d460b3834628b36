"""The heads report card's column headers wrap only between words at a 1400 px window (a student read "inductio/n")."""
from explorer.common.controls import REPORT_HEADERS
from explorer.tabs.heads import REPORT_CARD_ID, REPORT_WIDTHS
from explorer.ui import CSS

# measured in Chromium at a 1400 px window (Gradio 6.31, soft theme): the table is 1,216 px wide, its font is 14 px
# monospace (8.4 px a character) and a header cell has 8 px of padding each side
TABLE_PX, CHAR_PX, PADDING_PX = 1216, 8.4, 16


def test_every_header_word_fits_its_column_at_1400_px():
    assert len(REPORT_WIDTHS) == len(REPORT_HEADERS)
    assert sum(float(w.rstrip("%")) for w in REPORT_WIDTHS) <= 100
    for header, width in zip(REPORT_HEADERS, REPORT_WIDTHS):
        word = max(header.split(), key=len)
        column = float(width.rstrip("%")) / 100 * TABLE_PX
        assert column >= len(word) * CHAR_PX + PADDING_PX, f"{header!r}: {word!r} needs more than {column:.0f} px"


def test_the_page_css_lets_report_card_headers_break_only_between_words():
    rule = next(line for line in CSS.splitlines() if line.startswith(f"#{REPORT_CARD_ID} thead span"))
    assert "word-break: normal" in rule and "overflow-wrap: normal" in rule
