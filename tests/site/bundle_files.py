"""Small valid bundle files for site tests (the site never runs them)."""
import io
import itertools
import zipfile

TORCHCODE = b"""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
"""

CUDACODE = b"""import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp(min=0)
"""


_bundle_numbers = itertools.count(1)


def valid_files():
    """A new kernel each call (a numbered comment in its code: a readme is no change of the kernel): the
    site refuses a kernel its contestant submitted before in the season (kernel_identity), and most tests
    submit several."""
    number = next(_bundle_numbers)
    return {"torchcode.py": TORCHCODE, "cudacode.py": CUDACODE + f"# kernel {number}\n".encode(),
            "readme.md": f"# ReLU\n中文说明\n\nBundle {number}.\n".encode()}


def zip_of(files, folder=""):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(folder + name, data)
    return buffer.getvalue()
