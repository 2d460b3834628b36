"""The error every converter raises for another program's files (nanoGPT, Hugging Face, llama.cpp's GGUF)."""


class ConvertError(ValueError):
    """Files from another program cannot be converted; the message says what is wrong and what to do."""
