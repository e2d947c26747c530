"""The model file (.attn): reader and writer, its rANS entropy coder, safetensors I/O, and the
converter to and from Hugging Face checkpoint folders (format: model_data/README.md)."""
