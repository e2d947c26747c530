"""Minimal reader and writer of the safetensors format, with numpy alone.

The `safetensors` package is not installable on the build machines (no PyPI, and Debian does not
package it; docs/ARCHITECTURE.md, "Machine facts"), and the format is small: an 8-byte
little-endian header length N, N bytes of JSON header, then the raw tensor bytes. The header
maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to
the end of the header) and may hold a "__metadata__" map of strings.
"""

import json
import struct

import numpy as np

METADATA_KEY = "__metadata__"

# safetensors dtype names -> numpy dtypes (little-endian). BF16 has no numpy twin and is read
# by widening to float32.
_NUMPY_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
_SAFETENSORS_DTYPES = {np.dtype(v).str: k for k, v in _NUMPY_DTYPES.items()}


class SafetensorsError(ValueError):
    pass


def load(path):
    """Returns (tensors: dict name -> numpy array, metadata: dict) from a .safetensors file."""
    with open(path, "rb") as f:
        buf = f.read()
    return loads(buf, source=str(path))


def loads(buf, source="<bytes>"):
    if len(buf) < 8:
        raise SafetensorsError(f"{source}: {len(buf)} bytes, too short for a safetensors file")
    (header_len,) = struct.unpack_from("<Q", buf, 0)
    if 8 + header_len > len(buf):
        raise SafetensorsError(
            f"{source}: header length {header_len} runs past the end of the file "
            f"({len(buf)} bytes); the file is truncated or not safetensors")
    try:
        header = json.loads(buf[8:8 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{source}: header is not UTF-8 JSON ({e})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{source}: header is not a JSON object")
    data = memoryview(buf)[8 + header_len:]
    metadata = header.pop(METADATA_KEY, {}) or {}
    tensors = {}
    for name, info in header.items():
        dtype = info.get("dtype")
        shape = tuple(int(s) for s in info.get("shape", ()))
        begin, end = (int(x) for x in info.get("data_offsets", (0, -1)))
        if not 0 <= begin <= end <= len(data):
            raise SafetensorsError(
                f"{source}: tensor {name!r} data_offsets [{begin}, {end}) lie outside the "
                f"{len(data)} data bytes")
        raw = data[begin:end]
        if dtype == "BF16":
            halves = np.frombuffer(raw, dtype="<u2")
            array = (halves.astype(np.uint32) << 16).view(np.float32)
        elif dtype in _NUMPY_DTYPES:
            array = np.frombuffer(raw, dtype=_NUMPY_DTYPES[dtype])
        else:
            raise SafetensorsError(f"{source}: tensor {name!r} has unsupported dtype {dtype!r}")
        count = int(np.prod(shape)) if shape else 1
        if array.size != count:
            raise SafetensorsError(
                f"{source}: tensor {name!r} has {array.size} elements, shape {list(shape)} "
                f"needs {count}")
        tensors[name] = array.reshape(shape).copy()
    return tensors, metadata


def dumps(tensors, metadata=None):
    """Serialises an ordered dict name -> numpy array; tensors are stored in the given order."""
    header = {}
    if metadata:
        header[METADATA_KEY] = {str(k): str(v) for k, v in metadata.items()}
    chunks = []
    offset = 0
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        little = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        array = array.astype(little, copy=False)
        key = np.dtype(little).str
        if key not in _SAFETENSORS_DTYPES:
            raise SafetensorsError(f"tensor {name!r}: dtype {array.dtype} cannot be stored")
        raw = array.tobytes()
        header[name] = {"dtype": _SAFETENSORS_DTYPES[key], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # The reference writer pads the header with spaces so the data starts 8-byte aligned.
    header_bytes += b" " * (-len(header_bytes) % 8)
    return struct.pack("<Q", len(header_bytes)) + header_bytes + b"".join(chunks)


def save(path, tensors, metadata=None):
    with open(path, "wb") as f:
        f.write(dumps(tensors, metadata))
