"""What the teacher pushes reaches the student's page as a notice that stays in view at the bottom of the window
while they scroll: the teacher's words and a "Go there" button (a lesson step, a view, a class run), or "Dismiss".
Nothing moves until the student presses it, so nobody is pulled away mid-edit. Pushes that arrive while one is
unread wait their turn ("2 more after this one"), oldest first; none replaces another unread. A push that would
open a shipped model in place of the student's own asks first (explorer.callbacks.classroom.apply_push).

The page asks `/class/latest` every POLL_SECONDS (explorer.server.class_routes: a plain HTTP request the server
answers in microseconds, not a Gradio event: thirty pages polling cost the class nothing). "Go there" sends the
push's id to apply_push, whose outputs are the lesson player's and a question (empty unless it asks). A class run
then starts through Start's own callback, with the controls the push has just set (start_class_run)."""
import gradio as gr

from explorer.tabs.binding import bind, outputs_of
from explorer.tabs.lazy import callbacks
from explorer.tabs.lesson_player import LessonPlayer, player_fields, redrawn
from explorer.tabs.train import START_NAMES, START_QUEUE, TrainStart

apply_push, name_of, start_class_run = callbacks("classroom", "apply_push", "name_of", "start_class_run")

POLL_SECONDS = 3
NOTICE_ID = "te-class-notice"
# Shown and hidden by classes on <body> (Gradio 6 repeats a group's elem_id on an inner element, so the page never
# looks the notice up by id to change it). Fixed at the bottom of the window: in view however far the page scrolls
# (sticky would stick only within its own small wrapper).
CSS = f"""
#{NOTICE_ID} {{ border: 2px solid var(--color-accent); border-radius: 8px; padding: 8px 12px; }}
#{NOTICE_ID}:not(#{NOTICE_ID} #{NOTICE_ID}) {{ position: fixed; bottom: 16px; left: 50%; transform: translateX(-50%);
  width: min(860px, calc(100vw - 32px)); z-index: 1000; background: var(--background-fill-primary);
  box-shadow: 0 6px 24px rgba(0, 0, 0, 0.3); }}
#{NOTICE_ID} #{NOTICE_ID} {{ border: none; padding: 0; box-shadow: none; }}
body:not(.te-class-open) #{NOTICE_ID}, body.te-class-message #te-class-go {{ display: none !important; }}
body.te-class-asking #te-class-go, body:not(.te-class-asking) .te-class-ask {{ display: none !important; }}
body.te-class-asking #te-class-dismiss {{ display: none !important; }}
body.te-class-open .gradio-container {{ padding-bottom: 160px; }}  /* the page's end can scroll above the notice */
#te-class-text {{ font-size: 1.05rem; }}
#te-class-link {{ position: fixed; bottom: 8px; right: 8px; max-width: 440px; z-index: 999; padding: 6px 10px;
  background: #fff3bf; border: 1px solid #f59f00; border-radius: 6px; font-size: 0.9rem; color: #5c3c00; }}
#te-class-more {{ font-size: 0.9rem; color: var(--body-text-color-subdued); }}
"""
# Runs once per page: polls, queues the pushes this browser has not handled (dismissed or followed), oldest first,
# and shows the first of them. localStorage keeps the epoch and id of the last one handled: pushes come in order,
# so every later id is unread. A page new to this server run (no mark for its epoch) starts at the newest push, or
# marks the run's start when nothing was sent yet.
POLL_JS = """() => {
  if (window.teClassPolling) return [];
  window.teClassPolling = true;
  const SEEN = 'te-class-seen';
  window.teClassQueue = [];
  const handled = (epoch) => {
    const [mark, id] = (localStorage.getItem(SEEN) || '').split(':');
    return mark === epoch ? Number(id) : null;
  };
  window.teClassShow = () => {
    const queue = window.teClassQueue, push = queue[0], text = document.getElementById('te-class-text');
    const more = document.getElementById('te-class-more');
    if (more) more.textContent = queue.length > 1 ? `${queue.length - 1} more from your teacher after this one` : '';
    if (!push || !text) { document.body.classList.remove('te-class-open'); window.teClassPush = null; return; }
    const open = document.body.classList.contains('te-class-open');
    if (push === window.teClassPush && open) return;  // on show already (perhaps asking): only the count changed
    window.teClassPush = push;
    text.textContent = push.text;
    document.body.classList.remove('te-class-asking');
    document.body.classList.toggle('te-class-message', push.kind === 'message');
    document.body.classList.add('te-class-open');
  };
  window.teClassLink = (text) => {  // a hub student's server that cannot reach the class's service says so
    let line = document.getElementById('te-class-link');
    if (text && !line) { line = document.createElement('div'); line.id = 'te-class-link'; document.body.appendChild(line); }
    if (line) { line.textContent = text; line.hidden = !text; }
  };
  const poll = async () => {
    try {
      const reply = await fetch('class/latest', {cache: 'no-store'});  // relative: under a hub's path too
      const body = reply.ok ? await reply.json() : {};
      window.teClassLink(body.link || '');
      const pushes = body.pushes || (body.push ? [body.push] : []);
      if (!pushes.length && body.epoch && handled(body.epoch) === null) {
        localStorage.setItem(SEEN, body.epoch + ':0');  // nothing sent yet: every push from now on is unread
      }
      if (pushes.length) {
        const last = handled(body.epoch), queue = window.teClassQueue;
        const known = new Set(queue.map((p) => p.epoch + ':' + p.id));
        const fresh = pushes.filter((p) => (last === null ? p.id === pushes[pushes.length - 1].id : p.id > last)
                                          && !known.has(p.epoch + ':' + p.id));
        window.teClassQueue = queue.filter((p) => p.epoch === body.epoch).concat(fresh);  // a restart drops the old
        if (fresh.length || queue.length !== window.teClassQueue.length) window.teClassShow();
      }
    } catch (e) { /* the server restarts or the network drops: try again later */ }
    setTimeout(poll, POLL_MS);
  };
  poll();
  return [];
}""".replace("POLL_MS", str(POLL_SECONDS * 1000))
# The push on show, as the inputs of "Go there" (the student has not agreed to lose a model) and of "Open it anyway".
PUSH_ID_JS = "(x, y) => [window.teClassPush ? String(window.teClassPush.id) : '', false]"
REPLACE_JS = "(x, y) => [window.teClassPush ? String(window.teClassPush.id) : '', true]"
# This push counts as handled; the next one waiting shows, or the notice closes.
CLOSE_JS = """() => {
  const push = window.teClassPush;
  if (push) {
    localStorage.setItem('te-class-seen', push.epoch + ':' + push.id);
    window.teClassQueue = (window.teClassQueue || []).filter((p) => p !== push);
  }
  if (window.teClassShow) window.teClassShow(); else document.body.classList.remove('te-class-open');
  return [];
}"""
# After "Go there": a question keeps the notice open with it; otherwise the push is done. -> start_class_run's
# inputs: whether a class run starts now, then the question and Start's controls as they are.
AFTER_GO_JS = """(starts, question, ...controls) => {
  const push = window.teClassPush;
  if (question) {
    document.getElementById('te-class-text').textContent = question;
    document.body.classList.add('te-class-asking');
    return [false, question, ...controls];
  }
  (CLOSE)();
  return [Boolean(push && push.kind === 'run'), question, ...controls];
}""".replace("CLOSE", CLOSE_JS)


def build_class_notice():
    """-> (Go there, Dismiss, Open it anyway, Keep my model, hidden push id, hidden consent, hidden question)."""
    with gr.Group(elem_id=NOTICE_ID):
        gr.HTML("<div id='te-class-text'></div><div id='te-class-more'></div>", padding=False)
        with gr.Row():
            go = gr.Button("Go there", variant="primary", size="sm", elem_id="te-class-go", scale=0, min_width=140)
            dismiss = gr.Button("Dismiss", size="sm", elem_id="te-class-dismiss", scale=0, min_width=120)
            replace = gr.Button("Open it anyway (replaces my model)", variant="stop", size="sm",
                                elem_classes=["te-class-ask"], scale=0, min_width=260)
            keep = gr.Button("Keep my model", variant="primary", size="sm", elem_classes=["te-class-ask"], scale=0,
                             min_width=160)
    push_id = gr.Textbox(visible="hidden")
    consent = gr.Checkbox(False, visible="hidden")
    question = gr.Textbox(visible="hidden")
    return go, dismiss, replace, keep, push_id, consent, question


def wire_class_notice(demo: gr.Blocks, notice, player: LessonPlayer, model_info, loaded,
                      train_start: TrainStart) -> None:
    go, dismiss, replace, keep, push_id, consent, question = notice
    quiet = dict(api_visibility="private", concurrency_limit=None)
    demo.load(None, None, None, js=POLL_JS)
    loaded.then(bind(name_of), None, player.name, **quiet)  # a reload shows the name the session kept
    for button in (dismiss, keep):
        button.click(None, None, None, js=CLOSE_JS)
    fields = {**player_fields(player, model_info), "ask": question}
    pushed = bind(_applied_push, fields=fields)
    events = [go.click(pushed, [push_id, consent], outputs_of(fields), js=PUSH_ID_JS, **quiet),
              replace.click(pushed, [push_id, consent], outputs_of(fields), js=REPLACE_JS, **quiet)]
    for event in events:  # after apply_push's outputs have set the controls: no race with them
        train_start.show_refusal(event.then(bind(start_class_run, names=("starts", "question", *START_NAMES)),
                                            [consent, question, *train_start.inputs], train_start.outputs,
                                            js=AFTER_GO_JS, api_visibility="private", **START_QUEUE))


def _applied_push(session, push_id: str, replace_model: bool) -> dict:
    """apply_push, the selected tab drawn again on what it applied (a lesson step or a link's settings)."""
    shown = apply_push(session, push_id, replace_model)
    return redrawn(session, shown, applied=bool(shown.get("state") or "controls" in shown))
