import copy
import json

import pytest

from profiler_agent.protocol.result_schema import empty_result, empty_variant, validate_result


def minimal_result():
    result = empty_result()
    result["status"] = "passed"
    result["device"]["kind"] = "cpu"
    return result


def test_empty_result_has_every_key_null_and_validates_once_status_and_device_are_set():
    result = empty_result()
    assert result["schema"] == 1
    assert result["timing"]["candidate"]["median_ms"] is None
    assert result["telemetry"]["power_w"] == {"mean": None, "max": None}
    assert result["variants"] == {} and result["self_test"] is None and result["ncu"] is None
    with pytest.raises(ValueError, match="status"):
        validate_result(result)
    validate_result(minimal_result())
    validate_result(json.loads(json.dumps(minimal_result())))


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: r.pop("metrics"), "missing keys"),
        (lambda r: r["timing"]["candidate"].update(p99_ms=1.0), "unknown keys"),
        (lambda r: r["timing"]["candidate"].update(median_ms="fast"), "median_ms"),
        (lambda r: r["correctness"].update(trials=True), "trials"),
        (lambda r: r.update(status="accepted"), "status"),
        (lambda r: r.update(flags=["looks_fine"]), "flags"),
        (lambda r: r.update(schema=2), "schema"),
        (lambda r: r["device"].update(kind="tpu"), "device.kind"),
        (lambda r: r.update(self_test={"exit_code": 0}), "self_test"),
        (lambda r: r["variants"].update(cudacode_ori={"status": "passed"}), "variants.cudacode_ori"),
        (lambda r: r.update(inputs={"dtype": "float32"}), "inputs"),
        (lambda r: r.update(inputs=[{"dtype": "float32", "shape": [-1]}]), "inputs"),
        (lambda r: r.update(inputs=[{"dtype": "float32", "shape": [2], "data": [1, 2]}]), "inputs"),
    ],
)
def test_validate_result_rejects_malformed_results(mutate, message):
    result = copy.deepcopy(minimal_result())
    mutate(result)
    with pytest.raises(ValueError, match=message):
        validate_result(result)


def test_a_well_formed_variant_and_self_test_validate():
    result = minimal_result()
    variant = empty_variant()
    variant["status"] = "wrong_answer"
    result["variants"]["cudacode_ori"] = variant
    result["self_test"] = {"exit_code": 0, "output": "ok"}
    validate_result(result)


def test_conform_keeps_only_well_typed_fields_of_an_untrusted_report():
    from profiler_agent.protocol.result_schema import CORRECTNESS_SHAPE, TIMING_STATS_SHAPE, conform

    reported = {"passed": True, "trials": "x", "max_abs_err": True, "atol": 1e-4, "unknown": 5}
    kept = conform(reported, CORRECTNESS_SHAPE)
    assert set(kept) == set(CORRECTNESS_SHAPE)
    assert kept["passed"] is True and kept["atol"] == 1e-4
    assert kept["trials"] is None and kept["max_abs_err"] is None  # wrong types become null
    assert kept["rtol"] is None  # missing becomes null
    assert conform("not a dict", TIMING_STATS_SHAPE) == {key: None for key in TIMING_STATS_SHAPE}
    assert conform({"median_ms": 1, "runs": 3.5}, TIMING_STATS_SHAPE)["runs"] is None


def test_inputs_are_kept_as_dtype_and_shape_and_anything_else_is_dropped():
    from profiler_agent.protocol.result_schema import conform_inputs

    result = minimal_result()
    result["inputs"] = [{"dtype": "float16", "shape": [8, 16]}, {"dtype": "int", "shape": []}]
    validate_result(result)
    assert conform_inputs(result["inputs"]) == result["inputs"]
    assert conform_inputs([{"dtype": "float32", "shape": [True]}]) is None
    assert conform_inputs("float32") is None
    assert len(conform_inputs([{"dtype": "float32", "shape": [1]}] * 100)) == 64
