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
    """A new bundle each call (its readme is numbered): the site refuses a bundle submitted to the same issue
    before, and most tests submit several."""
    return {"torchcode.py": TORCHCODE, "cudacode.py": CUDACODE,
            "readme.md": f"# ReLU\n中文说明\n\nBundle {next(_bundle_numbers)}.\n".encode()}


def zip_of(files, folder=""):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(folder + name, data)
    return buffer.getvalue()
