"""Reads a Hugging Face model directory (config.json + safetensors) with NumPy only.

Part of tern's independent numerical reference (tests/reference). Written from the
safetensors format description, not from tern's C++ loader:

  file   = u64 little-endian N | N bytes of JSON header | data bytes
  header = {"__metadata__": {str: str} (optional),
            name: {"dtype": "BF16", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...}
  data_offsets are relative to the first byte after the header; end - begin must equal
  prod(shape) * itemsize, and tensors are stored row-major (C order), little-endian.

Public API:
  load_config(model_dir) -> (text_config: dict, full_config: dict)
  SafetensorsFile(path): .names(), .info(name), .raw(name), .get_f64(name)
  Checkpoint(model_dir):  same interface over model.safetensors or a sharded set
  decode_f8_e4m3(u8 array) / decode_f8_e5m2(u8 array) -> float64
Errors raise ValueError/FileNotFoundError/KeyError with the file and tensor named.
"""

import json
import os

import numpy as np

# dtype string -> (numpy storage dtype, bytes per element). BF16 and F8 are read as
# unsigned integers and decoded by to_float64().
_STORAGE = {
    "F64": (np.dtype("<f8"), 8),
    "F32": (np.dtype("<f4"), 4),
    "F16": (np.dtype("<f2"), 2),
    "BF16": (np.dtype("<u2"), 2),
    "F8_E4M3": (np.dtype("u1"), 1),
    "F8_E5M2": (np.dtype("u1"), 1),
    "U8": (np.dtype("u1"), 1),
    "I8": (np.dtype("i1"), 1),
    "I16": (np.dtype("<i2"), 2),
    "U16": (np.dtype("<u2"), 2),
    "I32": (np.dtype("<i4"), 4),
    "U32": (np.dtype("<u4"), 4),
    "I64": (np.dtype("<i8"), 8),
    "U64": (np.dtype("<u8"), 8),
    "BOOL": (np.dtype("u1"), 1),
}
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2")

_MAX_HEADER_BYTES = 100 * 1024 * 1024  # the Rust safetensors crate uses the same cap


def _f8_e4m3_table():
    """All 256 FP8 E4M3 (OCP "fn" variant) values: bias 7, no infinities, S.1111.111 = NaN."""
    table = np.empty(256, dtype=np.float64)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        exp = (b >> 3) & 0xF
        mant = b & 0x7
        if exp == 0xF and mant == 0x7:
            table[b] = np.nan
        elif exp == 0:
            table[b] = sign * mant * 2.0 ** -9  # subnormal: mant/8 * 2^(1-7)
        else:
            table[b] = sign * (1.0 + mant / 8.0) * 2.0 ** (exp - 7)
    return table


def _f8_e5m2_table():
    """All 256 FP8 E5M2 values: bias 15, IEEE-like (exp 31: inf when mant == 0, else NaN)."""
    table = np.empty(256, dtype=np.float64)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        exp = (b >> 2) & 0x1F
        mant = b & 0x3
        if exp == 0x1F:
            table[b] = sign * np.inf if mant == 0 else np.nan
        elif exp == 0:
            table[b] = sign * mant * 2.0 ** -16  # subnormal: mant/4 * 2^(1-15)
        else:
            table[b] = sign * (1.0 + mant / 4.0) * 2.0 ** (exp - 15)
    return table


_F8_E4M3 = _f8_e4m3_table()
_F8_E5M2 = _f8_e5m2_table()


def decode_f8_e4m3(codes):
    """codes: uint8 array of any shape -> float64 array of the same shape."""
    return _F8_E4M3[np.asarray(codes, dtype=np.uint8)]


def decode_f8_e5m2(codes):
    """codes: uint8 array of any shape -> float64 array of the same shape."""
    return _F8_E5M2[np.asarray(codes, dtype=np.uint8)]


def decode_bf16(bits):
    """bits: uint16 array (the raw BF16 patterns) -> float32 array (exact: BF16 is the top half)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def to_float64(dtype, raw):
    """Converts a raw array as stored (see _STORAGE) to float64. dtype: safetensors dtype string."""
    if dtype == "BF16":
        return decode_bf16(raw).astype(np.float64)
    if dtype == "F8_E4M3":
        return decode_f8_e4m3(raw)
    if dtype == "F8_E5M2":
        return decode_f8_e5m2(raw)
    return np.asarray(raw).astype(np.float64)


class SafetensorsFile:
    """One .safetensors file, memory-mapped. Validates the whole header on open."""

    def __init__(self, path):
        self.path = path
        size = os.path.getsize(path)
        if size < 8:
            raise ValueError(f"{path}: file of {size} bytes is too short for a safetensors header")
        with open(path, "rb") as f:
            header_len = int.from_bytes(f.read(8), "little")
            if header_len > _MAX_HEADER_BYTES or 8 + header_len > size:
                raise ValueError(f"{path}: header length {header_len} does not fit in a file of {size} bytes")
            header_bytes = f.read(header_len)
        try:
            header = json.loads(header_bytes.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: header is not valid JSON: {e}") from None
        if not isinstance(header, dict):
            raise ValueError(f"{path}: header is not a JSON object")
        self.metadata = header.pop("__metadata__", None) or {}
        self._data_start = 8 + header_len
        data_len = size - self._data_start
        self._tensors = {}
        for name, entry in header.items():
            self._tensors[name] = self._validate(name, entry, data_len)
        self._map = np.memmap(path, dtype=np.uint8, mode="r") if size > self._data_start else None

    def _validate(self, name, entry, data_len):
        where = f"{self.path}: tensor {name!r}"
        if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
            raise ValueError(f"{where}: entry needs dtype, shape and data_offsets")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in _STORAGE:
            raise ValueError(f"{where}: unsupported dtype {dtype!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError(f"{where}: bad shape {shape!r}")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) for o in offsets)):
            raise ValueError(f"{where}: bad data_offsets {offsets!r}")
        begin, end = offsets
        nbytes = int(np.prod(shape, dtype=np.int64)) * _STORAGE[dtype][1]
        if not 0 <= begin <= end <= data_len:
            raise ValueError(f"{where}: data_offsets {offsets} outside the {data_len} data bytes")
        if end - begin != nbytes:
            raise ValueError(f"{where}: {end - begin} bytes stored, {dtype}{shape} needs {nbytes}")
        return {"dtype": dtype, "shape": tuple(shape), "begin": begin, "end": end}

    def names(self):
        return list(self._tensors)

    def __contains__(self, name):
        return name in self._tensors

    def info(self, name):
        """-> {"dtype": str, "shape": tuple, "begin": int, "end": int}"""
        if name not in self._tensors:
            raise KeyError(f"{self.path}: no tensor {name!r}")
        return self._tensors[name]

    def raw(self, name):
        """The stored array (read-only view), in its storage dtype (BF16 -> uint16, F8 -> uint8)."""
        t = self.info(name)
        storage = _STORAGE[t["dtype"]][0]
        if t["end"] == t["begin"]:
            return np.zeros(t["shape"], dtype=storage)
        start = self._data_start + t["begin"]
        buf = self._map[start:self._data_start + t["end"]]
        return buf.view(storage).reshape(t["shape"])

    def get_f64(self, name):
        """Float tensors -> float64 copy. Integer tensors -> float64 too (exact below 2^53)."""
        return to_float64(self.info(name)["dtype"], self.raw(name))


def load_config(model_dir):
    """Reads config.json. Returns (text_config, full_config).

    For a VLM wrapper (the text model's fields under "text_config") the text config is that
    dict, with the top-level "tie_word_embeddings" carried in when the text config lacks it
    (HF composite models keep the tie flag at the top level). Otherwise both are the same dict.
    """
    path = os.path.join(model_dir, "config.json")
    with open(path, "r", encoding="utf-8") as f:
        full = json.load(f)
    if not isinstance(full, dict):
        raise ValueError(f"{path}: not a JSON object")
    if isinstance(full.get("text_config"), dict):
        text = dict(full["text_config"])
        if "tie_word_embeddings" not in text and "tie_word_embeddings" in full:
            text["tie_word_embeddings"] = full["tie_word_embeddings"]
        if "model_type" not in text and "model_type" in full:
            text["model_type"] = full["model_type"]
        return text, full
    return full, full


class Checkpoint:
    """All tensors of a model directory: model.safetensors, or the shards listed by
    model.safetensors.index.json ("weight_map": {tensor name: shard file name}), or, when
    neither exists, every *.safetensors file in the directory."""

    def __init__(self, model_dir):
        self.model_dir = model_dir
        self._files = {}   # file name -> SafetensorsFile
        self._where = {}   # tensor name -> file name
        index_path = os.path.join(model_dir, "model.safetensors.index.json")
        single_path = os.path.join(model_dir, "model.safetensors")
        if os.path.exists(index_path):
            with open(index_path, "r", encoding="utf-8") as f:
                index = json.load(f)
            weight_map = index.get("weight_map") if isinstance(index, dict) else None
            if not isinstance(weight_map, dict):
                raise ValueError(f"{index_path}: no weight_map object")
            for fname in sorted(set(weight_map.values())):
                self._open(fname)
            for name, fname in weight_map.items():
                if name not in self._files[fname]:
                    raise ValueError(f"{index_path}: {name!r} is mapped to {fname}, which lacks it")
                self._where[name] = fname
        elif os.path.exists(single_path):
            self._add_all("model.safetensors")
        else:
            shards = sorted(f for f in os.listdir(model_dir) if f.endswith(".safetensors"))
            if not shards:
                raise FileNotFoundError(f"{model_dir}: no model.safetensors, index or *.safetensors")
            for fname in shards:
                self._add_all(fname)

    def _open(self, fname):
        if os.path.basename(fname) != fname:
            raise ValueError(f"{self.model_dir}: shard name {fname!r} is not a plain file name")
        if fname not in self._files:
            self._files[fname] = SafetensorsFile(os.path.join(self.model_dir, fname))
        return self._files[fname]

    def _add_all(self, fname):
        st = self._open(fname)
        for name in st.names():
            if name in self._where:
                raise ValueError(f"{self.model_dir}: tensor {name!r} in both {self._where[name]} and {fname}")
            self._where[name] = fname

    def names(self):
        return list(self._where)

    def __contains__(self, name):
        return name in self._where

    def _file(self, name):
        if name not in self._where:
            raise KeyError(f"{self.model_dir}: checkpoint has no tensor {name!r}")
        return self._files[self._where[name]]

    def info(self, name):
        return self._file(name).info(name)

    def raw(self, name):
        return self._file(name).raw(name)

    def get_f64(self, name):
        return self._file(name).get_f64(name)
