#!/usr/bin/env python3
"""Writes the seed corpus of dlpack_import_fuzzer (tests/fuzz/corpus/): one file per case of
issue 45's hostile producers, and valid tensors of each element type and layout the target
imports. The fuzzer reads these fields in this order, little-endian (past the end: zeros):

  u8 type (element type, mod 8: float, double, int32, uint8, const float, complex<double>, int16,
  const int64), u8 flags (FLAGS below), u32 version major, u32 minor (used with raw_version),
  u8 code, u8 bits, u16 lanes (used with raw_dtype), i32 device_type, i32 device_id,
  u8 data_mode (mod 3: 0 null, 1 arena + data_offset, 2 raw_pointer), u16 data_offset (mod 257),
  u64 raw_pointer, u64 byte_offset, i32 ndim, u8 count (entries given when ndim is outside
  0..80, mod 4), then the shape's entries and the strides' entries (i64 each).

  python3 tests/fuzz/make_corpus.py [DIR]     (default: tests/fuzz/corpus beside this script)
  python3 tests/fuzz/make_corpus.py --show FILE...   the fields of inputs (a crash's, say)
"""
import os
import struct
import sys

FLAGS = {"legacy": 1, "throwing": 2, "null_shape": 4, "null_strides": 8, "read_only": 16,
         "raw_dtype": 32, "raw_version": 64, "null_deleter": 128}
TYPES = ("float", "double", "int32", "uint8", "const float", "complex<double>", "int16",
         "const int64")
HEAD = "<BBIIBBHiiBHQQiB"
KDLCPU, KDLCUDA, KDLCUDAHOST, KDLCUDAMANAGED = 1, 2, 3, 13


def tensor(type="float", flags=(), version=(1, 1), dtype=(0, 0, 0), device=(KDLCPU, 0),
           data="arena", data_offset=0, raw_pointer=0, byte_offset=0, ndim=None, given=None,
           shape=(), strides=None):
    """One input; ndim defaults to len(shape), strides to as many zeros (with null_strides)."""
    ndim = len(shape) if ndim is None else ndim
    strides = [0] * len(shape) if strides is None else list(strides)
    assert len(strides) == len(shape)
    mode = {"null": 0, "arena": 1, "raw": 2}[data]
    count = len(shape) if given is None else given
    head = struct.pack(HEAD, TYPES.index(type), sum(FLAGS[f] for f in flags), version[0],
                       version[1], dtype[0], dtype[1], dtype[2], device[0], device[1], mode,
                       data_offset, raw_pointer, byte_offset, ndim, count)
    return head + struct.pack("<%dq" % (2 * len(shape)), *shape, *strides)


CASES = {
    # issue 45's hostile producers, each a crash or a wrong import before the fix
    "ndim-2pow30-one-extent": tensor(ndim=1 << 30, given=1, shape=[1], strides=[1]),
    "shape-2pow62-float": tensor(flags=["null_strides"], shape=[1 << 62]),
    "strides-2pow62-minus-2pow62": tensor(shape=[2, 2], strides=[1 << 62, -(1 << 62)]),
    "byte-offset-2pow63": tensor(flags=["null_strides"], byte_offset=1 << 63, shape=[1]),
    "null-data-16-elements": tensor(data="null", flags=["null_strides"], shape=[16]),
    "null-data-offset-64": tensor(data="null", flags=["null_strides"], byte_offset=64,
                                  shape=[16]),
    "device-id-999": tensor(device=(KDLCUDA, 999), flags=["null_strides"], shape=[4]),
    "managed-device-id-999": tensor(device=(KDLCUDAMANAGED, 999), flags=["null_strides"],
                                    shape=[4]),
    "throwing-deleter": tensor(flags=["throwing", "null_strides"], shape=[4]),
    "throwing-deleter-refused": tensor(type="double", flags=["throwing", "raw_dtype"],
                                       dtype=(2, 32, 1), shape=[4], strides=[1]),
    "wraps-top-of-address-space": tensor(data="raw", raw_pointer=(1 << 64) - 16,
                                         flags=["null_strides"], shape=[8]),
    "wraps-below-zero": tensor(data="raw", raw_pointer=16, shape=[8], strides=[-1]),
    "reaches-address-zero": tensor(data="raw", raw_pointer=16, shape=[5], strides=[-1]),
    # valid tensors over the arena: every element is read
    "float-2x3-compact": tensor(flags=["null_strides"], shape=[2, 3]),
    "float-3x4-column-major": tensor(shape=[3, 4], strides=[1, 3]),
    "float-reversed": tensor(byte_offset=12, shape=[4], strides=[-1]),
    "float-broadcast-2pow40": tensor(shape=[1 << 40], strides=[0]),
    "double-legacy-2x2": tensor(type="double", flags=["legacy"], shape=[2, 2], strides=[2, 1]),
    "int32-every-other": tensor(type="int32", shape=[3, 2], strides=[4, 2]),
    "uint8-odd-offset": tensor(type="uint8", data_offset=3, flags=["null_strides"], shape=[5]),
    "const-float-read-only": tensor(type="const float", flags=["read_only", "null_strides"],
                                    shape=[6]),
    "float-read-only-refused": tensor(flags=["read_only", "null_strides"], shape=[6]),
    "complex-double-scalar": tensor(type="complex<double>", ndim=0),
    "int16-empty-huge": tensor(type="int16", shape=[0, 1 << 62], strides=[1 << 62, 1]),
    "const-int64-pinned-any-id": tensor(type="const int64", device=(KDLCUDAHOST, 7),
                                        flags=["null_strides"], shape=[4]),
    "version-2-refused": tensor(flags=["raw_version"], version=(2, 0), ndim=-7),
    "no-deleter": tensor(flags=["null_deleter", "null_strides"], shape=[3]),
}


def show(blob):
    """The fields of one input, as the fuzzer reads them."""
    blob = blob + bytes(max(0, struct.calcsize(HEAD) - len(blob)))
    f = struct.unpack_from(HEAD, blob)
    names = ("type", "flags", "major", "minor", "code", "bits", "lanes", "device_type",
             "device_id", "data_mode", "data_offset", "raw_pointer", "byte_offset", "ndim",
             "count")
    d = dict(zip(names, f))
    d["type"] = TYPES[d["type"] % 8]
    d["flags"] = [k for k, v in FLAGS.items() if d["flags"] & v]
    d["data_mode"] = ("null", "arena", "raw")[d["data_mode"] % 3]
    given = d["ndim"] if 0 <= d["ndim"] <= 80 else d["count"] % 4
    rest = blob[struct.calcsize(HEAD):]
    rest = rest + bytes(max(0, 16 * given - len(rest)))
    vals = struct.unpack_from("<%dq" % (2 * given), rest)
    d["shape"], d["strides"] = list(vals[:given]), list(vals[given:])
    return d


def main(argv):
    if argv[1:2] == ["--show"]:
        for path in argv[2:]:
            with open(path, "rb") as f:
                print(path, show(f.read()))
        return 0
    out = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, blob in CASES.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)
    print("make_corpus: %d inputs in %s" % (len(CASES), out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
