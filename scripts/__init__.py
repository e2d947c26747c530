"""The project's Python tools, one package with a subpackage per concern (scripts/README.md).

Run a tool as a module from the repository root, for example
    /usr/bin/python3 -m scripts.model.convert_model to-attn HF_DIR model_data/NAME.attn
(/usr/bin/python3 is Debian's interpreter, the one with numpy and torch; docs/ARCHITECTURE.md).
"""
