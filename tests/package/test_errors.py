"""The one error table: every vendor status code reaches Python as its class."""

from __future__ import annotations

import json
import pickle

import pytest

from helpers import DATA
from rknnx import errors
from rknnx.errors import RKNNError, from_code

FACTS = json.loads((DATA / "rknn_api_v2.json").read_text())
CODES = {name: value for name, value in FACTS["constants"].items()
         if name.startswith("RKNN_ERR_") or name == "RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE"}

BUILTIN = {
    "RKNN_ERR_TIMEOUT": TimeoutError,
    "RKNN_ERR_DEVICE_UNAVAILABLE": OSError,
    "RKNN_ERR_MALLOC_FAIL": MemoryError,
    "RKNN_ERR_PARAM_INVALID": ValueError,
    "RKNN_ERR_MODEL_INVALID": ValueError,
    "RKNN_ERR_CTX_INVALID": ValueError,
    "RKNN_ERR_INPUT_INVALID": ValueError,
    "RKNN_ERR_OUTPUT_INVALID": ValueError,
    "RKNN_ERR_DEVICE_UNMATCH": OSError,
}


def test_table_covers_every_status_code_of_the_facts():
    assert sorted(CODES.values()) == list(range(-14, 0))
    assert set(errors.ERROR_TABLE) == set(CODES.values())
    for name, code in CODES.items():
        assert errors.STATUS_NAMES[code] == name
    # one class per code, all distinct, all RKNNError
    classes = list(errors.ERROR_TABLE.values())
    assert len(set(classes)) == len(classes)
    assert all(issubclass(c, RKNNError) and c is not RKNNError for c in classes)


@pytest.mark.parametrize("name", sorted(CODES))
def test_from_code_builds_the_class_with_code_name_func(name):
    code = CODES[name]
    exc = from_code(code, "rknn_run")
    assert type(exc) is errors.ERROR_TABLE[code]
    assert exc.code == code and exc.name == name and exc.func == "rknn_run"
    assert str(exc) == f"rknn_run failed: {name} ({code})"
    if name in BUILTIN:
        assert isinstance(exc, BUILTIN[name])
    with pytest.raises(errors.ERROR_TABLE[code]) as info:
        raise exc
    assert info.value.code == code


@pytest.mark.parametrize("code", sorted(set(range(-14, 0))))
def test_errors_are_picklable(code):
    exc = from_code(code, "rknn_query", detail="index 3 of 2")
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert (back.code, back.func, back.name, str(back)) == (exc.code, exc.func, exc.name, str(exc))
    assert str(back).endswith("index 3 of 2")


def test_unknown_codes_fall_back_to_rknnerror():
    exc = from_code(-99, "rknn_init")
    assert type(exc) is RKNNError
    assert exc.code == -99 and exc.name == "RKNN_ERR_UNKNOWN"
    assert "RKNN_ERR_UNKNOWN (-99)" in str(exc)


def test_success_is_not_an_error():
    with pytest.raises(ValueError, match="not an error code"):
        from_code(0, "rknn_run")
    with pytest.raises(ValueError):
        from_code(3)


def test_rknnx_own_errors():
    for cls, builtin in [(errors.FlowError, RuntimeError),
                         (errors.NotSupportedError, NotImplementedError),
                         (errors.RuntimeNotFoundError, OSError)]:
        exc = cls("why", None, "rknn_run")
        assert isinstance(exc, RKNNError) and isinstance(exc, builtin)
        assert exc.code is None and exc.name is None and exc.func == "rknn_run"
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is cls and str(back) == "why"


def test_model_file_error_names_its_check():
    exc = errors.ModelFileError("the header says the payload has 999 bytes", check="payload_length",
                                offset=16, status="format")
    assert isinstance(exc, RKNNError) and isinstance(exc, ValueError)
    assert exc.code is None and exc.name is None and exc.func is None
    assert (exc.check, exc.offset, exc.status, exc.path) == ("payload_length", 16, "format", None)
    assert str(exc) == "the header says the payload has 999 bytes [check: payload_length]"
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is errors.ModelFileError and back.check == "payload_length"
    assert "ModelFileError" in errors.__all__ and errors.ModelFileError not in \
        errors.ERROR_TABLE.values()
