"""The judge: the parent that runs each judged process and assembles the result, the judged child,
the pipe between them, loading bundles, and deciding verdicts."""
