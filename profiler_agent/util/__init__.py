"""Helpers every layer may use: tensors, telling submission failures from the harness's, human sizes."""
