"""Transformer Explorer: python app.py [--host 127.0.0.1] [--port 7860] [--model shakespeare]."""
import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Train a tiny GPT and look inside it, in the browser.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: localhost only)")
    p.add_argument("--port", type=int, default=7860, help="port to serve on")
    p.add_argument("--model", default="shakespeare", help="shipped model every new session opens on")
    p.add_argument("--max-params", type=int, default=5_000_000, help="largest model a user may train")
    p.add_argument("--max-steps", type=int, default=20_000, help="longest training run, in steps")
    p.add_argument("--max-upload-mb", type=float, default=20.0, help="largest text or checkpoint upload")
    p.add_argument("--max-trainers", type=int, default=2, help="training runs at once on this server")
    p.add_argument("--max-sessions", type=int, default=64, help="browser sessions kept in memory")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    from explorer import app_state
    from explorer.limits import LIMITS
    from explorer.shipped import load_shipped

    for name in ("max_params", "max_steps", "max_upload_mb", "max_trainers", "max_sessions"):
        setattr(LIMITS, name, getattr(args, name))
    load_shipped(args.model)  # fail now, with a clear message, if the model does not exist
    app_state.default_model = args.model
    from explorer.ui import CSS, build_app

    demo = build_app()
    demo.queue(default_concurrency_limit=2, max_size=64)
    demo.launch(server_name=args.host, server_port=args.port, css=CSS, theme="soft", enable_monitoring=False,
                max_file_size=f"{args.max_upload_mb:g}mb", state_session_capacity=args.max_sessions,
                show_error=True, footer_links=["api"])


if __name__ == "__main__":
    main()
