"""Sliders moved with the keyboard redraw their view, as a mouse release does.

Gradio's slider sends `release` (what the views listen to: one request per move, not one per pixel dragged) on
pointerup only, so arrow keys changed the value and drew nothing. Here a key that moves a range input sends it a
pointerup when the key comes up: holding a key repeats the move but ends in one keyup, so the server still gets
one request per move. A slider's number box sends its release when left (Gradio's own blur handler); here also
when Enter commits a typed number or the up/down arrows step it: a head typed and entered without leaving the box
left the chart on the previous head."""
import json

import gradio as gr

MOVE_KEYS = ("ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "PageUp", "PageDown", "Home", "End")
BOX_KEYS = ("Enter", "ArrowUp", "ArrowDown")  # keys that commit or step the number in a slider's number box
RELEASE_ON_KEYUP_JS = """() => {
  if (window.teSliderKeys) return [];
  window.teSliderKeys = true;
  const keys = new Set(KEYS), boxKeys = new Set(BOX_KEYS);
  document.addEventListener('keyup', (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement)) return;
    const box = input.type === 'number' && (input.getAttribute('aria-label') || '').startsWith('number input for ');
    if ((input.type === 'range' && keys.has(event.key)) || (box && boxKeys.has(event.key))) {
      input.dispatchEvent(new PointerEvent('pointerup', {bubbles: true}));
    }
  }, true);
  return [];
}""".replace("BOX_KEYS", json.dumps(list(BOX_KEYS))).replace("KEYS", json.dumps(list(MOVE_KEYS)))


def wire_slider_keys(demo: gr.Blocks) -> None:
    demo.load(None, None, None, js=RELEASE_ON_KEYUP_JS)
