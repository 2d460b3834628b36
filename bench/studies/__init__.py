"""One-off studies: comparisons run once to make a decision (bf16 or fp32, which preset shape, this tree against
a git revision, Gradio's session state against ours). They print what they found and judge no target; the
regression benchmarks are listed by python -m bench."""
