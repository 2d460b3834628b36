"""Serving the app: launch, Gradio start-up and session plumbing, HTTP guards."""
