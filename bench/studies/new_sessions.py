"""python -m bench.studies.new_sessions: what a new browser session costs the server, Gradio's eager per-session
block configuration against explorer.server.gradio_sessions' lazy one, side by side on the real app's Blocks.

Every request of a new session waits for this (it holds the server's GIL), so a class arriving at once
pays it thirty times over before anyone's first chart."""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import gradio.state_holder as state_holder  # noqa: E402

from bench.timing import interleaved_seconds, print_table  # noqa: E402
from explorer.server.gradio_sessions import LazySessionState  # noqa: E402
from explorer.ui import build_app  # noqa: E402


def main() -> None:
    eager = state_holder.SessionState if state_holder.SessionState is not LazySessionState else None
    eager = eager or LazySessionState.__mro__[1]
    demo = build_app()
    seconds = interleaved_seconds({"gradio (eager)": lambda: eager(demo), "lazy": lambda: LazySessionState(demo)},
                                  rounds=5, repeats=4, warmup=1)
    rows = [[name, f"{1000 * s:.2f}"] for name, s in seconds.items()]
    print_table(f"New session state, app with {len(demo.blocks)} blocks", ["session state", "ms"], rows)
    print(f"\nlazy is {seconds['gradio (eager)'] / seconds['lazy']:,.0f}x cheaper; a class of 30 arriving at once: "
          f"{30 * seconds['gradio (eager)']:.1f} s of server time before, {30 * seconds['lazy'] * 1000:.1f} ms now")


if __name__ == "__main__":
    main()
