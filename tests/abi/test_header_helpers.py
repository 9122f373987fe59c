"""The four inline string helpers of the headers (get_type_string, get_qnt_type_string,
get_format_string in rknn_api.h; get_matmul_type_string in rknn_matmul_api.h): a C program
calls each one for every enum value (and values past the enum) and prints what it returns;
the names are the ones the vendor's headers return, "UNKNOW" (sic) for anything else.
The same program is compiled as C and as C++ (both kinds of client include the headers)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from helpers import INCLUDE, compile_c

TYPE_NAMES = {
    "RKNN_TENSOR_FLOAT32": "FP32", "RKNN_TENSOR_FLOAT16": "FP16", "RKNN_TENSOR_INT8": "INT8",
    "RKNN_TENSOR_UINT8": "UINT8", "RKNN_TENSOR_INT16": "INT16", "RKNN_TENSOR_UINT16": "UINT16",
    "RKNN_TENSOR_INT32": "INT32", "RKNN_TENSOR_UINT32": "UINT32", "RKNN_TENSOR_INT64": "INT64",
    "RKNN_TENSOR_BOOL": "BOOL", "RKNN_TENSOR_INT4": "INT4", "RKNN_TENSOR_BFLOAT16": "BF16",
    "RKNN_TENSOR_TYPE_MAX": "UNKNOW",
}
QNT_NAMES = {
    "RKNN_TENSOR_QNT_NONE": "NONE", "RKNN_TENSOR_QNT_DFP": "DFP",
    "RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC": "AFFINE", "RKNN_TENSOR_QNT_MAX": "UNKNOW",
}
FORMAT_NAMES = {
    "RKNN_TENSOR_NCHW": "NCHW", "RKNN_TENSOR_NHWC": "NHWC", "RKNN_TENSOR_NC1HWC2": "NC1HWC2",
    "RKNN_TENSOR_UNDEFINED": "UNDEFINED", "RKNN_TENSOR_FORMAT_MAX": "UNKNOW",
}
MATMUL_NAMED = [
    "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32", "RKNN_INT8_MM_INT8_TO_INT32",
    "RKNN_INT8_MM_INT8_TO_INT8", "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16",
    "RKNN_FLOAT16_MM_INT8_TO_FLOAT32", "RKNN_FLOAT16_MM_INT8_TO_FLOAT16",
    "RKNN_FLOAT16_MM_INT4_TO_FLOAT32", "RKNN_FLOAT16_MM_INT4_TO_FLOAT16",
    "RKNN_INT8_MM_INT8_TO_FLOAT32", "RKNN_INT4_MM_INT4_TO_INT16", "RKNN_INT8_MM_INT4_TO_INT32",
    "RKNN_FLOAT16_MM_INT4_TO_BFLOAT16",
]
#: every matmul type returns its own enumerator name, except 15, which the vendor's
#: 2.x header leaves out of its switch
MATMUL_NAMES = {n: n for n in MATMUL_NAMED}
MATMUL_NAMES["RKNN_INT8_MM_INT4_TO_FLOAT16"] = "UNKNOW"

#: raw values outside every enum
RAW = {"get_type_string": [-1, 12, 99], "get_qnt_type_string": [-1, 3, 7],
       "get_format_string": [-1, 4, 9], "get_matmul_type_string": [0, 13, 14, 16, 99]}
ENUM_OF = {"get_type_string": "rknn_tensor_type", "get_qnt_type_string": "rknn_tensor_qnt_type",
           "get_format_string": "rknn_tensor_format", "get_matmul_type_string": "rknn_matmul_type"}
TABLES = {"get_type_string": TYPE_NAMES, "get_qnt_type_string": QNT_NAMES,
          "get_format_string": FORMAT_NAMES, "get_matmul_type_string": MATMUL_NAMES}


def _source() -> str:
    lines = ['#include <stdio.h>', '#include "rknn_api.h"', '#include "rknn_matmul_api.h"',
             "int main(void)", "{"]
    for fn, table in TABLES.items():
        for member in table:
            lines.append(f'    printf("{fn} {member} %s\\n", {fn}({member}));')
        for v in RAW[fn]:
            lines.append(f'    printf("{fn} {v} %s\\n", {fn}(({ENUM_OF[fn]})({v})));')
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def _expected() -> list[str]:
    out = []
    for fn, table in TABLES.items():
        out += [f"{fn} {m} {name}" for m, name in table.items()]
        out += [f"{fn} {v} UNKNOW" for v in RAW[fn]]
    return out


def _run(exe) -> list[str]:
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_helpers_in_c(tmp_path):
    src = tmp_path / "helpers.c"
    src.write_text(_source())
    exe = compile_c([src], tmp_path / "helpers", flags=["-pedantic", "-Wswitch"])
    assert _run(exe) == _expected()


def test_helpers_in_cxx(tmp_path):
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    src = tmp_path / "helpers.cc"
    src.write_text(_source())
    exe = tmp_path / "helpers_cc"
    proc = subprocess.run([cxx, "-std=c++11", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}",
                           str(src), "-o", str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert _run(exe) == _expected()


def test_helpers_are_not_exported_symbols(tmp_path):
    """static inline: a program that never calls them has no reference to them, and two
    translation units including the headers link together without duplicate symbols."""
    a = tmp_path / "a.c"
    b = tmp_path / "b.c"
    a.write_text('#include "rknn_matmul_api.h"\nconst char *fa(void) '
                 '{ return get_type_string(RKNN_TENSOR_INT8); }\n')
    b.write_text('#include <stdio.h>\n#include "rknn_matmul_api.h"\nconst char *fa(void);\n'
                 'int main(void) { printf("%s %s\\n", fa(), '
                 'get_matmul_type_string(RKNN_INT8_MM_INT8_TO_INT32)); return 0; }\n')
    exe = compile_c([a, b], tmp_path / "ab")
    assert _run(exe) == ["INT8 RKNN_INT8_MM_INT8_TO_INT32"]
