"""Benchmark tools: the ONNX export that bench_ort.mjs runs with ONNX Runtime Web."""
