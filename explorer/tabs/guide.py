"""Guide tab: the guide's text (explorer.teaching.guide)."""
import gradio as gr

from explorer.teaching.guide import GUIDE


def build_guide_tab():
    gr.Markdown(GUIDE)
