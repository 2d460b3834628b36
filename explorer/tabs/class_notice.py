"""What the teacher pushes reaches the student's page as a notice above the tabs: the teacher's words and a
"Go there" button (a lesson step, a view, a class run), or "Dismiss". Nothing moves until the student presses
it, so nobody is pulled away mid-edit.

The page asks `/class/latest` every POLL_SECONDS (explorer.server.class_routes: a plain HTTP request the server
answers in microseconds, not a Gradio event: thirty pages polling cost the class nothing). "Go there" sends the
push's id to apply_push, whose outputs are the lesson player's."""
import gradio as gr

from explorer.tabs.binding import bind
from explorer.tabs.lazy import callbacks
from explorer.tabs.lesson_player import LessonPlayer, player_outputs, redraw_after

apply_push, name_of = callbacks("classroom", "apply_push", "name_of")

POLL_SECONDS = 3
NOTICE_ID = "te-class-notice"
# Shown and hidden by classes on <body> (Gradio 6 repeats a group's elem_id on an inner element, so the page never
# looks the notice up by id to change it).
CSS = f"""
#{NOTICE_ID} {{ border: 2px solid var(--color-accent); border-radius: 8px; padding: 8px 12px; }}
body:not(.te-class-open) #{NOTICE_ID}, body.te-class-message #te-class-go {{ display: none !important; }}
#te-class-text {{ font-size: 1.05rem; }}
"""
# Runs once per page: polls, and shows the newest push this browser has not dismissed or followed.
POLL_JS = """() => {
  if (window.teClassPolling) return [];
  window.teClassPolling = true;
  const SEEN = 'te-class-seen';
  const show = (push) => {
    const text = document.getElementById('te-class-text');
    if (!text) return;
    window.teClassPush = push;
    text.textContent = push.text;
    document.body.classList.toggle('te-class-message', push.kind === 'message');
    document.body.classList.add('te-class-open');
  };
  const poll = async () => {
    try {
      const reply = await fetch('/class/latest', {cache: 'no-store'});
      const push = reply.ok ? (await reply.json()).push : null;
      const uid = push ? push.epoch + ':' + push.id : null;
      const shown = window.teClassPush ? window.teClassPush.epoch + ':' + window.teClassPush.id : null;
      if (uid && uid !== shown && localStorage.getItem(SEEN) !== uid) show(push);
    } catch (e) { /* the server restarts or the network drops: try again later */ }
    setTimeout(poll, POLL_MS);
  };
  poll();
  return [];
}""".replace("POLL_MS", str(POLL_SECONDS * 1000))
# The push on show, as the input of "Go there"; then the notice closes and this push counts as seen.
PUSH_ID_JS = "(x) => [window.teClassPush ? String(window.teClassPush.id) : '']"
CLOSE_JS = """() => {
  const push = window.teClassPush;
  if (push) localStorage.setItem('te-class-seen', push.epoch + ':' + push.id);
  document.body.classList.remove('te-class-open');
  return [];
}"""
START_RUN_JS = """() => {
  const push = window.teClassPush;
  if (push && push.kind === 'run') setTimeout(() => document.getElementById('te-train-start')?.click(), 300);
  return [];
}"""


def build_class_notice():
    """-> (Go there button, Dismiss button, hidden box carrying the push id)."""
    with gr.Group(elem_id=NOTICE_ID):
        gr.HTML("<div id='te-class-text'></div>", padding=False)
        with gr.Row():
            go = gr.Button("Go there", variant="primary", size="sm", elem_id="te-class-go", scale=0, min_width=140)
            dismiss = gr.Button("Dismiss", size="sm", scale=0, min_width=120)
    push_id = gr.Textbox(visible="hidden")
    return go, dismiss, push_id


def wire_class_notice(demo: gr.Blocks, notice, player: LessonPlayer, model_info, loaded, views: dict) -> None:
    go, dismiss, push_id = notice
    quiet = dict(api_visibility="private", concurrency_limit=None)
    demo.load(None, None, None, js=POLL_JS)
    loaded.then(bind(name_of), None, player.name, **quiet)  # a reload shows the name the session kept
    dismiss.click(None, None, None, js=CLOSE_JS)
    applied = go.click(bind(apply_push), push_id, player_outputs(player, model_info), js=PUSH_ID_JS, **quiet)
    applied.then(None, None, None, js=CLOSE_JS).then(None, None, None, js=START_RUN_JS)
    redraw_after([applied], player, views, always=True)
