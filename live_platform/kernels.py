"""Bundles a test or bench submits more than once: the site refuses a kernel its contestant submitted
before in the season (submissions/kernel_identity.py: a readme or whitespace is no change), so each copy
gets a comment of its own in its candidate file. A Python comment leaves the build's sources as they were:
the copies share one build."""
import uuid

CANDIDATE_NAMES = ("cudacode.py", "cudacode_opt.py", "example_cudacode.py")


def distinct(files, tag=None):
    """(name, bytes) pairs with the first candidate file's code followed by `# submission <tag>`."""
    tag = tag if tag is not None else uuid.uuid4().hex
    names = [name for name, _ in files]
    candidate = next((name for name in CANDIDATE_NAMES if name in names), None)
    if candidate is None:
        raise ValueError(f"no candidate file among {names}")
    return [(name, data + f"\n# submission {tag}\n".encode() if name == candidate else data) for name, data in files]
