"""The correctness trials: the calls both models get, running them in the judged process, and the
outputs handed to the trusted verifier."""
