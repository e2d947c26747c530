"""The generator of the tokenizer's Unicode tables (wasm/core/unicode_tables.{h,cc})."""
