"""Transformer Explorer: python app.py [--host 127.0.0.1] [--port 7860] [--model shakespeare] (--help for all)."""
from explorer.server.launch import main

if __name__ == "__main__":
    main()
