"""Correctness: trials in the judged process, and the trusted verifier that compares their outputs
with the reference outside it."""
