"""Submission bundles: finding their files, unpacking zips safely, and the build cache of their
extensions."""
