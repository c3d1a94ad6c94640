"""Abuse detection: the three flags of seed 001's rules, fingerprints, and rate limits."""
import pytest

from submissions import fingerprints
from submissions.models import AuditEntry, FlagKind, Submission
from submissions.services import reviewing, submitting
from tests.site.bundle_files import TORCHCODE, valid_files
from tests.site.judging_helpers import passed_result, report_all, submit

ALICE_CUDA = b'''import torch
from torch.utils.cpp_extension import load_inline

source = """
__global__ void relu_kernel(const float* input, float* output, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {
        output[idx] = input[idx] > 0.0f ? input[idx] : 0.0f;  // keep positives
    }
}
torch::Tensor relu_cuda(torch::Tensor input) {
    auto output = torch::empty_like(input);
    int size = input.numel();
    relu_kernel<<<(size + 255) / 256, 256>>>(input.data_ptr<float>(), output.data_ptr<float>(), size);
    return output;
}
"""
relu = load_inline(name="relu", cpp_sources="torch::Tensor relu_cuda(torch::Tensor input);",
                   cuda_sources=source, functions=["relu_cuda"])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return relu.relu_cuda(x)
'''
# Bob's copy: renamed identifiers, other comments and spacing, a different block size.
BOB_CUDA = b'''import torch
from torch.utils.cpp_extension import load_inline

# my own kernel!
code = """
__global__ void my_relu(const float* a,   float* b, int n)
{
    int i = blockIdx.x*blockDim.x + threadIdx.x;
    if (i < n) { b[i] = a[i] > 0.0f ? a[i] : 0.0f; }
}
torch::Tensor run_relu(torch::Tensor a) {
    auto b = torch::empty_like(a);
    int n = a.numel();
    my_relu<<<(n + 511) / 512, 512>>>(a.data_ptr<float>(), b.data_ptr<float>(), n);
    return b;
}
"""
ext = load_inline(name="myrelu", cpp_sources="torch::Tensor run_relu(torch::Tensor a);",
                  cuda_sources=code, functions=["run_relu"])


class ModelNew(torch.nn.Module):
    def forward(self, inp):
        return ext.run_relu(inp)
'''
OTHER_CUDA = b'''import torch
import triton
import triton.language as tl


@triton.jit
def softmax_rows(out_ptr, in_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    values = tl.load(in_ptr + row * stride + offsets, mask=offsets < cols, other=-float("inf"))
    values = values - tl.max(values, axis=0)
    numerator = tl.exp(values)
    tl.store(out_ptr + row * stride + offsets, numerator / tl.sum(numerator, axis=0), mask=offsets < cols)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        softmax_rows[(x.shape[0],)](y, x, x.stride(0), x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
'''
# The same operator as TORCHCODE, reformatted, renamed and commented.
RENAMED_TORCHCODE = b'''"""My ReLU sample."""
import torch as T
import torch.nn as layers


class Reference(layers.Module):
    # the operator
    def forward(self, tensor):
        return T.relu(tensor)


def get_inputs():
    return [T.randn(16,
                    16)]


def get_init_inputs():
    return []
'''


def test_reference_fingerprint_ignores_formatting_names_and_comments_but_not_the_operator():
    same = fingerprints.reference_fingerprint(TORCHCODE.decode())
    assert fingerprints.reference_fingerprint(RENAMED_TORCHCODE.decode()) == same
    assert fingerprints.reference_fingerprint(TORCHCODE.decode().replace("relu", "gelu")) != same
    assert fingerprints.reference_fingerprint(TORCHCODE.decode().replace("16, 16", "64, 64")) != same


def test_candidate_similarity_sees_through_renames_and_tells_different_kernels_apart():
    alice, bob, other = (fingerprints.candidate_shingles(c.decode()) for c in (ALICE_CUDA, BOB_CUDA, OTHER_CUDA))
    assert fingerprints.similarity_percent(alice, bob) >= 80
    assert fingerprints.similarity_percent(alice, other) < 30


def test_same_operator_in_another_issue_is_flagged_with_a_link(season, alice, django_capture_on_commit_callbacks):
    first = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                   valid_files())
    again_issue = submitting.open_issue(season, alice, title="ReLU again")
    again = submit(django_capture_on_commit_callbacks, alice, again_issue,
                   dict(valid_files(), **{"torchcode.py": RENAMED_TORCHCODE}))
    (flag,) = again.abuse_flags.all()
    assert flag.kind == FlagKind.SAME_OPERATOR and flag.other_submission == first
    assert f"#{first.pk}" in flag.detail and first.issue.code in flag.detail
    assert not first.abuse_flags.exists()
    # A new version in the same issue is the normal way to improve: no flag.
    version = submit(django_capture_on_commit_callbacks, alice, again_issue,
                     dict(valid_files(), **{"torchcode.py": RENAMED_TORCHCODE, "readme.md": b"v2"}))
    assert not version.abuse_flags.filter(kind=FlagKind.SAME_OPERATOR, other_submission=again).exists()
    assert AuditEntry.objects.filter(action="flag.raised", object_id=str(again.pk)).exists()


def test_near_copy_of_another_contestants_cuda_code_is_flagged_with_its_similarity(
        season, alice, bob, django_capture_on_commit_callbacks):
    original = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                      {"torchcode.py": TORCHCODE, "cudacode.py": ALICE_CUDA})
    gelu_reference = TORCHCODE.replace(b"relu", b"gelu")
    copy = submit(django_capture_on_commit_callbacks, bob, submitting.open_issue(season, bob, title="GELU"),
                  {"torchcode.py": gelu_reference, "cudacode.py": BOB_CUDA})
    own = submit(django_capture_on_commit_callbacks, bob, submitting.open_issue(season, bob, title="Softmax"),
                 {"torchcode.py": TORCHCODE.replace(b"relu", b"softmax"), "cudacode.py": OTHER_CUDA})
    (flag,) = copy.abuse_flags.all()
    assert flag.kind == FlagKind.NEAR_COPY and flag.other_submission == original
    assert flag.similarity >= 80 and f"{flag.similarity:.0f}% similar to #{original.pk}" in flag.detail
    assert not own.abuse_flags.exists()


def test_resubmission_without_a_better_speedup_than_the_accepted_one_is_flagged(
        season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    accepted = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    report_all(accepted, agent, passed_result(speedup=2.0))
    reviewing.review_submission(accepted, organizer.user, "accepted", reason="fine")

    slower = submit(django_capture_on_commit_callbacks, alice, issue, dict(valid_files(), **{"readme.md": b"v2"}))
    assert not slower.abuse_flags.exists()  # judged only once every run is done
    report_all(slower, agent, passed_result(speedup=1.9))
    (flag,) = slower.abuse_flags.all()
    assert flag.kind == FlagKind.NO_IMPROVEMENT and flag.other_submission == accepted
    assert "cpu: 1.90× vs 2.00×" in flag.detail

    faster = submit(django_capture_on_commit_callbacks, alice, issue, dict(valid_files(), **{"readme.md": b"v3"}))
    report_all(faster, agent, passed_result(speedup=2.5))
    assert not faster.abuse_flags.exists()


def test_rate_limits_per_hour_and_per_season_override(season, alice, settings, django_capture_on_commit_callbacks):
    settings.SUBMISSIONS_PER_HOUR = 2
    issue = submitting.open_issue(season, alice, title="ReLU")
    for n in range(2):
        submit(django_capture_on_commit_callbacks, alice, issue, dict(valid_files(), **{"readme.md": str(n).encode()}))
    with pytest.raises(submitting.SubmissionRefused, match="2 submissions in season S1 in the last hour.*try again after"):
        submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    assert Submission.objects.count() == 2
    season.max_submissions_per_hour = 5
    season.max_submissions_per_day = 3
    season.save()
    issue.season.refresh_from_db()
    submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    with pytest.raises(submitting.SubmissionRefused, match="in the last day"):
        submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
